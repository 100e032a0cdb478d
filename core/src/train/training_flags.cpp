#include "mt/train/training_flags.h"

#include <filesystem>
#include <fstream>
#include <tuple>
#include <utility>

#include "mt/cli/flags.h"
#include "mt/cli/megatron_flags.h"
#include "mt/error.h"
#include "mt/log.h"
#include "mt/nn/hybrid_layer_pattern.h"
#include "mt/parallel/pipeline_layers.h"
#include "mt/parallel/pipeline_layout.h"

namespace mt::train {

namespace {
template <class T>
void read_optional(const po::variables_map& vm, const char* name, std::optional<T>& out) {
    if (vm.count(name)) out = vm[name].as<T>();
}

// Evaluation's micro-batch and global batch sizes: their flags', else the training's.
std::pair<int64_t, int64_t> evaluation_batches(const TrainingFlags& f) {
    return {f.eval_micro_batch_size.value_or(f.micro_batch_size),
            f.eval_global_batch_size.value_or(f.schedule.global_batch_size)};
}

}  // namespace

std::vector<po::options_description> training_flag_groups(TrainingFlags& f, EntryPoint entry) {
    const bool pretraining = entry == EntryPoint::pretraining;
    // tasks/finetune_utils.py's loop checks only --exit-interval.
    const char* const kFinetuningIgnores = "accepted: Megatron's finetuning loop does not check it";
    po::options_description training("Training", 100);
    if (pretraining)
        training.add_options()("model", po::value(&f.model)->default_value("gpt"),
                               "model family (a model plugin)")(
            "micro-batch-size", po::value(&f.micro_batch_size)->required(), "batch size per step")(
            "global-batch-size", po::value<int64_t>(),
            "samples per iteration (default: the micro-batch size x the data-parallel size); "
            "gradients accumulate")("train-iters", po::value<int64_t>(), "iterations to train for")(
            "train-samples", po::value<int64_t>(),
            "samples to train for (instead of --train-iters)");
    else
        training.add_options()("model", po::value(&f.model),
                               "model family (a model plugin; default: bert for --task RACE, "
                               "MNLI and QQP, else gpt)")(
            "micro-batch-size", po::value(&f.micro_batch_size)->default_value(1),
            "samples per forward pass (finetuning: per data-parallel rank and iteration)")(
            "global-batch-size", po::value<int64_t>(),
            "finetuning: samples per iteration, which must be the micro-batch size x the "
            "data-parallel size (its default): Megatron's finetuning does not accumulate "
            "gradients");
    training.add_options()(
        "rampup-batch-size", po::value<std::vector<int64_t>>()->multitoken(),
        pretraining ? "START INCREMENT SAMPLES: grow the global batch from START by INCREMENT over "
                      "the first SAMPLES samples (with --train-samples)"
                    : "refused, as Megatron's finetuning refuses it")(
        "step-batch-size-schedule", po::value<std::string>(),
        pretraining ? "\"THRESHOLD:BS THRESHOLD:BS ...\" (core_v0.19): the global batch is BS "
                      "once THRESHOLD tokens are consumed (K, M, B, T: x1e3 ... x1e12; the first "
                      "threshold 0); instead of --global-batch-size"
                    : "refused, as Megatron's finetuning refuses it")(
        "clip-grad", po::value(&f.clip_grad)->default_value(1.0), "global gradient-norm clip")(
        "seed", po::value(&f.seed)->default_value(1234), "random seed (data order, dropout)")(
        "exit-interval", po::value<int64_t>(), "exit after an iteration divisible by this")(
        "exit-duration-in-mins", po::value<double>(),
        pretraining ? "exit after this many minutes" : kFinetuningIgnores)(
        "no-check-for-nan-in-loss-and-grad", po::bool_switch(),
        "train on past a NaN or Inf loss or gradient norm (the log counts them) instead of "
        "stopping")(
        "rerun-mode", po::value<std::string>()->default_value("disabled"),
        "Megatron's re-run engine: validate_results checks each micro-batch's loss and each "
        "gradient bucket's local norm (NaN, Inf; --check-for-* too) and re-runs a step that "
        "fails, then exits 17 when the re-run differs (a transient error) or saves the state "
        "before the step and exits 16 when it repeats (resuming re-runs the step); disabled: "
        "core_v0.13's default (core_v0.19's is validate_results)")(
        "error-injection-rate", po::value(&f.rerun.error_injection_rate)->default_value(0),
        "with --rerun-mode validate_results: about one in this many validations fails on "
        "purpose (0: none)")(
        "error-injection-type", po::value<std::string>()->default_value("transient_error"),
        "what an injected failure's re-run shows: transient_error (not repeated), "
        "persistent_error or correct_result (repeated)")(
        "check-for-spiky-loss", po::bool_switch(&f.check_for_spiky_loss),
        "the re-run engine also checks for a micro-batch loss 10x the largest of the first 100 "
        "(not fatal: a warning, or a re-run before going on)")(
        "iterations-to-skip", po::value(&f.iterations_to_skip)->multitoken(),
        "1-based iterations to skip (core_v0.19's reading; core_v0.13 counted the iterations "
        "done): each reads past its global batch with no update and no log line")(
        "check-for-large-grads", po::bool_switch(&f.check_for_large_grads),
        "the re-run engine also checks for a bucket's grad norm 10x the largest of the first "
        "100 (not fatal)")(
        "exit-signal-handler", po::bool_switch(&f.exit_signal_handler),
        pretraining
            ? "on SIGTERM, finish the iteration, save a checkpoint (with --save) and exit"
            : kFinetuningIgnores)("loss-scale", po::value<double>(),
                                  "a constant loss scale (fp16); without it the scale is dynamic")(
        "initial-loss-scale", po::value(&f.grad_scaler.initial_scale)->default_value(4294967296.0),
        "the dynamic loss scale's start (2^32)")(
        "min-loss-scale", po::value(&f.grad_scaler.min_scale)->default_value(1.0),
        "the dynamic loss scale's floor")(
        "loss-scale-window", po::value(&f.grad_scaler.window)->default_value(1000),
        "iterations without overflow before the dynamic loss scale doubles")(
        "hysteresis", po::value(&f.grad_scaler.hysteresis)->default_value(2),
        "overflowing iterations before the dynamic loss scale halves")(
        "accumulate-allreduce-grads-in-fp32", po::bool_switch(),
        "accepted: grads of bf16 weights accumulate and reduce in fp32 (Megatron's default for "
        "--bf16) unless --grad-reduce-in-bf16")(
        "fp8-param-gather", po::bool_switch(&f.fp8_param_gather),
        "with --fp8-format and the distributed optimizer: the FP8 layers' weights quantized from "
        "their f32 main params after each step, as Megatron's FP8 parameters are (not from "
        "their bf16 copies)")(
        "grad-reduce-in-bf16", po::bool_switch(&f.grad_reduce_in_bf16),
        "with --bf16: grads accumulate over the micro-batches and are summed over the "
        "data-parallel ranks in bf16 (Megatron's main_grad buffer in bf16: half the bytes "
        "sent); no effect without --bf16")("attention-softmax-in-fp32", po::bool_switch(),
                                           "accepted: the attention softmax always runs in fp32")(
        "use-flash-attn", po::bool_switch(),
        "accepted: the CPU attention is a flash-style kernel (no T x T matrix) already")(
        "attention-backend", po::value<std::string>()->default_value("auto"),
        "flash, fused, unfused, local or auto: accepted, all run the CPU's flash-style kernel");
    if (pretraining)
        training.add_options()("skip-train", po::bool_switch(&f.skip_train),
                               "no training: evaluate the model (--load's, or the initial one) on "
                               "the validation and test sets");

    po::options_description distributed("Distributed (ranks from mpirun or srun)", 100);
    auto& p = f.parallel;
    auto& dp = f.data_parallel;
    distributed.add_options()("tensor-model-parallel-size",
                              po::value(&p.tensor_parallel)->default_value(1),
                              "ranks each layer's weights are split over")(
        "pipeline-model-parallel-size", po::value(&p.pipeline_parallel)->default_value(1),
        "pipeline stages (trained with the 1F1B schedule)")(
        "decoder-first-pipeline-num-layers", po::value(&p.first_stage_layers),
        "layers of the first pipeline stage (the others split the rest evenly)")(
        "decoder-last-pipeline-num-layers", po::value(&p.last_stage_layers),
        "layers of the last pipeline stage")(
        "account-for-embedding-in-pipeline-split", po::bool_switch(&p.account_for_embedding),
        "count the embedding as a layer when splitting the layers over the stages")(
        "account-for-loss-in-pipeline-split", po::bool_switch(&p.account_for_loss),
        "count the loss as a layer when splitting the layers over the stages")(
        "num-layers-per-virtual-pipeline-stage", po::value(&f.layers_per_virtual_stage),
        "layers per model chunk: each stage holds several chunks (interleaved 1F1B)")(
        "num-virtual-stages-per-pipeline-rank", po::value(&f.virtual_stages_per_rank),
        "model chunks per pipeline stage (interleaved 1F1B)")(
        "pipeline-model-parallel-layout", po::value<std::string>(),
        "each model chunk's layers (core_v0.19): segments of E (embedding), t (transformer "
        "layer), m (MTP layer), L (loss) separated by '|', with x*n and (...)*n, e.g. "
        "'Et*3|(tt|)*6mL'; segment i is chunk i / stages of stage i % stages")(
        "virtual-pipeline-model-parallel-size", po::value(&f.virtual_stages_per_rank),
        "older Megatron's name of --num-virtual-stages-per-pipeline-rank")(
        "microbatch-group-size-per-virtual-pipeline-stage", po::value(&p.microbatch_group_size),
        "micro-batches each model chunk runs in a row (default: the pipeline size)")(
        "no-overlap-p2p-communication", po::bool_switch(),
        "accepted: stages always send as soon as an output exists and post receives ahead")(
        "overlap-p2p-communication", po::bool_switch(),
        "accepted: older Megatron's switch for what is always done here (and Megatron's default)")(
        "overlap-p2p-communication-warmup-flush", po::bool_switch(),
        "accepted: stages always send as soon as an output exists and post receives ahead")(
        "context-parallel-size", po::value(&p.context_parallel)->default_value(1),
        "ranks the sequence is split over in attention")(
        "expert-model-parallel-size", po::value(&p.expert_parallel)->default_value(1),
        "ranks the experts are split over")(
        "expert-tensor-parallel-size", po::value(&p.expert_tensor_parallel),
        "ranks each expert is split over (default: --tensor-model-parallel-size)")(
        "use-tp-pp-dp-mapping", po::bool_switch(&p.tp_pp_dp_mapping),
        "order ranks tp-pp-dp instead of tp-dp-pp")(
        "sequence-parallel", po::bool_switch(&f.sequence_parallel),
        "split norms, dropout and residuals along the sequence over the tensor-parallel ranks")(
        "use-distributed-optimizer", po::bool_switch(&dp.distributed_optimizer),
        "shard the optimizer state and master weights over the data-parallel ranks")(
        "num-distributed-optimizer-instances",
        po::value(&dp.distributed_optimizer_instances)->default_value(1),
        "with --use-distributed-optimizer: shard the optimizer within this many groups of "
        "consecutive data-parallel ranks, replicated across them")(
        "overlap-grad-reduce", po::bool_switch(&dp.overlap_grad_reduce),
        "reduce gradient buckets as they fill during backward")(
        "overlap-param-gather", po::bool_switch(),
        "gather updated parameters asynchronously (with --use-distributed-optimizer)")(
        "ddp-bucket-size", po::value(&dp.bucket_size)->default_value(0),
        "elements per gradient bucket with --overlap-grad-reduce (0: Megatron's default, "
        "max(40M, 1M x data-parallel size)); one bucket without")(
        "distributed-backend", po::value(&f.distributed_backend)->default_value("nccl"),
        "nccl or gloo: accepted; ranks talk over MPI on the CPU, NCCL on GPUs")(
        "distributed-timeout-minutes", po::value<int64_t>()->default_value(10),
        "accepted: an error on any rank stops every rank at once");

    po::options_description lr("Learning rate", 100);
    auto& s = f.schedule;
    auto* peak_lr = po::value(&s.lr);
    if (pretraining) peak_lr->required();
    lr.add_options()("lr", peak_lr,
                     pretraining ? "learning rate after warmup"
                                 : "learning rate after warmup (finetuning needs it)")(
        "min-lr", po::value(&s.min_lr)->default_value(0.0), "learning rate floor")(
        "lr-decay-style", po::value(&s.lr_decay_style)->default_value("linear"),
        "constant, linear, cosine, inverse-square-root or WSD")(
        "lr-decay-iters", po::value<int64_t>(), "decay length (default: --train-iters)")(
        "lr-decay-samples", po::value<int64_t>(), "decay length (default: --train-samples)")(
        "lr-warmup-fraction", po::value<double>(), "warmup as a fraction of the decay")(
        "lr-warmup-iters", po::value(&s.lr_warmup_iters)->default_value(0), "warmup iterations")(
        "lr-warmup-samples", po::value(&s.lr_warmup_samples)->default_value(0), "warmup samples")(
        "lr-warmup-init", po::value(&s.lr_warmup_init)->default_value(0.0), "warmup start")(
        "lr-wsd-decay-style", po::value(&s.lr_wsd_decay_style)->default_value("exponential"),
        "WSD anneal: exponential, linear, cosine or minus_sqrt")(
        "lr-wsd-decay-iters", po::value<int64_t>(), "WSD anneal iterations")(
        "lr-wsd-decay-samples", po::value<int64_t>(), "WSD anneal samples")(
        "decoupled-lr", po::value<double>(),
        "the peak learning rate of the embedding and output weights")(
        "decoupled-min-lr", po::value<double>(), "their learning-rate floor (default: --min-lr)");

    po::options_description opt("Optimizer", 100);
    auto& o = f.optimizer_config;
    opt.add_options()("optimizer", po::value(&f.optimizer)->default_value("adam"),
                      "adam, sgd or muon")("adam-beta1",
                                           po::value(&o.adam_beta1)->default_value(0.9), "")(
        "adam-beta2", po::value(&o.adam_beta2)->default_value(0.999), "")(
        "adam-eps", po::value(&o.adam_eps)->default_value(1e-8), "")(
        "sgd-momentum", po::value(&o.sgd_momentum)->default_value(0.9), "")(
        "muon-momentum", po::value(&o.muon.momentum)->default_value(0.9), "")(
        "muon-no-split-qkv", po::bool_switch(),
        "orthogonalise a linear_qkv weight whole, not its query, key and value rows apart")(
        "muon-nesterov", po::bool_switch(&o.muon.nesterov), "Nesterov momentum for Muon")(
        "muon-scale-mode", po::value(&o.muon.scale_mode)->default_value("spectral"),
        "spectral, unit_rms_norm or shape_scaling")(
        "muon-fp32-matmul-prec", po::value(&o.muon.fp32_matmul_prec)->default_value("medium"),
        "medium (Newton-Schulz in bf16), high or highest (f32)")(
        "muon-coefficient-type", po::value(&o.muon.coefficient_type)->default_value("quintic"),
        "simple, quintic, polar_express or aol")("muon-num-ns-steps",
                                                 po::value(&o.muon.num_ns_steps)->default_value(5),
                                                 "Newton-Schulz steps")(
        "muon-tp-mode", po::value(&o.muon.tp_mode)->default_value("blockwise"),
        "blockwise (each tensor-parallel piece alone), duplicated or distributed")(
        "muon-extra-scale-factor", po::value(&o.muon.extra_scale_factor)->default_value(1.0), "")(
        "weight-decay", po::value(&f.weight_decay)->default_value(0.01), "weight decay")(
        "start-weight-decay", po::value<double>(),
        "initial weight decay (default: --weight-decay)")(
        "end-weight-decay", po::value<double>(), "final weight decay (default: --weight-decay)")(
        "weight-decay-incr-style", po::value(&s.weight_decay_incr_style)->default_value("constant"),
        "constant, linear or cosine");

    po::options_description ckpt("Checkpointing", 100);
    ckpt.add_options()("save", po::value<std::string>(), "checkpoint directory to save to");
    if (pretraining) {
        ckpt.add_options()("load", po::value<std::string>(), "checkpoint directory to load from");
        ckpt.add_options()("use-checkpoint-args", po::bool_switch(),
                           "take the model's arguments (and the tokenizer, where no flag names "
                           "one) from the --load checkpoint, as Megatron's "
                           "load_args_from_checkpoint does");
    }
    ckpt.add_options()("save-interval", po::value<int64_t>(),
                       pretraining
                           ? "iterations between checkpoints (one is also saved when training ends)"
                           : "iterations between checkpoints (finetuning also saves one at the end "
                             "of each epoch)")(
        "verify-integrity", po::bool_switch(&f.verify_integrity),
        "(core_v0.19, torch_dist) saves write integrity.json, every checkpoint file's SHA-256, "
        "and loads check the files against it first")(
        "save-retain-interval", po::value<int64_t>(),
        "N (core_v0.19): each save deletes the checkpoint saved before it unless its iteration "
        "is a multiple of N (a multiple of --save-interval)")(
        "dist-ckpt-optim-fully-reshardable", po::bool_switch(&f.dist_ckpt_optim_fully_reshardable),
        "(core_v0.19) torch_dist keeps the distributed optimizer's state per parameter in its "
        "shape (fully_reshardable). Without it, as the Megatron the run stands for: core_v0.19's "
        "default, its gradient buffers' buckets (dp_reshardable), when resuming a core_v0.19 "
        "layout or given a flag only core_v0.19 has; else core_v0.13's ranges flattened "
        "(fully_sharded_model_space). Each version loads only its own")(
        "ckpt-format", po::value(&f.ckpt_format)->default_value("torch_dist"),
        "format --save writes: torch_dist (Megatron's default), torch, or any checkpoint plugin; "
        "--load reads whichever format it finds");
    if (pretraining)
        ckpt.add_options()(
            "ckpt-convert-format", po::value<std::string>(),
            "after loading, save the checkpoint in this format under --ckpt-convert-save and stop")(
            "ckpt-convert-save", po::value<std::string>(),
            "directory for --ckpt-convert-format (the checkpoint goes to DIR/<format>)");
    ckpt.add_options()("no-save-optim", po::bool_switch(&f.no_save_optim),
                       "do not save the optimizer state")(
        "no-save-rng", po::bool_switch(&f.no_save_rng), "do not save the RNG state")(
        "no-load-optim", po::bool_switch(&f.no_load_optim),
        "do not load the optimizer and learning-rate schedule state")(
        "no-load-rng", po::bool_switch(&f.no_load_rng), "do not load the RNG state")(
        "override-opt_param-scheduler", po::bool_switch(),
        "resuming: take the learning-rate schedule's settings from the flags (by default they "
        "must equal the checkpoint's)")(
        "use-checkpoint-opt_param-scheduler", po::bool_switch(),
        "resuming: take the learning-rate schedule's settings from the checkpoint")(
        "exit-on-missing-checkpoint", po::bool_switch(&f.exit_on_missing_checkpoint),
        "with --load: exit when it holds no checkpoint instead of starting from random weights")(
        "finetune", po::bool_switch(&f.finetune),
        "load the model only and start at iteration 0 (no optimizer, schedule or RNG state)");

    po::options_description data("Data", 100);
    if (pretraining)
        data.add_options()("data-path", po::value(&f.data_path)->multitoken(),
                           "dataset prefixes, optionally weighted: P | W1 P1 W2 P2 ...")(
            "split", po::value<std::string>(), "train,valid,test proportions (default 969, 30, 1)")(
            "train-data-path", po::value(&f.train_data_path)->multitoken(), "")(
            "valid-data-path", po::value(&f.valid_data_path)->multitoken(), "")(
            "test-data-path", po::value(&f.test_data_path)->multitoken(), "")(
            "data-cache-path", po::value<std::string>(), "where the sample-index caches go")(
            "mock-data", po::bool_switch(&f.mock_data),
            "the model family's synthetic data instead of --data-path (GPT: Megatron's "
            "MockGPTDataset, documents 1, 2, ..., n-1, EOD of numpy-drawn lengths)");
    data.add_options()("calculate-per-token-loss", po::bool_switch(&f.calculate_per_token_loss),
                       "gradients of the loss summed over the global batch's tokens and divided "
                       "by their count, instead of each micro-batch's mean")(
        "dataloader-type", po::value(&f.dataloader_type)->default_value("single"),
        "single: samples in order (MegatronPretrainingSampler); cyclic: each epoch of the "
        "dataset shuffled by torch.randperm seeded with the epoch, over and over "
        "(MegatronPretrainingRandomSampler in cyclic_iter); external (a Python dataloader of "
        "the user's) is not supported")(
        "no-data-sharding", po::bool_switch(),
        "cyclic: every data-parallel rank reads one shuffled order of the whole dataset, not "
        "its own shuffled bucket");

    po::options_description logging("Logging and evaluation", 100);
    logging.add_options()("log-interval", po::value(&f.log_interval)->default_value(100),
                          "iterations between log lines")(
        "eval-interval", po::value(&f.eval_interval)->default_value(1000),
        "iterations between evaluations")(
        "eval-iters", po::value(&f.eval_iters)->default_value(100), "iterations per evaluation")(
        "eval-micro-batch-size", po::value<int64_t>(),
        "(core_v0.19) samples per evaluation forward pass (default: --micro-batch-size)")(
        "eval-global-batch-size", po::value<int64_t>(),
        "(core_v0.19) samples per evaluation iteration (default: the global batch size)")(
        "tensorboard-dir", po::value(&f.tensorboard_dir), "write TensorBoard event files here")(
        "timing-log-level", po::value(&f.timing_log_level)->default_value(0),
        "Megatron's timers after each logged iteration: 1 the main phases (forward-backward, "
        "all-grads-sync, optimizer ...), 2 also forward-compute, backward-compute and the "
        "pipeline's send/recv")("timing-log-option",
                                po::value(&f.timing_log_option)->default_value("minmax"),
                                "max, minmax or all: the timers' times across ranks")(
        "schedule-trace-dir", po::value(&f.schedule_trace_dir),
        "(megatron.cpp) each rank writes the schedule it ran (forward, backward and pipeline "
        "send/recv times per micro-batch) to DIR/schedule_rank<R>.json for chrome://tracing")(
        "log-throughput", po::bool_switch(&f.log_throughput),
        "add the model's TFLOP/s to the iteration line (TensorBoard always gets it)")(
        "log-memory-to-tensorboard", po::bool_switch(&f.log_memory_to_tensorboard),
        "write the resident and peak memory as mem-* scalars each logged iteration")(
        "moe-per-layer-logging", po::bool_switch(&f.moe_per_layer_logging),
        "write each layer's MoE auxiliary losses to TensorBoard as moe/<name>_layer_<i>")(
        "log-params-norm", po::bool_switch(&f.log_params_norm),
        "add the parameters' L2 norm (after the update) to the iteration line")(
        "log-num-zeros-in-grad", po::bool_switch(&f.log_num_zeros_in_grad),
        "add the number of zero gradient elements to the iteration line")(
        "log-rank-stats", po::bool_switch(&f.log_rank_stats),
        "not Megatron's: after training, each rank prints the bytes it sent per iteration "
        "through each process group and the size of its optimizer state");
    po::options_description deepspeed("Megatron-DeepSpeed", 100);
    deepspeed.add_options()(
        "deepspeed", po::bool_switch(),
        "train as Megatron-DeepSpeed's DeepSpeed engine does, configured by --deepspeed_config: "
        "its fp16 / bf16 section (which must agree with --fp16 / --bf16) and fp16 loss scaling, "
        "its gradient_clipping (in place of --clip-grad), its ZeRO stage (1 and 2: the "
        "distributed optimizer); the batch sizes stay the flags'")(
        "deepspeed_config", po::value(&f.deepspeed_config_path),
        "the DeepSpeed JSON configuration (ds_config.json); read with --deepspeed")(
        "zero-stage", po::value<double>()->default_value(1.0, "1"),
        "Megatron-DeepSpeed's model code reads only stage 3 (parameters gathered at "
        "initialisation: refused); the configuration's zero_optimization.stage decides the "
        "sharding")("no-pipeline-parallel", po::bool_switch(),
                    "DeepSpeed runs the model without its pipeline engine (the same model); "
                    "needs --pipeline-model-parallel-size 1")(
        "train-tokens", po::value<int64_t>(),
        "also stop training once this many tokens (samples x --seq-length) are consumed")(
        "lr-warmup-tokens", po::value<int64_t>(),
        "warm the learning rate up over this many tokens (instead of iterations or samples)")(
        "lr-decay-tokens", po::value<int64_t>(),
        "decay the learning rate over this many tokens (instead of iterations or samples)")(
        "moe-expert-parallel-size", po::value<int>(),
        "ranks DeepSpeed's MoE layers split their experts over (as "
        "--expert-model-parallel-size)")(
        "load-tag", po::value<std::string>(),
        "with --deepspeed and --load: the DeepSpeed checkpoint tag to resume (a global_stepN "
        "folder of --load) instead of the one its `latest` file names")(
        "universal-checkpoint", po::bool_switch(),
        "with --deepspeed and --load: resume DeepSpeed's universal checkpoint (ds_to_universal's "
        "folder) that --load's `latest_universal` file names")(
        "kill-switch-file", po::value(&f.kill_switch_file),
        "exit at the start if this file exists, and once it appears after an iteration, saving "
        "a checkpoint first (with --save)");
    return {training, cli::precision_flags(), distributed, lr, opt, ckpt, data, logging, deepspeed};
}

namespace {

// Megatron-DeepSpeed's flags: --deepspeed hands precision, clipping and ZeRO to the DeepSpeed
// configuration.
void read_deepspeed_flags(const po::variables_map& vm, TrainingFlags& f) {
    read_optional(vm, "train-tokens", f.train_tokens);
    if (vm.count("moe-expert-parallel-size")) {
        MT_CHECK(vm["expert-model-parallel-size"].defaulted(),
                 "give --moe-expert-parallel-size (Megatron-DeepSpeed's) or "
                 "--expert-model-parallel-size, not both");
        f.parallel.expert_parallel = vm["moe-expert-parallel-size"].as<int>();
    }
    read_optional(vm, "lr-warmup-tokens", f.schedule.lr_warmup_tokens);
    read_optional(vm, "lr-decay-tokens", f.schedule.lr_decay_tokens);
    MT_CHECK(!vm["no-pipeline-parallel"].as<bool>() || f.parallel.pipeline_parallel == 1,
             "pipeline_model_parallel_size must be 1 if pipeline parallel is disabled "
             "(--no-pipeline-parallel)");
    const double zero_stage = vm["zero-stage"].as<double>();
    MT_CHECK(zero_stage == 0 || zero_stage == 1 || zero_stage == 2 || zero_stage == 3,
             "--zero-stage ", zero_stage, ": DeepSpeed's stages are 0, 1, 2 and 3");
    MT_CHECK(zero_stage != 3,
             "--zero-stage 3: not supported yet: ZeRO stage 3 (parameters partitioned over the "
             "data-parallel ranks: FSDP)");
    if (!vm["deepspeed"].as<bool>()) return;
    MT_CHECK(!f.deepspeed_config_path.empty(),
             "--deepspeed needs --deepspeed_config (the DeepSpeed JSON configuration)");
    const std::string& path = f.deepspeed_config_path;
    DeepSpeedConfig ds = read_deepspeed_config(path);
    const bool fp16 = f.params_dtype == DType::f16, bf16 = f.params_dtype == DType::bf16;
    // DeepSpeed casts the model to its configuration's precision; megatron-train takes it
    // from the flags, as Megatron-DeepSpeed's model code does.
    MT_CHECK(ds.fp16 == fp16 && ds.bf16 == bf16, path, ": fp16.enabled ",
             ds.fp16 ? "true" : "false", " and bf16.enabled ", ds.bf16 ? "true" : "false",
             " must agree with the flags (",
             fp16   ? "--fp16"
             : bf16 ? "--bf16"
                    : "fp32",
             ")");
    MT_CHECK(!ds.train_micro_batch_size_per_gpu ||
                 *ds.train_micro_batch_size_per_gpu == f.micro_batch_size,
             path, ": train_micro_batch_size_per_gpu ",
             ds.train_micro_batch_size_per_gpu.value_or(0), " differs from --micro-batch-size ",
             f.micro_batch_size,
             " (DeepSpeed's engine would accumulate at other boundaries than Megatron's batches)");
    f.clip_grad = ds.gradient_clipping;
    // DeepSpeed's fp16 optimizer scales the loss; its bf16 optimizer does not.
    f.grad_scaler = ds.fp16 ? ds.fp16_scaler : optim::GradScalerConfig{};
    if (ds.zero_stage >= 1) f.data_parallel.distributed_optimizer = true;
    // (Megatron-DeepSpeed has no context parallelism: a rank of it holds two chunks of the
    // whole sequence.)
    MT_CHECK(!ds.curriculum || f.parallel.context_parallel == 1, path,
             ": not supported yet: the seqlen curriculum with context parallelism "
             "(--context-parallel-size ",
             f.parallel.context_parallel, ")");
    f.deepspeed = ds;
}

}  // namespace

void finish(const po::variables_map& vm, TrainingFlags& f, EntryPoint entry) {
    const bool pretraining = entry == EntryPoint::pretraining;
    f.params_dtype = cli::params_dtype_from(vm);
    f.check_for_nan = !vm["no-check-for-nan-in-loss-and-grad"].as<bool>();
    read_optional(vm, "pipeline-model-parallel-layout", f.pipeline_layout);
    f.rerun.mode = train::rerun_mode_from(vm["rerun-mode"].as<std::string>());
    f.rerun.error_injection_type =
        train::rerun_diagnostic_from(vm["error-injection-type"].as<std::string>());
    MT_CHECK(f.rerun.error_injection_rate >= 0, "--error-injection-rate must be >= 0, got ",
             f.rerun.error_injection_rate);
    for (int64_t it : f.iterations_to_skip)
        MT_CHECK(it > 0, "--iterations-to-skip: iterations count from 1, got ", it);
    // Megatron reads --grad-reduce-in-bf16 for bf16 only (validate_args).
    f.grad_reduce_in_bf16 = f.grad_reduce_in_bf16 && f.params_dtype == DType::bf16;
    if (f.grad_reduce_in_bf16) f.data_parallel.reduce_dtype = DType::bf16;
    // Megatron's store_false dest add_position_embedding (accepted with rope, which ignores it).
    f.add_position_embedding =
        !(vm.count("no-position-embedding") && vm["no-position-embedding"].as<bool>());
    const bool override_schedule = vm["override-opt_param-scheduler"].as<bool>();
    const bool checkpoint_schedule = vm["use-checkpoint-opt_param-scheduler"].as<bool>();
    MT_CHECK(!(override_schedule && checkpoint_schedule),
             "both override and use-checkpoint are set.");
    if (override_schedule) f.schedule_settings = train::ScheduleSettings::from_flags;
    if (checkpoint_schedule) f.schedule_settings = train::ScheduleSettings::from_checkpoint;
    const std::string backend = vm["attention-backend"].as<std::string>();
    MT_CHECK(backend == "flash" || backend == "fused" || backend == "unfused" ||
                 backend == "local" || backend == "auto",
             "--attention-backend ", backend, ": choose from flash, fused, unfused, local, auto");
    read_optional(vm, "loss-scale", f.grad_scaler.loss_scale);
    read_deepspeed_flags(vm, f);
    // muP's width multiplier, which the optimizer's overrides take (the model reads the same
    // flags: mt/nn/transformer_args.h).
    const auto text = [&](const char* flag) {
        return vm.count(flag) && !vm[flag].empty() ? vm[flag].as<std::string>() : std::string();
    };
    if (vm.count("use-mup") && vm["use-mup"].as<bool>()) {
        const std::string base = text("mup-base-hidden-size"), hidden = text("hidden-size");
        if (!base.empty() && base != "None" && !hidden.empty())
            f.optimizer_config.mup_width_mult = std::stod(hidden) / std::stod(base);
    }
    if (const auto newer = cli::newer_megatron_flags_given(vm); !newer.empty())
        f.core_v0_19_flag = newer.front();
    // Megatron's validate_args: with dynamic loss scaling NaNs and Infs in the loss and grads
    // are the scaler's signal (a skipped step), not a failure.
    if (f.params_dtype == DType::f16 && !f.grad_scaler.loss_scale) f.check_for_nan = false;
    MT_CHECK(f.distributed_backend == "nccl" || f.distributed_backend == "gloo",
             "--distributed-backend ", f.distributed_backend, ": nccl or gloo");
    MT_CHECK(!vm["overlap-param-gather"].as<bool>() || f.data_parallel.distributed_optimizer ||
                 f.optimizer == "dist_muon",
             "--overlap-param-gather needs --use-distributed-optimizer (or --optimizer "
             "dist_muon)");
    MT_CHECK(f.data_parallel.bucket_size >= 0, "--ddp-bucket-size must not be negative");
    if (f.fp8_param_gather) {
        MT_CHECK(f.data_parallel.distributed_optimizer,
                 "--fp8-param-gather only supported with distributed optimizer, torch fsdp2, "
                 "megatron fsdp, or inference mode");
        MT_CHECK(vm.count("fp8-format"), "fp8_param must be used together with fp8 mode.");
        if (vm.count("fp8-recipe")) {
            const std::string recipe = vm["fp8-recipe"].as<std::string>();
            MT_CHECK(recipe != "mxfp8" && recipe != "blockwise",
                     "--fp8-param-gather with --fp8-recipe ", recipe,
                     ": not supported yet: FP8 parameters in blocks");
        }
        MT_CHECK(f.params_dtype != DType::f32,
                 "--fp8-param-gather without --bf16 or --fp16: not supported yet: FP8 "
                 "parameters of an fp32 model");
    }
    MT_CHECK(f.data_parallel.distributed_optimizer_instances >= 1,
             "--num-distributed-optimizer-instances must be at least 1, got ",
             f.data_parallel.distributed_optimizer_instances);
    MT_CHECK(f.data_parallel.distributed_optimizer_instances == 1 ||
                 f.data_parallel.distributed_optimizer,
             "--num-distributed-optimizer-instances needs --use-distributed-optimizer (Megatron: "
             "Partial DistOpt cannot be used without DistOpt)");
    // Megatron turns sequence parallelism off without tensor parallelism.
    if (f.parallel.tensor_parallel == 1) f.sequence_parallel = false;
    auto& s = f.schedule;
    read_optional(vm, "global-batch-size", f.global_batch_size);
    s.global_batch_size = f.global_batch_size.value_or(f.micro_batch_size);
    // Finetuning counts its iterations from --epochs; there the two are accepted and unread.
    if (pretraining) {
        read_optional(vm, "train-iters", s.train_iters);
        read_optional(vm, "train-samples", s.train_samples);
    }
    MT_CHECK(!pretraining || s.train_iters.has_value() != s.train_samples.has_value(),
             "give exactly one of --train-iters and --train-samples");
    if (vm.count("rampup-batch-size")) {
        const auto v = vm["rampup-batch-size"].as<std::vector<int64_t>>();
        MT_CHECK(v.size() == 3,
                 "--rampup-batch-size takes three values: start, increment and ramp-up samples");
        f.rampup = train::BatchRampup{v[0], v[1], v[2]};
        // Megatron's validate_args.
        MT_CHECK(!pretraining || !s.train_iters,
                 "expected no batch-size rampup for iteration-based training");
    }
    read_optional(vm, "eval-micro-batch-size", f.eval_micro_batch_size);
    MT_CHECK(f.dataloader_type == "single" || f.dataloader_type == "cyclic",
             "--dataloader-type ", f.dataloader_type.substr(0, 100),
             f.dataloader_type == "external"
                 ? ": not supported yet: the external data loader (a data loader object of the "
                   "user's own Python code)"
                 : ": Megatron's choices are single, cyclic and external");
    f.data_sharding = !vm["no-data-sharding"].as<bool>();
    read_optional(vm, "eval-global-batch-size", f.eval_global_batch_size);
    MT_CHECK(f.eval_micro_batch_size.value_or(1) > 0 && f.eval_global_batch_size.value_or(1) > 0,
             "--eval-micro-batch-size and --eval-global-batch-size must be positive");
    read_optional(vm, "step-batch-size-schedule", f.step_batch_size_schedule);
    if (f.step_batch_size_schedule) {
        MT_CHECK(pretraining, "--step-batch-size-schedule: finetuning does not ramp its batch");
        // Megatron's validate_args.
        MT_CHECK(!f.global_batch_size,
                 "Cannot specify both --step-batch-size-schedule and --global-batch-size");
        MT_CHECK(!f.rampup,
                 "give one of --step-batch-size-schedule and --rampup-batch-size (core_v0.19 "
                 "replaced the second by the first)");
    }
    read_optional(vm, "lr-decay-iters", s.lr_decay_iters);
    read_optional(vm, "lr-decay-samples", s.lr_decay_samples);
    read_optional(vm, "lr-warmup-fraction", s.lr_warmup_fraction);
    read_optional(vm, "lr-wsd-decay-iters", s.lr_wsd_decay_iters);
    read_optional(vm, "lr-wsd-decay-samples", s.lr_wsd_decay_samples);
    read_optional(vm, "decoupled-lr", f.decoupled_lr);
    read_optional(vm, "decoupled-min-lr", f.decoupled_min_lr);
    // (--decoupled-min-lr alone changes nothing, in Megatron too.)
    s.start_weight_decay =
        vm.count("start-weight-decay") ? vm["start-weight-decay"].as<double>() : f.weight_decay;
    s.end_weight_decay =
        vm.count("end-weight-decay") ? vm["end-weight-decay"].as<double>() : f.weight_decay;
    // Megatron's other optimizers (core_v0.19: muon, dist_muon, lion, ...) are capabilities
    // megatron-train lacks, not typos.
    MT_CHECK(f.optimizer == "adam" || f.optimizer == "sgd" || f.optimizer == "muon" ||
                 f.optimizer == "dist_muon" || !cli::is_megatron_choice("--optimizer", f.optimizer),
             "--optimizer ", f.optimizer, ": not supported yet: the ", f.optimizer, " optimizer");
    f.optimizer_config.type = optim::parse_optimizer_type(f.optimizer);
    f.optimizer_config.muon.split_qkv = !vm["muon-no-split-qkv"].as<bool>();
    if (f.optimizer_config.type == optim::OptimizerType::muon) {
        // (Megatron: "emerging optimizer with fp16 is not supported".)
        MT_CHECK(f.params_dtype != DType::f16, "--optimizer ", f.optimizer,
                 " with --fp16: Megatron does not support it");
        // Megatron's layer-wise distributed optimizer (dist_muon its deprecated name): whole
        // parameters per data-parallel rank, since Muon orthogonalises whole matrices: gradients
        // all-reduced (no distributed optimizer's buffers), each parameter updated by one rank
        // (optim::Optimizer::shard_layer_wise).
        f.optimizer_config.muon.layer_wise =
            f.data_parallel.distributed_optimizer || f.optimizer == "dist_muon";
        f.optimizer = "muon";  // (as Megatron's validate_args renames it)
        MT_CHECK(f.data_parallel.distributed_optimizer_instances == 1,
                 "--num-distributed-optimizer-instances with --optimizer ", f.optimizer,
                 ": Megatron's layer-wise distributed optimizer does not support it");
        f.data_parallel.distributed_optimizer = false;
    }
    read_optional(vm, "exit-interval", f.exit_interval);
    read_optional(vm, "exit-duration-in-mins", f.exit_duration_in_mins);
    read_optional(vm, "save", f.save);
    read_optional(vm, "load", f.load);
    if (vm.count("fp8-format") && vm.count("fp8-recipe") &&
        vm["fp8-recipe"].as<std::string>() == "delayed" && (f.save || f.load))
        log::warn(
            "--fp8-recipe delayed: megatron.cpp's checkpoints do not hold the FP8 scaling state "
            "yet (Transformer Engine's _extra_state: each linear's amax history and scales), "
            "nor does it read Megatron's: a resumed run starts them afresh (scale 1, empty "
            "history), where Megatron's continues them");
    // Megatron-DeepSpeed's load_checkpoint(tag=--load-tag) under --deepspeed: that tag's folder.
    if (vm.count("load-tag") && f.load && f.deepspeed) {
        const std::string tag = vm["load-tag"].as<std::string>();
        const std::filesystem::path folder = std::filesystem::path(*f.load) / tag;
        MT_CHECK(std::filesystem::is_directory(folder), "--load-tag ", tag.substr(0, 200),
                 ": no such DeepSpeed checkpoint tag in ", *f.load);
        f.load = folder.string();
    }
    // --universal-checkpoint: DeepSpeed's load_checkpoint takes the tag from latest_universal,
    // and fails without one.
    if (vm["universal-checkpoint"].as<bool>()) {
        MT_CHECK(f.deepspeed,
                 "--universal-checkpoint: Megatron-DeepSpeed loads universal "
                 "checkpoints through --deepspeed");
        if (f.load && !vm.count("load-tag")) {
            const std::filesystem::path latest =
                std::filesystem::path(*f.load) / "latest_universal";
            std::ifstream in(latest);
            std::string tag;
            MT_CHECK(in && std::getline(in, tag),
                     "Invalid for universal checkpoint: ", latest.string(), " does not exist");
            tag.erase(tag.find_last_not_of(" \t\r\n") + 1);
            const std::filesystem::path folder = std::filesystem::path(*f.load) / tag;
            MT_CHECK(!tag.empty() && tag.find('/') == std::string::npos &&
                         std::filesystem::is_directory(folder),
                     latest.string(), ": names no universal checkpoint folder ('",
                     tag.substr(0, 200), "')");
            f.load = folder.string();
        }
    }
    read_optional(vm, "save-interval", f.save_interval);
    read_optional(vm, "ckpt-convert-format", f.ckpt_convert_format);
    read_optional(vm, "ckpt-convert-save", f.ckpt_convert_save);
    MT_CHECK(!f.ckpt_convert_format || (f.ckpt_convert_save && f.load),
             "--ckpt-convert-format needs --ckpt-convert-save and --load");
    MT_CHECK(!f.save_interval || *f.save_interval > 0, "--save-interval must be positive, got ",
             *f.save_interval);
    MT_CHECK(!f.verify_integrity || f.ckpt_format == "torch_dist",
             "`verify_integrity` is only supported with torch_dist checkpoint format.");
    read_optional(vm, "save-retain-interval", f.save_retain_interval);
    if (f.save && f.save_retain_interval)  // Megatron's validate_args
        MT_CHECK(*f.save_retain_interval > 0 && f.save_interval &&
                     *f.save_retain_interval % *f.save_interval == 0,
                 "--save-retain-interval (", *f.save_retain_interval,
                 ") must be a positive multiple of --save-interval");
    if (!pretraining) return;  // the task reads its own data and sets the iterations
    read_optional(vm, "split", f.split);
    read_optional(vm, "data-cache-path", f.data_cache_path);
    const bool per_split =
        !f.train_data_path.empty() || !f.valid_data_path.empty() || !f.test_data_path.empty();
    // Megatron: "A single data source must be provided in training mode".
    MT_CHECK(int(f.mock_data) + int(!f.data_path.empty()) + int(per_split) == 1,
             "give exactly one data source: --data-path, --train-data-path (with "
             "--valid-data-path / --test-data-path) or --mock-data");
    MT_CHECK(!per_split || !f.train_data_path.empty(),
             "--valid-data-path and --test-data-path need --train-data-path");
    if (!f.data_path.empty() && !f.split) f.split = "969, 30, 1";
}

namespace {

// Model chunks given one by one (`segments`, their count already a multiple of the stages):
// the virtual stages follow from them. Megatron makes several segments virtual stages of a
// single stage, which its forward_backward_no_pipelining then refuses.
void use_segments(parallel::ParallelConfig& c, std::vector<int64_t> segments,
                  const std::string& source) {
    const int64_t n = int64_t(segments.size());
    MT_CHECK(c.pipeline_parallel > 1 || n == 1, source,
             " with --pipeline-model-parallel-size 1: non-pipeline-parallel schedule does not "
             "support model chunking (as in Megatron)");
    c.segments = std::move(segments);
    c.virtual_stages = int(n / c.pipeline_parallel);
}

}  // namespace

parallel::ParallelConfig parallel_config(const TrainingFlags& f, const ModelArgs& model_args) {
    parallel::ParallelConfig c = f.parallel;
    if (f.pipeline_layout) {  // core_v0.19's explicit layout: each segment a model chunk
        MT_CHECK(f.layers_per_virtual_stage < 0 && f.virtual_stages_per_rank < 0,
                 "No more than one of the following arguments can be set at the same time: "
                 "--num-layers-per-virtual-pipeline-stage, --num-virtual-stages-per-pipeline-rank,"
                 "--pipeline-model-parallel-layout.");
        MT_CHECK(c.first_stage_layers < 0 && c.last_stage_layers < 0 && !c.account_for_embedding &&
                     !c.account_for_loss,
                 "--pipeline-model-parallel-layout places every layer itself: it cannot be "
                 "combined with --decoder-first/last-pipeline-num-layers or "
                 "--account-for-embedding/loss-in-pipeline-split");
        for (const char* flag : {"hybrid-layer-pattern", "hybrid-override-pattern"})
            MT_CHECK(!model_args.count(flag),
                     "--pipeline-model-parallel-layout should not be used "
                     "with --hybrid-layer-pattern. Pipeline stage layout is defined by | "
                     "separators in the pattern.");
        auto integer = [&](const char* name, int64_t otherwise) {
            auto it = model_args.find(name);
            return it == model_args.end() ? otherwise : std::stoll(it->second);
        };
        use_segments(
            c,
            parallel::check_pipeline_layout(*f.pipeline_layout, c.pipeline_parallel,
                                            integer("num-layers", 0), integer("mtp-num-layers", 0))
                .decoder_layers,
            "--pipeline-model-parallel-layout");
        return c;
    }
    // core_v0.19's hybrid pattern with '|': one segment per model chunk, the virtual stages
    // derived from them (validate_args).
    for (const char* flag : {"hybrid-layer-pattern", "hybrid-override-pattern"}) {
        auto pattern = model_args.find(flag);
        if (pattern == model_args.end() || pattern->second.find('|') == std::string::npos) continue;
        std::vector<int64_t> segments = nn::hybrid_pipeline_segments(pattern->second);
        const int64_t n = int64_t(segments.size());
        MT_CHECK(f.layers_per_virtual_stage < 0 && f.virtual_stages_per_rank < 0,
                 "--num-layers-per-virtual-pipeline-stage and --num-virtual-stages-per-pipeline-"
                 "rank should not be used with --",
                 flag, ": its '|' segments give the virtual stages (as in Megatron)");
        MT_CHECK(c.first_stage_layers < 0 && c.last_stage_layers < 0,
                 "--decoder-first/last-pipeline-num-layers should not be given with '|' in --",
                 flag, " (as in Megatron)");
        MT_CHECK(n % c.pipeline_parallel == 0,
                 "The number of hybrid pipeline segments described "
                 "by --",
                 flag, " (", n,
                 ") must be evenly divisible by "
                 "--pipeline-model-parallel-size (",
                 c.pipeline_parallel, ")");
        use_segments(c, std::move(segments), std::string("'|' segments in --") + flag);
        return c;
    }
    if (f.layers_per_virtual_stage < 0 && f.virtual_stages_per_rank < 0) return c;
    auto layers = model_args.find("num-layers");
    MT_CHECK(layers != model_args.end(), "virtual pipeline stages need --num-layers");
    const parallel::PipelineSplit split{std::stoll(layers->second), c.pipeline_parallel,
                                        c.first_stage_layers,       c.last_stage_layers,
                                        c.account_for_embedding,    c.account_for_loss};
    c.virtual_stages = parallel::virtual_pipeline_size(split, f.layers_per_virtual_stage,
                                                       f.virtual_stages_per_rank);
    MT_CHECK(c.virtual_stages == 1 || c.pipeline_parallel > 1,
             "virtual pipeline stages need --pipeline-model-parallel-size > 1");
    return c;
}

void apply_deepspeed_model_args(const TrainingFlags& f, ModelArgs& model_args) {
    // Megatron-DeepSpeed's --num-experts (a list of them, or any count under --deepspeed) means
    // DeepSpeed's MoE layers, which --expert-interval (its default 2) marks for the model.
    const auto experts = model_args.find("num-experts");
    if (experts != model_args.end() &&
        (f.deepspeed || experts->second.find(',') != std::string::npos))
        model_args.emplace("expert-interval", "2");
    if (!f.deepspeed) return;
    // Megatron-DeepSpeed keeps the older --checkpoint-activations (Megatron-LM calls it invalid):
    // every layer recomputed in backward, the same results.
    if (model_args.erase("checkpoint-activations") && !model_args.count("recompute-granularity")) {
        model_args["recompute-granularity"] = "full";
        model_args["recompute-method"] = "uniform";
        model_args["recompute-num-layers"] = "1";
    }
}

optim::LrScheduleConfig schedule_config(const TrainingFlags& f) {
    optim::LrScheduleFlags s = f.schedule;
    // Megatron builds the schedule before update_train_iters sets the iterations: a
    // sample-based run's schedule counts samples (not iterations x the final batch size).
    if (s.train_samples) s.train_iters.reset();
    return optim::schedule_config_from_flags(s);
}

void settle_batch_sizes(TrainingFlags& f, int64_t data_parallel_size, int64_t seq_length) {
    // Megatron's validate_args: the global batch defaults to one micro-batch per rank.
    f.schedule.global_batch_size =
        f.global_batch_size.value_or(f.micro_batch_size * data_parallel_size);
    const auto [eval_micro, eval_global] = evaluation_batches(f);
    // (Without either flag these are the training's, which the trainer checks.)
    MT_CHECK(!(f.eval_micro_batch_size || f.eval_global_batch_size) ||
                 eval_global % (eval_micro * data_parallel_size) == 0,
             "eval_global_batch_size (", eval_global,
             ") must be divisible by eval_micro_batch_size (", eval_micro,
             ") * data_parallel_size (", data_parallel_size, ")");
    if (f.deepspeed)
        check_deepspeed_batch(*f.deepspeed, f.deepspeed_config_path, data_parallel_size);
    f.tokens_per_sample = seq_length;
    if (f.step_batch_size_schedule)
        f.batch_steps =
            train::parse_step_batch_size_schedule(*f.step_batch_size_schedule, seq_length);
    if (f.schedule.train_samples) {
        train::TrainerOptions o;
        o.global_batch_size = f.schedule.global_batch_size;
        o.rampup = f.rampup;
        o.batch_steps = f.batch_steps;
        f.schedule.train_iters = train::train_iterations_for_samples(o, *f.schedule.train_samples);
    }
}

train::TrainerOptions trainer_options(const TrainingFlags& f) {
    train::TrainerOptions o;
    o.micro_batch_size = f.micro_batch_size;
    o.schedule_trace_dir = f.schedule_trace_dir;
    o.timing_log_level = f.timing_log_level;
    o.timing_log_option = f.timing_log_option;
    o.global_batch_size = f.schedule.global_batch_size;
    o.rampup = f.rampup;
    o.batch_steps = f.batch_steps;
    o.loader_order = {f.dataloader_type == "cyclic", f.data_sharding};
    std::tie(o.eval_micro_batch_size, o.eval_global_batch_size) = evaluation_batches(f);
    o.train_iters = *f.schedule.train_iters;
    o.train_tokens = f.train_tokens;
    o.tokens_per_sample = f.tokens_per_sample;
    if (f.deepspeed) o.seqlen_curriculum = f.deepspeed->curriculum;
    o.deepspeed_grad_norm = f.deepspeed.has_value();
    o.kill_switch_file = f.kill_switch_file;
    o.log_interval = f.log_interval;
    o.eval_interval = f.eval_interval;
    o.eval_iters = f.eval_iters;
    o.clip_grad = f.clip_grad;
    o.log_throughput = f.log_throughput;
    o.log_memory_to_tensorboard = f.log_memory_to_tensorboard;
    o.moe_per_layer_logging = f.moe_per_layer_logging;
    // Megatron's optimizer scales the loss for fp16, and with --loss-scale for bf16 too.
    if (f.params_dtype == DType::f16 || (f.params_dtype == DType::bf16 && f.grad_scaler.loss_scale))
        o.grad_scaler = f.grad_scaler;
    o.log_params_norm = f.log_params_norm;
    o.log_num_zeros_in_grad = f.log_num_zeros_in_grad;
    o.calculate_per_token_loss = f.calculate_per_token_loss;
    o.check_for_nan = f.check_for_nan;
    o.rerun = f.rerun;
    o.check_for_spiky_loss = f.check_for_spiky_loss;
    o.check_for_large_grads = f.check_for_large_grads;
    o.iterations_to_skip = f.iterations_to_skip;
    if (f.grad_reduce_in_bf16) o.main_grad_dtype = DType::bf16;
    o.fp8_param_gather = f.fp8_param_gather;
    o.decoupled_lr = f.decoupled_lr;
    o.decoupled_min_lr = f.decoupled_min_lr;
    o.seed = static_cast<uint64_t>(f.seed);
    o.exit_interval = f.exit_interval;
    o.exit_duration_in_mins = f.exit_duration_in_mins;
    o.save_interval = f.save_interval;
    return o;
}

}  // namespace mt::train
