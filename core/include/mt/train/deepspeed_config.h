// Megatron-DeepSpeed's `--deepspeed --deepspeed_config ds_config.json`: the DeepSpeed
// configuration read for what it changes in a Megatron-DeepSpeed training run. DeepSpeed's
// engine then owns mixed precision (its fp16 loss scaler: Megatron's dynamic scaler from
// 2^initial_scale_power), gradient clipping (its gradient_clipping; Megatron's --clip-grad is
// not read) and ZeRO (stages 1 and 2 shard the optimizer state and gradients over the
// data-parallel ranks: megatron-train's distributed optimizer, the same updates), while the
// batch sizes stay Megatron's (its loop tells the engine the global batch every iteration), and
// so do the optimizer and schedule (Megatron-DeepSpeed gives the engine its own). The legacy
// curriculum by sequence length shortens the training samples. Keys that only tune DeepSpeed's
// communication, memory or logging change nothing here; the rest is refused naming the key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "mt/api.h"
#include "mt/optim/grad_scaler.h"
#include "mt/train/curriculum_schedule.h"

namespace mt::train {

struct DeepSpeedConfig {
    std::optional<int64_t> train_batch_size, train_micro_batch_size_per_gpu,
        gradient_accumulation_steps;
    double gradient_clipping = 0.0;  // 0: none
    bool fp16 = false, bf16 = false;
    // "fp16": DeepSpeed's defaults (dynamic from 2^16, window 1000, hysteresis 2, floor 1).
    optim::GradScalerConfig fp16_scaler{.initial_scale = 65536.0};
    int zero_stage = 0;
    // "curriculum_learning" when enabled (DeepSpeed's legacy curriculum, by sequence length).
    std::optional<CurriculumConfig> curriculum;
};

// Reads and checks `path` (mt::Error naming the file and the key for what is malformed or not
// supported).
MT_API DeepSpeedConfig read_deepspeed_config(const std::string& path);

// DeepSpeed's batch check at initialisation, where all three sizes are given: the global batch
// is the micro-batch x the accumulation steps x the data-parallel ranks.
MT_API void check_deepspeed_batch(const DeepSpeedConfig& c, const std::string& path,
                                  int64_t data_parallel_size);

}  // namespace mt::train
