// The lines megatron-train prints, character for character as Megatron-LM's training.py
// prints them, so tools that parse Megatron logs keep working: the iteration line every
// --log-interval, the validation block and the checkpoint message.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mt/api.h"

namespace mt::train {

struct IterationLog {
    std::string timestamp;  // "%Y-%m-%d %H:%M:%S" (see now_timestamp())
    int64_t iteration = 0, train_iters = 0;
    int64_t consumed_samples = 0, skipped_samples = 0;
    double elapsed_ms_per_iteration = 0;
    std::optional<double> throughput;  // TFLOP/s per GPU (--log-throughput)
    double learning_rate = 0;
    std::optional<double> decoupled_learning_rate;  // --decoupled-lr
    int64_t global_batch_size = 0;
    std::vector<std::pair<std::string, double>> losses;  // e.g. {"lm loss", 6.51}; printed if > 0
    double loss_scale = 1.0;
    std::optional<double> grad_norm, params_norm;
    std::optional<int64_t> num_zeros;
    // DeepSpeed's seqlen curriculum: the step's sequence length (Megatron-DeepSpeed's field).
    std::optional<int64_t> curriculum_seqlen;
    int64_t skipped_iterations = 0, nan_iterations = 0;
};

// " [2025-07-25 10:00:00] iteration      100/   10000 | consumed samples: ... |"
MT_API std::string format_iteration_line(const IterationLog& log);

// The evaluation block: a rule of '-', the line, the rule again (one string with newlines).
// `prefix` is "iteration 100" during training, "iteration 100 on validation set" or
// "iteration 100 on test set" after it (Megatron says "validation loss" for both sets).
// Each loss gets "<name> value: ... | <name> PPL: ... |", PPL = exp(min(20, loss)).
MT_API std::string format_evaluation_block(
    const std::string& prefix, const std::vector<std::pair<std::string, double>>& losses);

// "  successfully saved checkpoint from iteration     100 to DIR [ t 1/1, p 1/1 ]"
MT_API std::string format_saved_checkpoint(int64_t iteration, const std::string& dir, int tp_rank,
                                           int tp, int pp_rank, int pp);

// The local time as training.py stamps its lines.
MT_API std::string now_timestamp();

}  // namespace mt::train
