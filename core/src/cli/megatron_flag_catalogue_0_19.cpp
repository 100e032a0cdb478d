// The catalogue's rows for the flags Megatron core_v0.19's arguments.py added to core_v0.13's
// (megatron_flag_list_newer.inc), read by the command line and by the checkpoint-args walk (a
// checkpoint saved with one of them holds it in its args). As for core_v0.13's rows: accepted
// only when the flag changes nothing here, refused naming the capability otherwise. A core_v0.19
// flag that is another name of a core_v0.13 one (same dest and action: --no-tp-comm-bulk-wgrad
// for --disable-tp-comm-bulk-wgrad) takes that flag's row and needs none here.
#include "megatron_flag_catalogue.h"
#include "megatron_flag_rules.h"

namespace mt::cli::detail {

namespace {

constexpr FlagRule kOffload =
    accept("moves activations or weights to host memory during training: the same computation");
constexpr FlagRule kTrainingSchedule =
    accept("schedules training sequences over the ranks: no effect on the model");
constexpr FlagRule kCommBackend =
    accept("an expert-parallel communication backend or its tuning: the same dispatch");
constexpr FlagRule kInferenceKernels =
    accept("a GPU inference kernel choice (Megatron's dynamic engine): the same math on the CPU");
constexpr FlagRule kLowPrecisionRecipe = accept(
    "a low-precision (FP8 / FP4) GEMM recipe of training: the checkpoint holds the weights in "
    "their stored dtype, which megatron.cpp computes with");
constexpr FlagRule kQkClip = accept(
    "QK-clip rescales the query and key weights in training (Muon): the checkpoint holds the "
    "rescaled weights");
constexpr FlagRule kLayerWiseOnly = accept(
    "lays out the buffers of Megatron's layer-wise distributed optimizer (--optimizer muon with "
    "--use-distributed-optimizer): no effect without it, which megatron-train refuses");
constexpr FlagRule kLionOnly = accept(
    "tunes the Lion optimizer: no effect without --optimizer lion, which megatron-train "
    "refuses");
constexpr FlagRule kFimOnly = accept(
    "fill-in-the-middle samples are GPT's (pretrain_gpt.py, --model gpt): the other models' "
    "datasets do not read it");
constexpr FlagRule kFlightRecorder = accept(
    "PyTorch's NCCL flight recorder (communication traces for hang debugging): not recorded "
    "here");
constexpr FlagRule kAsyncSave = accept(
    "tunes asynchronous checkpoint saving: megatron-train saves synchronously, the same "
    "checkpoint");
constexpr FlagRule kCheckpointIo = accept(
    "how Megatron's torch_dist loader shares or checks the reading of shards: the same tensors "
    "are loaded");
constexpr FlagRule kRoutingTrace =
    accept("traces MoE routing decisions to files for analysis: not written here");
constexpr FlagRule kInferenceLogging =
    accept("logging of Megatron's inference server (per step, per request, to W&B): not done here");
constexpr const char* kWeightShards =
    "generalized tensor parallelism's weight shards (--tensor-parallel-num-weight-shards)";
constexpr const char* kAttentionVariants =
    "experimental attention variants (gated delta net linear attention, DeepSeek sparse "
    "attention)";
constexpr const char* kMup = "muP (maximal-update parametrization) multipliers";
constexpr const char* kKitchenAttention = "kitchen quantized attention";
constexpr const char* kWeightLayout =
    "this expert / MLP weight layout (grouped or GLU-interleaved weights)";
constexpr const char* kHybridCp =
    "hybrid context parallelism over packed variable-length sequences";
constexpr const char* kFp4 = "FP4 training";
constexpr const char* kRl = "reinforcement learning (GRPO) training (train_rl.py)";
constexpr const char* kLogitsDistillation = "saving a teacher's logits and distilling from them";
constexpr const char* kFaultInjector = "NVIDIA's fault injector (resiliency testing)";
constexpr const char* kDebugDumps =
    "dumping parameters, activations, gradients or routing to files during training";

constexpr CatalogueEntry kCatalogue[] = {
    // transformer configuration
    {"--tensor-parallel-num-weight-shards", refuse(kWeightShards, "1")},
    {"--expert-tensor-parallel-num-weight-shards", refuse(kWeightShards, "1")},
    {"--max-seqlen-per-dp-cp-rank", refuse(kHybridCp), kTrainingSchedule},
    {"--hybrid-context-parallel", refuse(kHybridCp), kTrainingSchedule},
    {"--overlap-moe-expert-parallel-comm", kCommBackend},
    {"--overlap-dispatch-backward-with-experts-wgrad", kCommBackend},
    {"--ep-overlap-early-attn-memory-release", kCommBackend},
    {"--high-priority-a2a-comm-stream", kCommBackend},
    {"--mtp-standalone", refuse(kMtp)},
    {"--mtp-use-repeated-layer", refuse(kMtp)},
    {"--mtp-detach-heads", refuse(kMtp)},
    {"--mtp-hybrid-override-pattern", refuse(kMtp)},
    {"--cpu-offloading-num-layers", kOffload},
    {"--cpu-offloading-retain-pinned-cpu-buffers", kOffload},
    {"--fine-grained-activation-offloading", kOffload},
    {"--offload-modules", kOffload},
    {"--min-offloaded-tensor-size", kOffload},
    {"--delay-offload-until-cuda-graph", kOffload},
    {"--delta-offload-bytes-across-pp-ranks", kOffload},
    {"--activation-offload-fraction", kOffload},
    {"--fine-grained-offloading-max-inflight-offloads", kOffload},
    {"--moe-paged-stash", kOffload},
    {"--moe-paged-stash-page-size", kOffload},
    {"--moe-paged-stash-buffer-size-factor-cuda", kOffload},
    {"--moe-paged-stash-buffer-size-factor-cpu", kOffload},
    {"--mlp-chunks-for-training",
     accept("splits the MLP's training sequence into chunks to save memory: the same math")},
    {"--flash-attention-version",
     accept("a flash-attention kernel version: the CPU's attention computes the same")},
    {"--qk-clip", refuse("QK-clip (rescaling the query and key weights in training)"), kQkClip},
    {"--qk-clip-alpha", kQkClip},
    {"--qk-clip-threshold", kQkClip},
    {"--attention-output-gate", refuse("gated attention output (Qwen3-Next)")},
    {"--experimental-attention-variant", refuse(kAttentionVariants)},
    {"--dsa-indexer-n-heads", refuse(kAttentionVariants)},
    {"--dsa-indexer-head-dim", refuse(kAttentionVariants)},
    {"--dsa-indexer-topk", refuse(kAttentionVariants)},
    {"--dsa-indexer-topk-freq", refuse(kAttentionVariants)},
    {"--dsa-indexer-skip-topk-offset", refuse(kAttentionVariants)},
    {"--dsa-indexer-loss-coeff", refuse(kAttentionVariants)},
    {"--dsa-indexer-use-sparse-loss", refuse(kAttentionVariants)},
    {"--dsa-kernel-backend", refuse(kAttentionVariants)},
    {"--dsa-indexer-rope-interleaved", refuse(kAttentionVariants)},
    {"--no-dsa-indexer-rotate-activation", refuse(kAttentionVariants)},
    {"--no-dsa-indexer-scoring-relu", refuse(kAttentionVariants)},
    {"--dsa-indexer-k-norm-epsilon", refuse(kAttentionVariants)},
    {"--dsa-indexer-k-norm-fp32", refuse(kAttentionVariants)},
    {"--linear-attention-freq", refuse(kAttentionVariants)},
    {"--linear-conv-kernel-dim", refuse(kAttentionVariants)},
    {"--linear-key-head-dim", refuse(kAttentionVariants)},
    {"--linear-value-head-dim", refuse(kAttentionVariants)},
    {"--linear-num-key-heads", refuse(kAttentionVariants)},
    {"--linear-num-value-heads", refuse(kAttentionVariants)},
    {"--embedding-init-method-std",
     refuse("a separate initialisation for the embedding (--embedding-init-method-std)"),
     kFromCheckpoint},
    {"--use-mup", refuse(kMup)},
    {"--mup-width-mult", accept("muP's width multiplier is --hidden-size / --mup-base-hidden-size "
                                "(TransformerConfig computes it over the flag)")},
    {"--mup-base-hidden-size", refuse(kMup)},
    {"--mup-embedding-mult", refuse(kMup)},
    {"--mup-output-mult", refuse(kMup)},
    {"--mup-base-head-dim", refuse(kMup)},
    {"--mup-attn-scale-power", refuse(kMup)},
    {"--use-fused-weighted-squared-relu", kFusion},
    {"--fused-residual-rmsnorm", kFusion},
    {"--use-transformer-engine-op-fuser", kFusion},
    {"--use-te-activation-func", kFusion},
    {"--moe-router-fusion", kFusion},
    {"--moe-permute-fusion-into-hybridep", kFusion},
    {"--fp8-quantizer-factory", refuse(kFp8), kLowPrecisionRecipe},
    {"--fp8-output-proj", refuse(kFp8), kLowPrecisionRecipe},
    {"--fp4-format", refuse(kFp4), kLowPrecisionRecipe},
    {"--fp4-recipe", refuse(kFp4), kLowPrecisionRecipe},
    {"--fp4-quantizer-factory", refuse(kFp4), kLowPrecisionRecipe},
    {"--use-kitchen-attention", refuse(kKitchenAttention)},
    {"--kitchen-attention-backend", refuse(kKitchenAttention)},
    {"--moe-shared-expert-gate", refuse("a gated shared expert (Qwen2-MoE)")},
    {"--use-grouped-gemm-for-shared-expert", refuse(kWeightLayout)},
    {"--use-grouped-gemm-for-dense-mlp", refuse(kWeightLayout)},
    {"--moe-shared-expert-glu-interleave-size", refuse(kWeightLayout)},
    {"--moe-mlp-glu-interleave-size", refuse(kWeightLayout)},
    {"--moe-single-grouped-weight", refuse(kWeightLayout)},
    {"--moe-single-grouped-bias", refuse(kWeightLayout)},
    {"--moe-enable-routing-replay", refuse("replaying recorded MoE routing decisions (RL)"),
     accept("replays recorded routing decisions in reinforcement-learning training; inference "
            "routes as the router computes")},
    {"--moe-router-padding-for-quantization", refuse(kMoE)},
    {"--moe-router-quantile-balancing-ema", refuse(kMoE)},
    {"--moe-router-force-biased", refuse(kMoE)},
    {"--moe-latent-size", refuse("MoE latent projections")},
    {"--moe-expert-rank-capacity-factor", refuse(kMoE)},
    {"--moe-flex-dispatcher-backend", kCommBackend},
    {"--moe-hybridep-pad-uneven-dispatch-inputs", kCommBackend},
    {"--moe-flex-dispatcher-num-sms", kCommBackend},
    {"--moe-hybridep-num-sms", kCommBackend},
    {"--moe-hybridep-num-blocks-permute", kCommBackend},
    {"--moe-hybridep-num-blocks-unpermute", kCommBackend},
    {"--moe-hybridep-num-sms-preprocessing", kCommBackend},
    {"--moe-ncclep-static-shape", kCommBackend},
    {"--moe-ncclep-zero-copy", kCommBackend},
    {"--moe-pad-experts-for-cuda-graph-inference", kCudaGraph},
    {"--cuda-graph-impl", kCudaGraph},
    {"--inference-cuda-graph-scope", kCudaGraph},
    {"--batch-invariant-mode",
     accept("batch-invariant GPU kernels (the same result whatever the batch): the same math")},
    {"--inference-fuse-tp-communication", kInferenceKernels},
    {"--inference-disable-triton-nvls-kernels", kInferenceKernels},
    {"--inference-grouped-gemm-backend", kInferenceKernels},
    {"--inference-moe-disable-fused-quant-kernels", kInferenceKernels},
    {"--inference-moe-token-dispatcher-type", kInferenceKernels},
    {"--cache-mla-latents",
     accept("caches multi-latent attention's latents in inference: the same attention (and "
            "megatron.cpp always caches them)")},
    {"--mla-down-proj-fusion",
     accept("fuses multi-latent attention's q and kv down-projections on the GPU: the same "
            "products")},
    {"--hybrid-layer-pattern", refuse(kMamba)},
    {"--megatron-fsdp-main-params-dtype", kFsdpOnly},
    {"--megatron-fsdp-main-grads-dtype", kFsdpOnly},
    {"--megatron-fsdp-grad-comm-dtype", kFsdpOnly},
    {"--megatron-fsdp-enable-fine-grained-param-gather", kFsdpOnly},
    {"--megatron-fsdp-max-pool-double-buffer", kFsdpOnly},
    {"--fsdp-db-use-persist-buf-on-alloc-fail", kFsdpOnly},
    // regularization
    {"--apply-wd-to-qk-layernorm", refuse("weight decay on the q/k layer norms"), kTrainingOnly},
    {"--no-weight-decay-cond-type", refuse("weight decay on the q/k layer norms"), kTrainingOnly},
    {"--muon-momentum", kDefined, kTrainingOnly},
    {"--muon-no-split-qkv", kDefined, kTrainingOnly},
    {"--muon-nesterov", kDefined, kTrainingOnly},
    {"--muon-scale-mode", kDefined, kTrainingOnly},
    {"--muon-fp32-matmul-prec", kDefined, kTrainingOnly},
    {"--muon-coefficient-type", kDefined, kTrainingOnly},
    {"--muon-num-ns-steps", kDefined, kTrainingOnly},
    {"--muon-tp-mode", kDefined, kTrainingOnly},
    {"--muon-extra-scale-factor", kDefined, kTrainingOnly},
    {"--muon-scalar-optimizer", refuse("Lion beside Muon (--muon-scalar-optimizer lion)"),
     kTrainingOnly},
    {"--lion-beta1", kLionOnly, kTrainingOnly},
    {"--lion-beta2", kLionOnly, kTrainingOnly},
    // profiling
    {"--pytorch-profiler-collect-shapes", kProfiling, kTrainingOnly},
    {"--pytorch-profiler-collect-callstack", kProfiling, kTrainingOnly},
    {"--pytorch-profiler-collect-chakra", kProfiling, kTrainingOnly},
    {"--record-shapes", kProfiling, kTrainingOnly},
    {"--nvtx-ranges", kProfiling},
    // training
    {"--step-batch-size-schedule", kDefined, kTrainingOnly},
    {"--gpu-sniff-test-interval",
     accept("GPU performance sniff tests (GEMMs, all-to-all) that flag slow ranks: nothing to "
            "measure here"),
     kTrainingOnly},
    {"--exit-signal", refuse("another signal than SIGTERM for --exit-signal-handler", "SIGTERM"),
     kTrainingOnly},
    {"--exit-signal-handler-for-dataloader",
     accept("signal handling in data-loader worker processes: megatron-train has none"),
     kTrainingOnly},
    {"--exit-signal-handler-for-training",
     accept("ends training quietly on SIGINT or SIGTERM instead of with a Python traceback: "
            "there is no traceback here"),
     kTrainingOnly},
    {"--optimizer-cuda-graph", kCudaGraph, kTrainingOnly},
    {"--dump-param-to-param-group-map",
     refuse("parameter groups from a file (--dump-param-to-param-group-map)"), kTrainingOnly},
    // rl
    {"--perform-rl-step", refuse(kRl), kTrainingOnly},
    {"--rl-prompts-per-eval", refuse(kRl), kTrainingOnly},
    {"--grpo-prompts-per-step", refuse(kRl), kTrainingOnly},
    {"--grpo-group-size", refuse(kRl), kTrainingOnly},
    {"--rl-generation-lag", refuse(kRl), kTrainingOnly},
    {"--rl-submission-granularity", refuse(kRl), kTrainingOnly},
    {"--rl-consumption-granularity", refuse(kRl), kTrainingOnly},
    {"--grpo-iterations", refuse(kRl), kTrainingOnly},
    {"--grpo-clamp-eps-lower", refuse(kRl), kTrainingOnly},
    {"--grpo-clamp-eps-upper", refuse(kRl), kTrainingOnly},
    {"--grpo-kl-beta", refuse(kRl), kTrainingOnly},
    {"--grpo-entropy-term-weight", refuse(kRl), kTrainingOnly},
    {"--grpo-filter-groups-with-same-reward", refuse(kRl), kTrainingOnly},
    {"--langrl-env-config", refuse(kRl), kTrainingOnly},
    {"--rl-default-temperature", refuse(kRl), kTrainingOnly},
    {"--rl-default-top-p", refuse(kRl), kTrainingOnly},
    {"--rl-default-top-k", refuse(kRl), kTrainingOnly},
    {"--rl-offload-optimizer-during-inference", refuse(kRl), kTrainingOnly},
    {"--rl-kv-cache-management-mode", refuse(kRl), kTrainingOnly},
    {"--rl-persist-cuda-graphs", refuse(kRl), kTrainingOnly},
    {"--no-rl-persist-cuda-graphs", refuse(kRl), kTrainingOnly},
    {"--rl-partial-rollouts", refuse(kRl), kTrainingOnly},
    {"--no-rl-partial-rollouts", refuse(kRl), kTrainingOnly},
    {"--rl-inference-logprobs-is-correction", refuse(kRl), kTrainingOnly},
    {"--no-rl-inference-logprobs-is-correction", refuse(kRl), kTrainingOnly},
    {"--rl-importance-sampling-truncation-coef", refuse(kRl), kTrainingOnly},
    {"--rl-use-sequence-packing", refuse(kRl), kTrainingOnly},
    {"--no-rl-use-sequence-packing", refuse(kRl), kTrainingOnly},
    {"--rl-sequence-packing-max-sequences-per-bin", refuse(kRl), kTrainingOnly},
    {"--rl-sequence-packing-algo", refuse(kRl), kTrainingOnly},
    {"--rl-training-cuda-graphs", refuse(kRl), kTrainingOnly},
    {"--no-rl-training-cuda-graphs", refuse(kRl), kTrainingOnly},
    {"--rl-inference-tensor-model-parallel-size", refuse(kRl), kTrainingOnly},
    {"--rl-inference-pipeline-model-parallel-size", refuse(kRl), kTrainingOnly},
    {"--rl-inference-expert-model-parallel-size", refuse(kRl), kTrainingOnly},
    {"--rl-inference-expert-tensor-model-parallel-size", refuse(kRl), kTrainingOnly},
    {"--rl-inference-model-unified-memory-level", refuse(kRl), kTrainingOnly},
    {"--rl-offload-inference-model-weights-when-idle", refuse(kRl), kTrainingOnly},
    {"--no-rl-offload-inference-model-weights-when-idle", refuse(kRl), kTrainingOnly},
    {"--refit-method", refuse(kRl), kTrainingOnly},
    {"--rl-verify-model-weights-swap", refuse(kRl), kTrainingOnly},
    {"--no-rl-verify-model-weights-swap", refuse(kRl), kTrainingOnly},
    {"--rl-skip-bos-token", refuse(kRl), kTrainingOnly},
    {"--no-rl-skip-bos-token", refuse(kRl), kTrainingOnly},
    {"--rl-profile", refuse(kRl), kTrainingOnly},
    {"--rl-profile-dir", refuse(kRl), kTrainingOnly},
    {"--rl-inference-parsers", refuse(kRl), kTrainingOnly},
    // learning rate
    {"--freeze-all-layers", refuse("freezing every layer (--freeze-all-layers)"), kTrainingOnly},
    // checkpointing
    {"--save-params-interval", refuse(kDebugDumps), kTrainingOnly},
    {"--save-activations-interval", refuse(kDebugDumps), kTrainingOnly},
    {"--save-tokens-per-expert-interval", refuse(kDebugDumps), kTrainingOnly},
    {"--save-wgrads-interval", refuse(kDebugDumps), kTrainingOnly},
    {"--save-dgrads-interval", refuse(kDebugDumps), kTrainingOnly},
    {"--save-retain-interval", kDefined, kTrainingOnly},
    {"--load-main-params-from-ckpt",
     refuse("loading fp32 main parameters without the optimizer state "
            "(--load-main-params-from-ckpt)"),
     kTrainingOnly},
    {"--async-strategy", kAsyncSave, kTrainingOnly},
    {"--async-ckpt-cpu-priority", kAsyncSave, kTrainingOnly},
    {"--async-ckpt-io-priority", kAsyncSave, kTrainingOnly},
    {"--async-ckpt-use-cpu-shm", kAsyncSave, kTrainingOnly},
    {"--dist-ckpt-workers", kAsyncSave, kTrainingOnly},
    {"--ckpt-fully-parallel-load-exchange-algo", kCheckpointIo},
    {"--ckpt-fully-parallel-save-process-group",
     accept("how the ranks share writing a torch_dist checkpoint: the same tensors are saved"),
     kTrainingOnly},
    {"--ckpt-fully-parallel-load-process-group", kCheckpointIo},
    {"--no-ckpt-load-validate-sharding-integrity", kCheckpointIo},
    {"--no-strict-fsdp-dtensor-load", kFsdpOnly},
    {"--dist-ckpt-save-pre-mcore-014",
     refuse("torch_dist checkpoints in the layout before Megatron-core 0.14"), kTrainingOnly},
    {"--dist-ckpt-optim-fully-reshardable", kDefined, kTrainingOnly},
    {"--distrib-optim-fully-reshardable-mem-efficient",
     accept("saves the fully reshardable optimizer state through one rank to spare memory: the "
            "same checkpoint"),
     kTrainingOnly},
    {"--verify-integrity", kDefined,
     refuse("checking a checkpoint's files against its integrity manifest in megatron-generate "
            "and megatron-eval (megatron-train checks them)")},
    {"--no-stream-ckpt-dequant",
     accept("how Megatron dequantizes FP8 / FP4 parameters while loading: megatron.cpp's "
            "checkpoints hold none")},
    {"--override-ckpt-iteration",
     refuse("resuming at another iteration than the checkpoint's (--override-ckpt-iteration)"),
     kTrainingOnly},
    // mixed precision
    {"--mamba-training-ssm-states-dtype",
     refuse("Mamba training with SSM states below fp32", "fp32"), kTrainingOnly},
    // distributed init
    {"--use-megatron-fsdp", refuse(kFsdp), kTrainingOnly},
    {"--sharp-enabled-group", kNcclTuning, kTrainingOnly},
    {"--distributed-timeout-seconds-after-init",
     accept("a timeout for collectives after the first iteration: ranks wait on MPI here"),
     kTrainingOnly},
    {"--flight-recorder-dump-path", kFlightRecorder},
    {"--flight-recorder-trace-buffer-size", kFlightRecorder},
    {"--no-flight-recorder-dump-on-timeout", kFlightRecorder},
    {"--flight-recorder-include-stack-trace", kFlightRecorder},
    {"--no-flight-recorder-include-only-active", kFlightRecorder},
    {"--no-flight-recorder-extra-dump-on-exec", kFlightRecorder},
    {"--disable-jit-fuser", kFusion},
    {"--ddp-reduce-scatter-with-fp32-accumulation",
     accept("sends low-precision gradients and sums them in fp32: megatron-train's data-parallel "
            "reductions sum in fp32 always"),
     kTrainingOnly},
    {"--ddp-param-name-patterns-for-fp32-local-accumulation",
     accept("accumulates the named parameters' gradients in fp32: megatron-train accumulates "
            "every gradient in fp32"),
     kTrainingOnly},
    {"--no-use-layer-wise-param-layout", kLayerWiseOnly, kTrainingOnly},
    {"--disable-symmetric-registration", kNcclTuning, kTrainingOnly},
    {"--fsdp-manual-registration", kFsdpOnly, kTrainingOnly},
    {"--create-all-gather-group", kNcclTuning, kTrainingOnly},
    {"--outer-dp-sharding-strategy", kFsdpOnly, kTrainingOnly},
    {"--keep-fp8-transpose-cache", kFsdpOnly, kTrainingOnly},
    {"--enable-full-sharding-in-hsdp", kFsdpOnly, kTrainingOnly},
    {"--fake-process-group",
     refuse("a fake process group that skips all communication (memory profiling)")},
    // validation
    {"--start-eval-at-iter", refuse("starting evaluation at a later iteration"), kTrainingOnly},
    {"--eval-global-batch-size", kDefined, kTrainingOnly},
    {"--eval-micro-batch-size", kDefined, kTrainingOnly},
    {"--full-validation", refuse("evaluating the whole validation set each time"), kTrainingOnly},
    {"--multiple-validation-sets", refuse("separate losses for several validation sets"),
     kTrainingOnly},
    {"--validation-set-names", refuse("separate losses for several validation sets"),
     kTrainingOnly},
    // data and dataloader
    {"--phase-transition-iterations", refuse("training phases (--phase-transition-iterations)"),
     kTrainingOnly},
    {"--per-dataset-sequences-path",
     refuse("dataset sizes from a file (--per-dataset-sequences-path)"), kTrainingOnly},
    {"--dataloader-fast-cache-load",
     accept("loads the dataset indices from --data-cache-path without rebuilding checks: the "
            "same indices"),
     kTrainingOnly},
    {"--dataloader-defer-npy-index-mmap",
     accept("maps the dataset indices on first use: the same indices"), kTrainingOnly},
    {"--dataloader-inter-document-masking",
     refuse("attention restricted to each document of a sample (--dataloader-inter-document-"
            "masking)"),
     kTrainingOnly},
    {"--allow-ambiguous-pad-tokens",
     refuse("keeping pad tokens that share their id with another special token "
            "(--allow-ambiguous-pad-tokens)"),
     kTrainingOnly},
    {"--fim-data", kFimOnly, kTrainingOnly},
    {"--fim-rate", kFimOnly, kTrainingOnly},
    {"--fim-spm-rate", kFimOnly, kTrainingOnly},
    {"--fim-split-sample", kFimOnly, kTrainingOnly},
    {"--fim-fragment-rate", kFimOnly, kTrainingOnly},
    {"--fim-no-prefix", kFimOnly, kTrainingOnly},
    {"--fim-prefix-token", kFimOnly, kTrainingOnly},
    {"--fim-middle-token", kFimOnly, kTrainingOnly},
    {"--fim-suffix-token", kFimOnly, kTrainingOnly},
    {"--fim-pad-token", kFimOnly, kTrainingOnly},
    {"--fim-eod-token", kFimOnly, kTrainingOnly},
    // tokenizer
    {"--padded-vocab-size", kDefined},
    {"--no-pad-vocab-size", refuse("an unpadded vocabulary (--no-pad-vocab-size)")},
    {"--chat-template",
     accept("the tokenizer's chat template, which only chat requests render (megatron-generate's "
            "chat endpoint reads it): pretraining and the evaluation tasks never do")},
    // logging
    {"--log-memory-interval",
     accept("reports GPU memory every N iterations: megatron-train reports none"), kTrainingOnly},
    {"--log-device-memory-used", accept("logs GPU memory (nvidia-smi): no GPU here"),
     kTrainingOnly},
    {"--log-max-attention-logit",
     accept("a TensorBoard scalar (the largest attention logit): not written here"), kTrainingOnly},
    {"--wandb-entity", kWandb, kTrainingOnly},
    {"--moe-routing-trace-path", kRoutingTrace},
    {"--moe-routing-trace-max-training-iters", kRoutingTrace},
    {"--moe-routing-trace-capture-logits", kRoutingTrace},
    {"--moe-routing-trace-capture-hidden-states", kRoutingTrace},
    {"--moe-routing-trace-dump-weights", kRoutingTrace},
    // Logits Distillation
    {"--logits-save-top-k", refuse(kLogitsDistillation), kTrainingOnly},
    {"--logits-save-top-p", refuse(kLogitsDistillation), kTrainingOnly},
    {"--logits-save-top-p-min-k", refuse(kLogitsDistillation), kTrainingOnly},
    {"--logits-save-dir", refuse(kLogitsDistillation), kTrainingOnly},
    {"--logits-save-dtype", refuse(kLogitsDistillation), kTrainingOnly},
    {"--logits-load-dir", refuse(kLogitsDistillation), kTrainingOnly},
    {"--logits-load-decode-threads", refuse(kLogitsDistillation), kTrainingOnly},
    {"--logits-load-prefetch-factor", refuse(kLogitsDistillation), kTrainingOnly},
    {"--logits-load-msc-prefetch-depth", refuse(kLogitsDistillation), kTrainingOnly},
    {"--logits-load-kd-loss-alpha", refuse(kLogitsDistillation), kTrainingOnly},
    {"--logits-load-ignore-errors", refuse(kLogitsDistillation), kTrainingOnly},
    // inference
    {"--cuda-graph-modules", kCudaGraph},
    {"--use-legacy-static-engine", kInferenceOnly,
     accept("Megatron's static inference engine: megatron-generate computes the same tokens")},
    {"--inference-dynamic-batching-paused-buffer-size-gb", kInferenceOnly, kDynamicBatching},
    {"--inference-dynamic-batching-mamba-memory-ratio", kInferenceOnly, kDynamicBatching},
    {"--inference-dynamic-batching-block-size", kInferenceOnly, kDynamicBatching},
    {"--inference-dynamic-batching-max-requests", kInferenceOnly, kDynamicBatching},
    {"--inference-dynamic-batching-max-tokens", kInferenceOnly, kDynamicBatching},
    {"--inference-dynamic-batching-num-cuda-graphs", kInferenceOnly, kCudaGraph},
    {"--inference-dynamic-batching-track-paused-request-events", kInferenceOnly, kInferenceLogging},
    {"--inference-dynamic-batching-track-generated-token-events", kInferenceOnly,
     kInferenceLogging},
    {"--decode-only-cuda-graphs", kInferenceOnly, kCudaGraph},
    {"--inference-cuda-graph-all-prefills", kInferenceOnly, kCudaGraph},
    {"--inference-cuda-graph-max-tokens", kInferenceOnly, kCudaGraph},
    {"--inference-dynamic-batching-unified-memory-level", kInferenceOnly, kDynamicBatching},
    {"--enable-chunked-prefill", kInferenceOnly,
     accept("prefills long prompts in chunks: the same attention over the same cache")},
    {"--num-speculative-tokens", kInferenceOnly, refuse("speculative decoding")},
    {"--inference-dynamic-batching-prefix-caching", kInferenceOnly, kDynamicBatching},
    {"--no-inference-dynamic-batching-prefix-caching", kInferenceOnly, kDynamicBatching},
    {"--inference-dynamic-batching-prefix-caching-eviction-policy", kInferenceOnly,
     kDynamicBatching},
    {"--inference-dynamic-batching-prefix-caching-coordinator-policy", kInferenceOnly,
     kDynamicBatching},
    {"--inference-dynamic-batching-prefix-caching-routing-alpha", kInferenceOnly, kDynamicBatching},
    {"--inference-dynamic-batching-prefix-caching-mamba-gb", kInferenceOnly, kDynamicBatching},
    {"--inference-dynamic-batching-cuda-graph-mixed-prefill-count", kInferenceOnly, kCudaGraph},
    {"--inference-dynamic-batching-cuda-graph-sizing-distribution", kInferenceOnly, kCudaGraph},
    {"--inference-dynamic-batching-sampling-backend", kInferenceOnly, kInferenceKernels},
    {"--use-same-sampling-seed-across-dp-ranks", kInferenceOnly, kOneProcess},
    {"--inference-dynamic-batching-async-sched-mode", kInferenceOnly, kDynamicBatching},
    {"--inference-dynamic-batching-logprobs-mode", kInferenceOnly,
     refuse("log-probs after sampling's processing (temperature, top-k / top-p)", "raw_logprobs")},
    {"--inference-logging-step-interval", kInferenceOnly, kInferenceLogging},
    {"--inference-text-gen-server-logging", kInferenceOnly, kInferenceLogging},
    {"--no-inference-text-gen-server-logging", kInferenceOnly, kInferenceLogging},
    {"--inference-wandb-logging", kInferenceOnly, kInferenceLogging},
    {"--no-inference-wandb-logging", kInferenceOnly, kInferenceLogging},
    {"--inference-coordinator-port", kInferenceOnly,
     accept("the port of Megatron's multi-node inference coordinator: megatron-generate serves "
            "from one process")},
    {"--mamba-inference-conv-states-dtype", kInferenceOnly,
     accept("the dtype Megatron's inference engine keeps Mamba states in: megatron-generate "
            "keeps them in fp32 whatever is given")},
    {"--mamba-inference-ssm-states-dtype", kInferenceOnly,
     accept("the dtype Megatron's inference engine keeps Mamba states in: megatron-generate "
            "keeps them in fp32 whatever is given")},
    {"--inference-use-synchronous-zmq-collectives", kInferenceOnly, kOneProcess},
    {"--no-inference-use-synchronous-zmq-collectives", kInferenceOnly, kOneProcess},
    {"--inference-disable-ep-consensus", kInferenceOnly, kOneProcess},
    {"--no-inference-disable-ep-consensus", kInferenceOnly, kOneProcess},
    {"--inference-shards", kInferenceOnly,
     refuse("inference shards with their own parallel layouts (--inference-shards)")},
    // Transformer-Engine
    {"--fp4-param-gather", refuse(kFp4), kLowPrecisionRecipe},
    {"--te-precision-config-file", refuse("per-module precision overrides (Transformer Engine)")},
    // ft_package
    {"--ft-num-warmup-iters", kFaultTolerance},
    // msc
    {"--enable-msc",
     refuse("the Multi-Storage Client (object-storage paths such as msc:// and s3://)")},
    // modelopt-generic (pretrain_gpt.py's and pretrain_mamba.py's ModelOpt flags)
    {"--export-default-te-spec", refuse(kModelOpt)},
    {"--export-kd-teacher-model-config", refuse(kModelOpt)},
    {"--qad-train-target", refuse(kModelOpt)},
    {"--freeze-base-for-mtp", refuse(kModelOpt)},
    {"--export-offline-model", refuse(kModelOpt)},
    {"--modelopt-enabled", refuse(kModelOpt)},
    {"--enable-gpt-oss", refuse(kModelOpt)},
    // fault injector: every flag's default is None (no faults)
    {"--fault-injector-ranks", refuse(kFaultInjector), kTrainingOnly},
    {"--fault-injector-num-ranks", refuse(kFaultInjector), kTrainingOnly},
    {"--fault-injector-fault-types", refuse(kFaultInjector), kTrainingOnly},
    {"--fault-injector-fault-probabilities", refuse(kFaultInjector), kTrainingOnly},
    {"--fault-injector-fault-delay", refuse(kFaultInjector), kTrainingOnly},
    {"--fault-injector-delay-start-iteration", refuse(kFaultInjector), kTrainingOnly},
    {"--fault-injector-mtti-seconds", refuse(kFaultInjector), kTrainingOnly},
    {"--fault-injector-offset-seconds", refuse(kFaultInjector), kTrainingOnly},
    {"--fault-injector-seed", refuse(kFaultInjector), kTrainingOnly},
};

}  // namespace

std::span<const CatalogueEntry> newer_catalogue() {
    return kCatalogue;
}

}  // namespace mt::cli::detail
