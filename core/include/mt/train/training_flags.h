// megatron-train's flags with Megatron-LM's names and defaults (megatron/training/arguments.py),
// grouped as Megatron groups them; the model family adds its own model flags.
#pragma once

#include <boost/program_options.hpp>
#include <optional>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/model.h"
#include "mt/optim/lr_schedule.h"
#include "mt/optim/optimizer.h"
#include "mt/parallel/grad_buffer.h"
#include "mt/parallel/parallel_state.h"
#include "mt/train/checkpointing.h"
#include "mt/train/deepspeed_config.h"
#include "mt/train/trainer.h"

namespace mt::train {

namespace po = boost::program_options;

struct TrainingFlags {
    std::string model = "gpt";
    int64_t micro_batch_size = 0;
    std::optional<int64_t> global_batch_size;
    optim::LrScheduleFlags schedule;
    double weight_decay = 0.01;
    std::string optimizer = "adam";
    optim::OptimizerConfig optimizer_config;
    double clip_grad = 1.0;
    int64_t seed = 1234;
    // --bf16 / --fp16: Megatron's params_dtype (weights and activations); grads, optimizer
    // state and master weights stay f32.
    DType params_dtype = DType::f32;
    optim::GradScalerConfig grad_scaler;  // --loss-scale, --initial-loss-scale, ...
    int64_t log_interval = 100, eval_interval = 1000, eval_iters = 100;
    std::optional<int64_t> exit_interval;
    std::optional<double> exit_duration_in_mins;
    bool exit_signal_handler = false;
    bool log_throughput = false;
    bool log_params_norm = false, log_num_zeros_in_grad = false;
    bool calculate_per_token_loss = false;  // --calculate-per-token-loss
    // --dataloader-type single|cyclic and --no-data-sharding (mt/data/pretraining_loader.h).
    std::string dataloader_type = "single";
    bool data_sharding = true;
    bool check_for_nan = true;              // off: --no-check-for-nan-in-loss-and-grad
    train::RerunConfig rerun;               // --rerun-mode, --error-injection-rate/-type
    bool check_for_spiky_loss = false, check_for_large_grads = false;
    std::vector<int64_t> iterations_to_skip;  // --iterations-to-skip, from 1
    // --grad-reduce-in-bf16: with --bf16, grads accumulate and are reduced in bf16 (Megatron
    // sets accumulate_allreduce_grads_in_fp32 false); ignored otherwise, as Megatron does.
    bool grad_reduce_in_bf16 = false;
    // --fp8-param-gather: FP8 layers' weights quantized from their f32 main params after each
    // step (TrainerOptions::fp8_param_gather).
    bool fp8_param_gather = false;
    // Megatron-DeepSpeed's --deepspeed with --deepspeed_config: the configuration's precision,
    // clipping, loss scaling and ZeRO stage, already applied to these flags (settle_batch_sizes
    // checks its batch sizes).
    std::optional<train::DeepSpeedConfig> deepspeed;
    std::string deepspeed_config_path;
    std::optional<int64_t> train_tokens;       // Megatron-DeepSpeed's --train-tokens
    std::string kill_switch_file;              // Megatron-DeepSpeed's --kill-switch-file
    int64_t tokens_per_sample = 0;             // the sequence length (settle_batch_sizes)
    bool exit_on_missing_checkpoint = false;   // --exit-on-missing-checkpoint
    bool skip_train = false;                   // --skip-train: the final evaluations only
    std::optional<train::BatchRampup> rampup;  // --rampup-batch-size
    // --eval-micro-batch-size, --eval-global-batch-size (core_v0.19): evaluation's own batches.
    std::optional<int64_t> eval_micro_batch_size, eval_global_batch_size;
    std::optional<std::string> step_batch_size_schedule;  // --step-batch-size-schedule, as given
    std::vector<train::BatchStep> batch_steps;            // ... read by settle_batch_sizes
    // --override-opt_param-scheduler / --use-checkpoint-opt_param-scheduler
    train::ScheduleSettings schedule_settings = train::ScheduleSettings::must_match;
    std::optional<double> decoupled_lr, decoupled_min_lr;  // --decoupled-lr, --decoupled-min-lr
    bool log_memory_to_tensorboard = false;
    bool moe_per_layer_logging = false;  // --moe-per-layer-logging
    bool log_rank_stats = false;         // ours: per-rank communication and optimizer memory
    std::string tensorboard_dir;
    std::string schedule_trace_dir;  // --schedule-trace-dir (ours)
    int timing_log_level = 0;        // --timing-log-level
    std::string timing_log_option = "minmax";
    // Checkpoints.
    // Megatron's args.add_position_embedding: False only with --no-position-embedding (which
    // rope ignores); check_checkpoint_args compares it on load.
    bool add_position_embedding = true;
    std::optional<std::string> save, load;
    std::optional<int64_t> save_interval;
    // --save-retain-interval (core_v0.19): each save deletes the checkpoint saved before it
    // unless that one's iteration is a multiple of this.
    std::optional<int64_t> save_retain_interval;
    bool verify_integrity = false;  // --verify-integrity: integrity.json written and checked
    // --dist-ckpt-optim-fully-reshardable (core_v0.19): torch_dist keeps the distributed
    // optimizer's state per parameter in model shape (fully_reshardable); otherwise as
    // mt/train/checkpoint_io.h saved_distributed_layout says.
    bool dist_ckpt_optim_fully_reshardable = false;
    // The first flag given that only core_v0.19 has (the script is core_v0.19's), or empty.
    std::string core_v0_19_flag;
    std::string ckpt_format = "torch_dist";  // what --save writes (--load detects its own)
    // --ckpt-convert-format / --ckpt-convert-save: after loading, save in that format under
    // <convert_save>/<format> and stop (Megatron's checkpoint conversion).
    std::optional<std::string> ckpt_convert_format, ckpt_convert_save;
    bool no_save_optim = false, no_save_rng = false, no_load_optim = false, no_load_rng = false;
    bool finetune = false;
    // Data.
    std::vector<std::string> data_path, train_data_path, valid_data_path, test_data_path;
    bool mock_data = false;  // --mock-data: the family's synthetic data (MockGPTDataset)
    std::optional<std::string> split, data_cache_path;
    ModelArgs data_args;  // the family's own data flags (data_flags()), as given
    // Parallelism (ranks come from mpirun/srun; the sizes split them as Megatron does).
    parallel::ParallelConfig parallel;  // its virtual_stages: parallel_config()'s
    // --num-layers-per-virtual-pipeline-stage, --num-virtual-stages-per-pipeline-rank (or older
    // Megatron's --virtual-pipeline-model-parallel-size); -1: unset.
    int64_t layers_per_virtual_stage = -1, virtual_stages_per_rank = -1;
    // --pipeline-model-parallel-layout (core_v0.19): the segments give the chunks' layers.
    std::optional<std::string> pipeline_layout;
    bool sequence_parallel = false;
    parallel::DataParallelConfig data_parallel;
    std::string distributed_backend = "nccl";  // the communicator follows the device
};

// The ranks' layout: the flags' parallel sizes with the virtual pipeline stages resolved
// against the model's --num-layers (Megatron's validate_args).
MT_API parallel::ParallelConfig parallel_config(const TrainingFlags& flags,
                                                const ModelArgs& model_args);

// The Megatron entry point the flags are parsed for.
enum class EntryPoint {
    // pretrain_gpt.py (megatron-train): every group; --lr and --micro-batch-size are required.
    pretraining,
    // tasks/main.py (megatron-eval), whose finetuning sets the iterations from --epochs and
    // reads its own --train-data / --valid-data: no --train-iters, --train-samples,
    // --skip-train, pretraining data flags, --ckpt-convert-* or --load (the tool defines it);
    // --lr is optional (finetuning checks it) and --micro-batch-size defaults to 1.
    tasks,
};

// Megatron-DeepSpeed's reading of the model flags under --deepspeed: --checkpoint-activations
// recomputes every layer; --num-experts (also a list of them without --deepspeed) means
// DeepSpeed's MoE layers (one expert: dense), marked by --expert-interval.
MT_API void apply_deepspeed_model_args(const TrainingFlags& f, ModelArgs& model_args);

// The option groups, writing into `flags` (optional values are read by finish()).
MT_API std::vector<po::options_description> training_flag_groups(
    TrainingFlags& flags, EntryPoint entry = EntryPoint::pretraining);
// Fills the optional values, derives defaults (start/end weight decay, a global batch of one
// micro-batch until settle_batch_sizes knows the ranks) and rejects what megatron-train does not
// support yet; for EntryPoint::tasks the iterations and the data are left to the task.
MT_API void finish(const po::variables_map& vm, TrainingFlags& flags,
                   EntryPoint entry = EntryPoint::pretraining);
// Pretraining's batch sizes once the ranks and the model are known (Megatron's validate_args
// and update_train_iters): the global batch defaults to --micro-batch-size x the data-parallel
// size, --step-batch-size-schedule's token thresholds become samples, and --train-samples
// becomes iterations.
MT_API void settle_batch_sizes(TrainingFlags& flags, int64_t data_parallel_size,
                               int64_t seq_length);

// The learning-rate schedule, the optimizer and the loop's options the flags describe.
MT_API optim::LrScheduleConfig schedule_config(const TrainingFlags& flags);
MT_API TrainerOptions trainer_options(const TrainingFlags& flags);

}  // namespace mt::train
