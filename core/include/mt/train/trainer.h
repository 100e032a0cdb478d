// The training loop of megatron-train on one rank: micro-batches in Megatron's order (this
// data-parallel rank's share of each global batch), gradient accumulation over
// --global-batch-size, finalize_grads (data-parallel reduction, sequence-parallel norms), the
// token-weighted loss over the whole global batch, global-norm clipping, the optimizer and
// learning-rate schedule stepped as Megatron steps them, periodic evaluation, Megatron's log
// lines and TensorBoard scalars, and the --exit-* conditions.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/data/pretraining_loader.h"
#include "mt/data/sample_dataset.h"
#include "mt/model.h"
#include "mt/optim/grad_scaler.h"
#include "mt/optim/lr_schedule.h"
#include "mt/optim/optimizer.h"
#include "mt/train/curriculum_schedule.h"
#include "mt/train/rerun_state_machine.h"
#include "mt/train/timers.h"

namespace mt::io {
class TensorBoardWriter;
}
namespace mt {
class Communicator;
class ParallelStrategy;
}  // namespace mt
namespace mt::parallel {
class GradBuffer;
class ParallelState;
}  // namespace mt::parallel

namespace mt::train {

class ScheduleTrace;

// Megatron's --rampup-batch-size START INCREMENT SAMPLES: the global batch grows from START by
// INCREMENT at even steps over the first SAMPLES consumed samples (RampupBatchsizeNumMicroBatches).
struct BatchRampup {
    int64_t start = 0, increment = 0, samples = 0;
};

// One step of core_v0.19's --step-batch-size-schedule (StepBatchsizeNumMicroBatchesCalculator):
// from `from_samples` consumed samples on, the global batch is `global_batch_size`.
struct BatchStep {
    int64_t from_samples = 0, global_batch_size = 0;
};

// Megatron's reading of --step-batch-size-schedule "THRESHOLD:BS THRESHOLD:BS ..." (commas may
// separate too; K, M, B, T multiply by 1e3 ... 1e12): the thresholds count tokens and become
// samples by floor division by `seq_length`; the first must be 0, the rest increasing, every
// batch positive. A malformed schedule is an mt::Error quoting the entry.
MT_API std::vector<BatchStep> parse_step_batch_size_schedule(const std::string& text,
                                                             int64_t seq_length);

struct TrainerOptions {
    int64_t micro_batch_size = 1;
    int64_t global_batch_size = 1;       // a multiple of micro_batch_size × data-parallel size
    std::optional<BatchRampup> rampup;   // --rampup-batch-size
    std::vector<BatchStep> batch_steps;  // --step-batch-size-schedule (empty: none)
    // core_v0.19's --eval-micro-batch-size / --eval-global-batch-size (0: the training's).
    int64_t eval_micro_batch_size = 0, eval_global_batch_size = 0;
    data::LoaderOrder loader_order;  // --dataloader-type, --no-data-sharding
    int64_t train_iters = 0;
    // Megatron-DeepSpeed's --train-tokens: training also stops once this many tokens are
    // consumed.
    std::optional<int64_t> train_tokens;
    // Tokens per training sample (the sequence length), counted for token-based learning-rate
    // schedules and --train-tokens.
    int64_t tokens_per_sample = 0;
    // DeepSpeed's legacy seqlen curriculum (ds_config "curriculum_learning"): each step trains
    // on the first positions of its samples (the GPT fields tokens, labels, loss_mask,
    // position_ids), as many as the schedule gives, and counts that many tokens per sample.
    std::optional<CurriculumConfig> seqlen_curriculum;
    // DeepSpeed's gradient norm without ZeRO (runtime/utils.py clip_grad_norm_): each rank's norm
    // of its own gradients (summed over its model-parallel group), averaged over the
    // data-parallel ranks. It differs from the norm of all gradients where ranks hold different
    // experts (expert parallelism), and is used only there.
    bool deepspeed_grad_norm = false;
    // Megatron-DeepSpeed's --kill-switch-file: once it exists (on any rank), training saves (as
    // for SIGTERM) and stops after the iteration.
    std::string kill_switch_file;
    int64_t log_interval = 100;
    int64_t eval_interval = 1000;
    int64_t eval_iters = 100;
    double clip_grad = 1.0;  // 0: no clipping
    // --calculate-per-token-loss: each micro-batch backpropagates its loss sum and the summed
    // gradients are divided by the global batch's loss tokens (else each micro-batch's mean,
    // divided by the micro-batches and data-parallel ranks).
    bool calculate_per_token_loss = false;
    // Megatron's check_for_nan_in_loss_and_grad: a NaN or Inf loss or gradient norm stops the
    // run; off (--no-check-for-nan-in-loss-and-grad), training goes on and the log counts them.
    bool check_for_nan = true;
    // --fp8-param-gather (with the distributed optimizer): the FP8 layers' weights quantized from
    // their f32 main params, gathered over the data-parallel ranks after each step
    // (sync_fp8_params).
    bool fp8_param_gather = false;
    // Megatron's re-run engine (--rerun-mode, --error-injection-*): each step's micro-batch
    // losses and local gradient norms are validated, a failed validation re-runs the step.
    RerunConfig rerun;
    bool check_for_spiky_loss = false;   // --check-for-spiky-loss: a loss 10x the usual (warns)
    bool check_for_large_grads = false;  // --check-for-large-grads: a grad norm 10x the usual
    // --iterations-to-skip (1-based, core_v0.19's reading): each listed iteration consumes its
    // global batch unseen, with no update, no learning-rate step and no log line.
    std::vector<int64_t> iterations_to_skip;
    // Megatron's main_grad buffer dtype: f32, or bf16 with --grad-reduce-in-bf16 (--bf16 only):
    // the grads are rounded to it after each micro-batch's backward and summed over ranks in it.
    DType main_grad_dtype = DType::f32;
    // --decoupled-lr / --decoupled-min-lr: the embedding and output weights' own schedule
    // peak and floor (the floor defaults to --min-lr).
    std::optional<double> decoupled_lr, decoupled_min_lr;
    bool log_throughput = false;             // --log-throughput: TFLOP/s in the iteration line
    bool log_params_norm = false;            // --log-params-norm: the parameters' L2 norm
    bool log_num_zeros_in_grad = false;      // --log-num-zeros-in-grad: zero gradient elements
    bool log_memory_to_tensorboard = false;  // --log-memory-to-tensorboard: mem-* scalars
    // --moe-per-layer-logging: each layer's auxiliary losses to TensorBoard as
    // "moe/<name>_layer_<i>" (Megatron's track_moe_metrics), beside their mean.
    bool moe_per_layer_logging = false;
    // --schedule-trace-dir: each rank writes the training schedule it ran (forwards, backwards,
    // stage exchanges) to <dir>/schedule_rank<R>.json for chrome://tracing when train() ends.
    std::string schedule_trace_dir;
    // --timing-log-level (0, 1, 2) and --timing-log-option (max, minmax, all): Megatron's timers,
    // printed after each logged iteration line.
    int timing_log_level = 0;
    std::string timing_log_option = "minmax";
    // fp16 (or --loss-scale): Megatron's loss scaling; none: the loss is not scaled.
    std::optional<optim::GradScalerConfig> grad_scaler;
    uint64_t seed = 1234;  // dropout stream
    std::optional<int64_t> exit_interval;
    std::optional<double> exit_duration_in_mins;
    std::optional<int64_t> save_interval;  // with a saver: save every this many iterations
    // Sequences the model sees per dataset sample (Megatron's sample_multiplier: RACE's 4
    // choices collapse into the batch): the log line's global batch size, the FLOPs and the
    // learning-rate schedule's steps count sequences, this many per sample.
    int64_t sample_multiplier = 1;
    // false: the log line's consumed samples stay 0, as in Megatron's finetuning loop
    // (tasks/finetune_utils.py), which never counts them.
    bool log_consumed_samples = true;
};

// The global batch size after `consumed` samples (Megatron's current_global_batch_size): the
// batch of the last step of batch_steps that `consumed` reached, or the ramp-up's step, or
// global_batch_size past it. mt::Error for a ramp-up Megatron refuses.
MT_API int64_t current_global_batch_size(const TrainerOptions& o, int64_t consumed);
// Megatron's update_train_iters: the iterations --train-samples takes, the ramp-up's batches
// first and then whole global batches (a partial last one is dropped); with batch steps, every
// iteration that starts below train_samples (the last one may pass it), as core_v0.19 counts.
MT_API int64_t train_iterations_for_samples(const TrainerOptions& o, int64_t train_samples);

// Loss names and values in the order the model reports them ({"lm loss", 6.5}, ...).
using NamedLosses = std::vector<std::pair<std::string, double>>;

// Why train() returned.
// result_validation: the re-run engine stops the run (Trainer::exit_code(): Megatron's 16 or 17).
enum class StopReason {
    finished,
    exit_interval,
    exit_duration,
    signal,
    kill_switch,
    result_validation
};

class MT_API Trainer {
  public:
    // `print` receives every line Megatron would print (iteration lines, evaluation blocks).
    Trainer(Model& model, optim::Optimizer& optimizer, optim::LrScheduler& scheduler,
            TrainerOptions options, std::function<void(const std::string&)> print);
    ~Trainer();

    void set_tensorboard(io::TensorBoardWriter* writer) { tensorboard_ = writer; }
    // Checked between iterations (--exit-signal-handler sets it from SIGTERM).
    void set_stop_flag(const std::atomic<bool>* stop) { stop_ = stop; }
    // Called where Megatron's checkpoint_and_decide_exit saves: every save_interval iterations,
    // and before leaving on a signal, --exit-duration-in-mins or --exit-interval.
    void set_saver(std::function<void()> save) { save_ = std::move(save); }
    // Called at the end of every iteration that does not stop training (after its log line,
    // evaluation and checkpoint): finetuning's end-of-epoch save and accuracy callback.
    void set_after_iteration(std::function<void()> after) { after_iteration_ = std::move(after); }

    // A parallel run: this rank's groups, and the buffer its gradients live in (data
    // parallelism; with the distributed optimizer `optimizer` updates this rank's shard of it
    // and the values are gathered after each step). Without it: one process. MoE experts stay
    // out of `grads`: with the distributed optimizer they have a buffer of their own,
    // `expert_grads`, sharded over the expert-data-parallel group (Megatron's expert-parallel
    // buffers); otherwise their grads are all-reduced over that group.
    void set_parallel(const parallel::ParallelState& state, parallel::GradBuffer* grads,
                      parallel::GradBuffer* expert_grads = nullptr);

    // Where a resumed run continues (from a checkpoint).
    void set_progress(int64_t iteration, int64_t consumed_train, int64_t consumed_valid,
                      int64_t skipped_train = 0) {
        iteration_ = iteration;
        consumed_train_ = consumed_train;
        consumed_valid_ = consumed_valid;
        skipped_train_ = skipped_train;
        consumed_tokens_ = consumed_train * options_.tokens_per_sample;
    }
    // Megatron-DeepSpeed's consumed_train_tokens, where a checkpoint has it (after
    // set_progress, which counts tokens_per_sample for each sample).
    void set_consumed_tokens(int64_t tokens) { consumed_tokens_ = tokens; }
    int64_t consumed_train_tokens() const { return consumed_tokens_; }
    // Whether this run counts tokens apart from samples (a curriculum or --train-tokens): its
    // checkpoints keep consumed_train_tokens, as Megatron-DeepSpeed's args do.
    bool counts_tokens() const {
        return options_.seqlen_curriculum.has_value() || options_.train_tokens.has_value();
    }
    // The dropout stream's position (the RNG state a checkpoint keeps).
    uint64_t dropout_seed() const;
    uint64_t dropout_offset() const;
    void set_dropout_rng(uint64_t seed, uint64_t offset);

    // Trains from iteration() to train_iters (or an exit condition), evaluating on `valid`
    // every eval_interval iterations when it is given.
    StopReason train(const data::SampleDataset& train_data, const data::SampleDataset* valid_data);
    // The model's named losses over eval_iters global batches of `dataset`, each averaged as
    // its term says, continuing from `consumed` (Megatron's validation iterator keeps its place
    // between evaluations).
    NamedLosses evaluate(const data::SampleDataset& dataset, int64_t& consumed);
    // Prints Megatron's evaluation block for `losses` ("iteration N" or "... on test set").
    void print_evaluation(const std::string& prefix, const NamedLosses& losses,
                          bool to_tensorboard);

    int64_t iteration() const { return iteration_; }
    int64_t consumed_train_samples() const { return consumed_train_; }
    // Of those, the samples of --iterations-to-skip's iterations (Megatron's
    // skipped_train_samples).
    int64_t skipped_train_samples() const { return skipped_train_; }
    int64_t consumed_valid_samples() const { return consumed_valid_; }
    // The loss of every iteration trained so far by this object, its terms summed (the lm
    // loss of a GPT), for tests and tools.
    const std::vector<double>& losses() const { return losses_; }
    // The grad norm of every iteration trained so far (before clipping; NaN where skipped).
    const std::vector<double>& grad_norms() const { return grad_norms_; }
    // The fp16 loss scaler (checkpoints save and restore it), or null.
    optim::GradScaler* grad_scaler() { return scaler_ ? &*scaler_ : nullptr; }
    // The embedding and output weights' learning rate now (--decoupled-lr), else none.
    std::optional<double> decoupled_lr() const;
    // The learning rate muP moves some parameters to (OptimizerConfig::mup_width_mult), or none.
    std::optional<double> mup_lr() const;
    const TrainerOptions& options() const { return options_; }
    // The process's exit code after StopReason::result_validation (0 otherwise).
    int exit_code() const { return exit_code_; }

  private:
    struct IterationResult {
        NamedLosses losses;                 // each term as the log line reports it
        double loss = 0;                    // the terms summed
        std::optional<double> grad_norm;    // none when skipped
        bool skipped = false;               // fp16: the gradients overflowed
        std::optional<int64_t> num_zeros;   // with log_num_zeros_in_grad
        std::optional<double> params_norm;  // with log_params_norm: after the update
        int64_t global_batch_size = 0;      // this iteration's (it ramps with --rampup-batch-size)
        // --moe-per-layer-logging: each MoE auxiliary loss per layer of the whole model.
        std::vector<std::pair<std::string, std::vector<double>>> moe_per_layer;
        // The re-run engine stops here (before the update): its checkpoint and exit code.
        std::optional<RerunStateMachine::Verdict> stop;
    };
    IterationResult train_step(const data::SampleDataset& data);
    // One pass of a step's forward and backward passes over its micro-batches, from
    // consumed_train_ (a re-run repeats it): the grads summed and reduced, the losses gathered.
    struct StepPass;  // (trainer.cpp)
    StepPass forward_backward_pass(const data::SampleDataset& data, int64_t micro_batches);
    // Whether the re-run engine checks for NaN and Inf (validate_results, unless
    // --no-check-for-nan-in-loss-and-grad).
    bool validates_nan() const;
    // Its NaN and Inf checks of `value` ("found NaN in <what>", ...).
    void validate_finite(double value, const std::string& what, double tolerance);
    // The re-run engine's checks of one micro-batch's loss sum (the last pipeline stage's).
    void validate_loss(double loss_sum);
    // Its checks of a gradient bucket's local L2 norm, before the data-parallel reduction.
    void validate_grads(int64_t bucket, double norm);
    bool validates_grads() const;
    // The fp16 loss scale (1 without a scaler).
    float loss_scale() const;
    // Divides the gradients by the loss scale and updates the scaler; false (skip the step)
    // when they overflowed.
    bool unscale_grads();
    // grads *= factor, for every parameter the optimizer updates.
    void scale_grads(float factor);
    // Megatron's finalize_model_grads: the data-parallel reduction, then the sequence-parallel
    // parameters' grads summed over the tensor-parallel group.
    void finalize_grads();
    // Megatron's _update_router_expert_bias (--moe-router-enable-expert-bias): the tokens each
    // router sent to each expert this iteration, summed over the tensor-, context- and
    // data-parallel ranks, move the routers' expert biases.
    void update_expert_bias();
    // The MoE routers' auxiliary losses of the iteration's `micro_batches`, as the log reports
    // them ("load_balancing_loss", "z_loss"); none for a dense model. With
    // --moe-per-layer-logging each layer's values go to r.moe_per_layer too.
    NamedLosses auxiliary_losses(int64_t micro_batches, IterationResult& r);
    // The global L2 norm of the gradients the optimizer updates, each element counted once.
    double grad_norm(std::vector<Tensor>& grads) const;
    // Megatron's count_zeros_fp32: zero elements of those gradients, each counted once.
    int64_t num_zeros_in_grad() const;
    // Megatron's calc_params_l2_norm: the model's parameters, each element counted once.
    double params_norm() const;
    // Whether the optimizer updates this rank's shard of the gradient buffer only.
    bool distributed_optimizer() const;
    // A per-rank statistic summed over the model-parallel group (and, with `data_parallel`,
    // the data-parallel one), in double.
    // Σ of `dense` over the model-parallel ranks (and the data-parallel ones when
    // `data_parallel`: the distributed optimizer's disjoint shards) plus Σ of `experts` over the
    // expert model-parallel ranks (each holds other experts).
    double model_parallel_sum(double dense, double experts, bool data_parallel) const;
    // The L2 norm of the tensors (each a parameter's value or grad, or a piece of one) over the
    // model: those other ranks count skipped, experts summed over their own ranks.
    double model_parallel_norm(const std::vector<std::pair<const nn::Parameter*, Tensor>>& tensors,
                               bool data_parallel) const;
    // TrainerOptions::deepspeed_grad_norm's: this rank's norm of the tensors (over its
    // model-parallel group), averaged over the data-parallel ranks.
    double deepspeed_rank_norm(
        const std::vector<std::pair<const nn::Parameter*, Tensor>>& tensors) const;
    // Sums the grads of the parameters `which` picks over `group`, in one message.
    void all_reduce_grads(const std::function<bool(const nn::Parameter&)>& which,
                          Communicator& group);
    // Sums `grads` (f32) over `group` in options_.main_grad_dtype, as Megatron sums main_grads.
    void all_reduce_main_grads(Communicator& group, Tensor& grads) const;
    // (signalled, out of time) as every rank of the run agrees: true when any rank saw it.
    std::pair<bool, bool> agreed(bool signalled, bool out_of_time) const;
    int64_t data_parallel_size() const;
    int64_t data_parallel_rank() const;
    // train()'s loop, without the schedule trace's writing.
    StopReason run_iterations(const data::SampleDataset& train_data,
                              const data::SampleDataset* valid_data);
    // The pipeline-parallel group, or null with one stage.
    Communicator* pipeline_group() const;
    // Whether each sequence is split over context-parallel ranks.
    bool context_parallel() const;
    // The ranks whose loss sums make up the batch's (data and context parallel), or null alone.
    Communicator* reporting_group() const;

    // --fp8-param-gather: each FP8 weight's f32 main param, whole (Parameter::fp8_main), from
    // the distributed optimizer's shards (Megatron's quantize_param_shard); and the FP8 weights
    // read back into the values, which checkpoints save.
    void sync_fp8_params();

    Model& model_;
    optim::Optimizer& optimizer_;
    optim::LrScheduler& scheduler_;
    TrainerOptions options_;
    std::function<void(const std::string&)> print_;
    io::TensorBoardWriter* tensorboard_ = nullptr;
    const std::atomic<bool>* stop_ = nullptr;
    std::function<void()> save_, after_iteration_;
    const parallel::ParallelState* parallel_ = nullptr;
    parallel::GradBuffer* grad_buffer_ = nullptr;
    parallel::GradBuffer* expert_grad_buffer_ = nullptr;
    std::unique_ptr<nn::DropoutContext> dropout_;
    std::unique_ptr<ParallelStrategy> schedule_;  // the pipeline schedule (set_parallel picks)
    std::unique_ptr<ScheduleTrace> trace_;        // with options_.schedule_trace_dir
    Timers timers_;                               // --timing-log-level
    int64_t iteration_ = 0, consumed_train_ = 0, consumed_valid_ = 0, skipped_train_ = 0;
    // Megatron-DeepSpeed's consumed_train_tokens: each step adds its global batch x the
    // positions it trained on (step_seqlen_).
    int64_t consumed_tokens_ = 0;
    std::optional<CurriculumSchedule> curriculum_;  // from options_.seqlen_curriculum
    // The positions of each sample the current step trains on (the curriculum's difficulty,
    // which Megatron-DeepSpeed counts even where it exceeds the sequence), else tokens_per_sample.
    int64_t step_seqlen_ = 0;
    bool memory_reported_ = false;  // Megatron's report_memory runs once
    Tensor fp8_mains_;  // --fp8-param-gather: the main params, laid out as the grad buffer
    std::optional<optim::GradScaler> scaler_;
    std::vector<double> losses_, grad_norms_;
    std::unique_ptr<RerunStateMachine> rerun_;  // made by train(), once the ranks are known
    int exit_code_ = 0;
};

}  // namespace mt::train
