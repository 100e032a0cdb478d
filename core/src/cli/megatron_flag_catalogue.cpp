// What megatron-train (a training tool) and megatron-generate / megatron-eval (inference tools)
// do with each Megatron flag they do not define themselves. A flag is accepted only when it
// changes nothing here (the text says what it does in Megatron and why nothing changes); one
// that would change results is refused, unless it is given with Megatron's default.
#include "megatron_flag_catalogue.h"

namespace mt::cli::detail {

namespace {

constexpr FlagRule accept(const char* why) {
    return {FlagStatus::accepted, why};
}
constexpr FlagRule refuse(const char* capability, const char* also_harmless = nullptr) {
    return {FlagStatus::refused, capability, also_harmless};
}
constexpr FlagRule refuse_unless(const char* capability, const char* unless) {
    return {FlagStatus::refused, capability, nullptr, unless};
}
constexpr FlagRule invalid(const char* message, const char* unless = nullptr) {
    return {FlagStatus::invalid, message, nullptr, unless};
}
// The training tool defines the flag itself.
constexpr FlagRule kDefined{FlagStatus::implemented};

// Capabilities megatron.cpp lacks (refused).
constexpr const char* kPipeline = "pipeline parallelism";
constexpr const char* kMoE = "this MoE (Mixture of Experts) option";
constexpr const char* kT5 = "T5 / encoder-decoder models";
constexpr const char* kMamba = "Mamba hybrid models";
constexpr const char* kBertEmbeddings = "BERT embeddings (Retro's embedder)";
constexpr const char* kVision = "vision models";
constexpr const char* kRetro = "Retro models";
constexpr const char* kRetriever = "ICT / biencoder retriever models and tasks";
constexpr const char* kMla = "multi-latent attention (DeepSeek models)";
constexpr const char* kMtp = "multi-token prediction (MTP)";
constexpr const char* kFp8 = "FP8 training";
constexpr const char* kFsdp = "FSDP (fully sharded data parallelism)";
constexpr const char* kNonPersistent = "non-persistent (global / local / in-memory) checkpoints";
constexpr const char* kTikTokenOnly =
    "read only by the TikToken tokenizer, which --tokenizer-type TikTokenizer refuses (not "
    "supported yet)";
constexpr const char* kRerun = "Megatron's re-run engine (result validation, error injection)";
constexpr const char* kLegacy = "Megatron's legacy (non-core) models";
constexpr const char* kHeterogeneous = "heterogeneous layers (Llama-Nemotron configurations)";
constexpr const char* kLowPrecisionOptimizer =
    "optimizer state or main weights below fp32 (the precision-aware optimizer's dtypes)";
constexpr const char* kKitchen = "kitchen quantization";
constexpr const char* kModelOpt =
    "NVIDIA ModelOpt (TensorRT Model Optimizer) export, quantization, distillation and "
    "speculative-decoding heads";
constexpr const char* kSft = "SFT (supervised fine-tuning) training";

// Reasons a flag changes nothing here (accepted).
constexpr FlagRule kTrainingOnly = accept("only used by training");
constexpr FlagRule kInferenceOnly =
    accept("only used by text generation (Megatron's training does not read it)");
constexpr FlagRule kOneProcess = accept(
    "megatron-generate and megatron-eval's zero-shot tasks run as one process and read the "
    "checkpoint whole, whatever parallel layout saved it (megatron-eval's finetuning has no "
    "pipeline stages)");
constexpr FlagRule kFromCheckpoint = accept("the weights come from the checkpoint");
constexpr FlagRule kFusion =
    accept("a GPU kernel fusion: the CPU kernels compute the same math unfused");
constexpr FlagRule kTpOverlap = accept(
    "overlaps tensor-parallel communication with GEMMs (Transformer Engine userbuffers): "
    "the same results");
constexpr FlagRule kPipelineOnly = accept(
    "tunes when pipeline stages post their sends and receives: megatron.cpp sends each output "
    "as soon as it exists and posts receives ahead, which computes the same");
constexpr FlagRule kContextOnly = accept(
    "chooses how context-parallel ranks exchange keys and values (p2p, a2a, allgather): "
    "megatron.cpp always passes them around the ring (p2p), which computes the same attention");
constexpr FlagRule kFsdpOnly =
    accept("tunes FSDP: no effect without FSDP, which megatron.cpp refuses");
constexpr FlagRule kNcclTuning =
    accept("tunes NCCL communication: the same reductions (ranks talk over MPI on the CPU)");
constexpr FlagRule kCudaGraph =
    accept("CUDA graph capture: nothing to capture on the CPU backend; the same computation");
constexpr FlagRule kProfiling =
    accept("profiling hooks (nsys, the PyTorch profiler): nothing to profile through here");
constexpr FlagRule kCpuOffload = accept(
    "offloads the optimizer state and step to the CPU: megatron-train's optimizer runs "
    "on the CPU already, the same Adam step");
constexpr FlagRule kPythonGc = accept("Python garbage collection: there is none here");
constexpr FlagRule kStraggler =
    accept("detection of slow GPUs (straggler detector): nothing to measure here");
constexpr FlagRule kOneLogger =
    accept("NVIDIA's one-logger end-to-end metrics (internal): not collected here");
constexpr FlagRule kInprocessRestart = accept(
    "NVIDIA's in-process restart after failures (nvidia-resiliency-ext): a failure ends "
    "the run here");
constexpr FlagRule kFaultTolerance =
    accept("NVIDIA's fault-tolerance package (internal): not used here");
constexpr FlagRule kTimers = accept(
    "where or how Megatron's timers report: megatron-train prints them (--timing-log-level) "
    "without a barrier before level-1 timers, and not to TensorBoard");
constexpr FlagRule kWandb = accept("Weights & Biases logging: not available here (TensorBoard is)");
constexpr FlagRule kDeprecatedIgnored = accept("deprecated: Megatron ignores it too");

constexpr CatalogueEntry kCatalogue[] = {
    // network size
    {"--encoder-num-layers", refuse(kT5)},
    {"--decoder-num-layers", refuse(kT5)},
    {"--attention-backend", kDefined,
     accept("an attention kernel choice: the CPU's flash-style kernel computes the same "
            "attention")},
    {"--relative-attention-num-buckets", refuse(kT5)},
    {"--relative-attention-max-distance", refuse(kT5)},
    {"--use-rotary-position-embeddings",
     refuse_unless("--use-rotary-position-embeddings (deprecated in Megatron) without "
                   "--position-embedding-type rope: give --position-embedding-type rope",
                   "position-embedding-type=rope")},
    {"--rotary-seq-len-interpolation-factor", refuse("rotary sequence-length interpolation")},
    {"--rope-scaling-factor", refuse("Llama 3.x rope scaling (--use-rope-scaling)")},
    {"--no-rope-freq", refuse("layers without rotary embedding (--no-rope-freq)")},
    {"--no-position-embedding",
     invalid("--no-position-embedding is deprecated, use --position-embedding-type",
             "position-embedding-type=rope")},
    {"--mrope-section", refuse("multimodal rotary embedding (mrope)")},
    {"--onnx-safe",
     accept("a workaround for the ONNX exporter in Megatron's legacy models; Megatron-core "
            "models ignore it")},
    {"--bert-no-binary-head",
     invalid("--bert-no-binary-head is a BERT flag (pretrain_bert.py's): give --model bert")},
    {"--multi-latent-attention", refuse(kMla)},
    {"--mtp-num-layers", refuse(kMtp)},
    {"--mtp-loss-scaling-factor", refuse(kMtp)},
    // regularization
    {"--weight-decay", kDefined, kTrainingOnly},
    {"--start-weight-decay", kDefined, kTrainingOnly},
    {"--end-weight-decay", kDefined, kTrainingOnly},
    {"--weight-decay-incr-style", kDefined, kTrainingOnly},
    {"--clip-grad", kDefined, kTrainingOnly},
    {"--adam-beta1", kDefined, kTrainingOnly},
    {"--adam-beta2", kDefined, kTrainingOnly},
    {"--adam-eps", kDefined, kTrainingOnly},
    {"--sgd-momentum", kDefined, kTrainingOnly},
    // training
    {"--micro-batch-size", kDefined, kTrainingOnly},
    {"--batch-size", invalid("--batch-size argument is no longer valid, use --micro-batch-size "
                             "instead")},
    {"--global-batch-size", kDefined, kTrainingOnly},
    {"--rampup-batch-size", refuse("batch-size ramp-up (--rampup-batch-size)"), kTrainingOnly},
    {"--decrease-batch-size-if-needed",
     refuse("decreasing the global batch size to fit the data-parallel size"), kTrainingOnly},
    {"--no-check-for-nan-in-loss-and-grad",
     refuse("training on past a NaN or Inf loss or gradient (megatron-train always stops)"),
     kTrainingOnly},
    {"--check-for-spiky-loss",
     refuse("the re-run engine's spiky-loss check (Megatron stops at a spiking loss)"),
     kTrainingOnly},
    {"--check-for-large-grads",
     refuse("the re-run engine's large-gradient check (Megatron stops at unexpectedly large "
            "gradients)"),
     kTrainingOnly},
    {"--distribute-saved-activations",
     accept("spreads recomputed layers' saved inputs over the tensor-parallel ranks to save "
            "memory: the same numbers"),
     kTrainingOnly},
    {"--no-clone-scatter-output-in-embedding",
     accept("a PyTorch memory detail of the embedding's output: the same numbers")},
    {"--profile", kProfiling, kTrainingOnly},
    {"--profile-step-start", kProfiling, kTrainingOnly},
    {"--profile-step-end", kProfiling, kTrainingOnly},
    {"--iterations-to-skip", refuse("skipping training iterations (--iterations-to-skip)"),
     kTrainingOnly},
    {"--result-rejected-tracker-filename",
     accept("a file of the re-run engine's rejected results: the engine does not run here"),
     kTrainingOnly},
    {"--disable-gloo-process-groups", accept("megatron.cpp makes no Gloo process groups")},
    {"--use-pytorch-profiler", kProfiling, kTrainingOnly},
    {"--profile-ranks", kProfiling, kTrainingOnly},
    {"--record-memory-history", accept("CUDA memory-history snapshots: no CUDA allocator here"),
     kTrainingOnly},
    {"--memory-snapshot-path", accept("CUDA memory-history snapshots: no CUDA allocator here"),
     kTrainingOnly},
    {"--tp-comm-overlap", kTpOverlap, kTrainingOnly},
    {"--tp-comm-overlap-cfg", kTpOverlap, kTrainingOnly},
    {"--disable-tp-comm-overlap-ag", kTpOverlap, kTrainingOnly},
    {"--disable-tp-comm-overlap-rs", kTpOverlap, kTrainingOnly},
    {"--tp-comm-overlap-rs-dgrad", kTpOverlap, kTrainingOnly},
    {"--disable-tp-comm-bulk-dgrad", kTpOverlap, kTrainingOnly},
    {"--disable-tp-comm-bulk-wgrad", kTpOverlap, kTrainingOnly},
    {"--tp-comm-bootstrap-backend", kTpOverlap, kTrainingOnly},
    {"--use-cpu-initialization",
     accept("megatron-train always initialises each weight in full from the seed on the CPU, "
            "the same for every parallel layout"),
     kFromCheckpoint},
    {"--empty-unused-memory-level", accept("empties PyTorch's CUDA cache: no CUDA allocator here")},
    {"--deterministic-mode", accept("the CPU kernels are deterministic already")},
    {"--check-weight-hash-across-dp-replicas-interval",
     accept("checks that data-parallel replicas hold the same weights: a consistency check, "
            "not done here"),
     kTrainingOnly},
    {"--calculate-per-token-loss",
     refuse("the loss averaged over the global batch's tokens (--calculate-per-token-loss)"),
     kTrainingOnly},
    {"--train-sync-interval", accept("CPU-GPU synchronisation: the CPU backend runs synchronously"),
     kTrainingOnly},
    {"--train-iters", kDefined, kTrainingOnly},
    {"--train-samples", kDefined, kTrainingOnly},
    {"--log-interval", kDefined, kTrainingOnly},
    {"--exit-interval", kDefined, kTrainingOnly},
    {"--exit-duration-in-mins", kDefined, kTrainingOnly},
    {"--exit-signal-handler", kDefined, kTrainingOnly},
    {"--tensorboard-dir", kDefined, kTrainingOnly},
    {"--no-masked-softmax-fusion", kFusion},
    {"--no-bias-swiglu-fusion", kFusion},
    {"--no-bias-dropout-fusion", kFusion},
    {"--no-rope-fusion", kFusion},
    {"--cross-entropy-loss-fusion", kFusion},
    {"--cross-entropy-fusion-impl", kFusion},
    {"--use-flash-attn", kDefined,
     accept("the CPU attention is a flash-style kernel already: the same attention")},
    {"--optimizer", kDefined, kTrainingOnly},
    {"--optimizer-cpu-offload", kCpuOffload, kTrainingOnly},
    {"--optimizer-offload-fraction", kCpuOffload, kTrainingOnly},
    {"--use-torch-optimizer-for-cpu-offload", kCpuOffload, kTrainingOnly},
    {"--overlap-cpu-optimizer-d2h-h2d", kCpuOffload, kTrainingOnly},
    {"--no-pin-cpu-grads", kCpuOffload, kTrainingOnly},
    {"--no-pin-cpu-params", kCpuOffload, kTrainingOnly},
    {"--dataloader-type",
     refuse("the cyclic and external data loaders (megatron-train reads as 'single' does)",
            "single"),
     kTrainingOnly},
    {"--no-async-tensor-model-parallel-allreduce", kDeprecatedIgnored},
    {"--no-persist-layer-norm", accept("a layer-norm kernel choice: the same layer norm")},
    {"--sequence-parallel", kDefined,
     accept("no effect without tensor parallelism: megatron-generate runs as one process")},
    {"--no-gradient-accumulation-fusion",
     accept("a GPU kernel fusion that accumulates weight gradients straight into fp32 main "
            "grads, which megatron-train always does"),
     kTrainingOnly},
    {"--use-mcore-models",
     accept("deprecated: Megatron-core models are Megatron's default, and megatron.cpp's")},
    {"--use-legacy-models", refuse(kLegacy)},
    {"--manual-gc", kPythonGc},
    {"--manual-gc-interval", kPythonGc},
    {"--no-manual-gc-eval", kPythonGc},
    {"--disable-tp-comm-split-ag", kTpOverlap, kTrainingOnly},
    {"--disable-tp-comm-split-rs", kTpOverlap, kTrainingOnly},
    {"--pipeline-model-parallel-comm-backend", kPipelineOnly},
    {"--high-priority-stream-groups",
     accept("CUDA stream priorities of communicators: no CUDA streams here")},
    // rerun engine
    {"--error-injection-rate", refuse(kRerun), kTrainingOnly},
    {"--error-injection-type", refuse(kRerun), kTrainingOnly},
    {"--rerun-mode", refuse(kRerun), kTrainingOnly},
    // initialization
    {"--seed", kDefined, accept("zero-shot evaluation draws no random numbers")},
    {"--data-parallel-random-init", refuse("different initial weights on each data-parallel rank"),
     kTrainingOnly},
    {"--init-method-xavier-uniform", refuse("Xavier-uniform weight initialisation"),
     kFromCheckpoint},
    // learning rate
    {"--lr", kDefined, kTrainingOnly},
    {"--lr-decay-style", kDefined, kTrainingOnly},
    {"--lr-wsd-decay-style", kDefined, kTrainingOnly},
    {"--lr-decay-iters", kDefined, kTrainingOnly},
    {"--lr-decay-samples", kDefined, kTrainingOnly},
    {"--lr-wsd-decay-samples", kDefined, kTrainingOnly},
    {"--lr-wsd-decay-iters", kDefined, kTrainingOnly},
    {"--lr-warmup-fraction", kDefined, kTrainingOnly},
    {"--lr-warmup-iters", kDefined, kTrainingOnly},
    {"--lr-warmup-samples", kDefined, kTrainingOnly},
    {"--lr-warmup-init", kDefined, kTrainingOnly},
    {"--warmup", invalid("--warmup argument is no longer valid, use --lr-warmup-fraction "
                         "instead")},
    {"--min-lr", kDefined, kTrainingOnly},
    {"--override-opt_param-scheduler",
     accept("megatron-train always takes the learning-rate schedule's settings from the flags "
            "(only its step count from the checkpoint)"),
     kTrainingOnly},
    {"--use-checkpoint-opt_param-scheduler",
     refuse("taking the learning-rate schedule's settings from the checkpoint"), kTrainingOnly},
    {"--decoupled-lr", refuse("a separate learning rate for the input and output layers"),
     kTrainingOnly},
    {"--decoupled-min-lr", refuse("a separate learning rate for the input and output layers"),
     kTrainingOnly},
    // checkpointing
    {"--save", kDefined, kTrainingOnly},
    {"--save-interval", kDefined, kTrainingOnly},
    {"--persistent-save-interval", kDefined, kTrainingOnly},
    {"--no-save-optim", kDefined, kTrainingOnly},
    {"--no-save-rng", kDefined, kTrainingOnly},
    {"--no-load-optim", kDefined, kTrainingOnly},
    {"--no-load-rng", kDefined, kTrainingOnly},
    {"--non-persistent-save-interval", refuse(kNonPersistent), kTrainingOnly},
    {"--non-persistent-ckpt-type", refuse(kNonPersistent), kTrainingOnly},
    {"--non-persistent-global-ckpt-dir", refuse(kNonPersistent), kTrainingOnly},
    {"--non-persistent-local-ckpt-dir", refuse(kNonPersistent), kTrainingOnly},
    {"--non-persistent-local-ckpt-algo", refuse(kNonPersistent), kTrainingOnly},
    {"--finetune", kDefined, kTrainingOnly},
    {"--pretrained-checkpoint",
     accept("only read by Megatron's finetuning tasks (tasks/finetune_utils.py: megatron-eval "
            "--task RACE, MNLI, QQP), not by pretraining or text generation")},
    {"--ckpt-step", refuse("loading a chosen iteration instead of the latest (--ckpt-step)")},
    {"--no-initialization",
     accept("skips the random initialisation that a checkpoint's weights replace: "
            "megatron-train's is cheap, and loading overwrites it"),
     kFromCheckpoint},
    {"--use-checkpoint-args",
     refuse("taking the model's arguments from the --load checkpoint in megatron-train "
            "(--use-checkpoint-args)"),
     kDefined},
    {"--use-mp-args-from-checkpoint-args",
     refuse("taking the parallel sizes from the --load checkpoint"), kOneProcess},
    {"--no-use-tokenizer-model-from-checkpoint-args",
     accept("only read with --use-checkpoint-args, which megatron-train refuses"),
     refuse("ignoring the checkpoint's tokenizer model")},
    {"--exit-on-missing-checkpoint",
     refuse("stopping when --load holds no checkpoint (megatron-train then starts from random "
            "weights, as Megatron does without this flag)"),
     accept("a missing checkpoint is always an error here (Megatron's text generation server "
            "sets this flag itself)")},
    {"--use-dist-ckpt", accept("deprecated: Megatron ignores it too (--ckpt-format chooses)")},
    {"--use-persistent-ckpt-worker",
     accept("a background worker for asynchronous saves: megatron-train saves synchronously, "
            "the same checkpoint"),
     kTrainingOnly},
    {"--auto-detect-ckpt-format", accept("--load always detects the checkpoint's format here")},
    {"--dist-ckpt-format", accept("deprecated: Megatron ignores it too (--ckpt-format chooses)")},
    {"--ckpt-convert-format", kDefined, kTrainingOnly},
    {"--ckpt-convert-save", kDefined, kTrainingOnly},
    {"--ckpt-convert-update-legacy-dist-opt-format",
     refuse("the distributed optimizer's legacy checkpoint format (before February 2024)"),
     kTrainingOnly},
    {"--ckpt-fully-parallel-save", kDeprecatedIgnored, kTrainingOnly},
    {"--no-ckpt-fully-parallel-save",
     accept("how the ranks share writing a torch_dist checkpoint: the same tensors are saved"),
     kTrainingOnly},
    {"--async-save",
     accept("saves in the background: megatron-train saves synchronously, the same checkpoint"),
     kTrainingOnly},
    {"--ckpt-fully-parallel-load",
     accept("how the ranks share reading a torch_dist checkpoint: the same tensors are loaded")},
    {"--ckpt-assume-constant-structure",
     accept("caches the plan of repeated torch_dist saves: the same checkpoint"), kTrainingOnly},
    {"--dist-ckpt-strictness",
     accept("how Megatron's torch_dist loader treats keys the model does not expect: "
            "megatron.cpp's loader needs every key the model has and ignores the others")},
    {"--load-model-opt-format",
     refuse("TensorRT Model Optimizer (nvidia-modelopt) and NeMo checkpoints")},
    // mixed precision
    {"--fp16", kDefined},
    {"--bf16", kDefined},
    {"--grad-reduce-in-bf16", refuse("reducing gradients in bf16"), kTrainingOnly},
    {"--loss-scale", kDefined, kTrainingOnly},
    {"--initial-loss-scale", kDefined, kTrainingOnly},
    {"--min-loss-scale", kDefined, kTrainingOnly},
    {"--loss-scale-window", kDefined, kTrainingOnly},
    {"--hysteresis", kDefined, kTrainingOnly},
    // In fp32 these change nothing; with --bf16 / --fp16 they change the numerics.
    {"--fp32-residual-connection",
     refuse_unless("fp32 residual connections in bf16 / fp16 models", "bf16=false,fp16=false")},
    {"--apply-query-key-layer-scaling",
     accept("scales the attention scores down by the layer number and the softmax back up, "
            "against fp16 overflow of scores kept in fp16: the CPU attention keeps its scores in "
            "fp32, so nothing changes")},
    {"--attention-softmax-in-fp32", kDefined, accept("the attention softmax always runs in fp32")},
    {"--accumulate-allreduce-grads-in-fp32", kDefined, kTrainingOnly},
    {"--fp16-lm-cross-entropy",
     refuse_unless("the cross entropy in fp16 (--fp16-lm-cross-entropy)", "fp16=false")},
    {"--disable-bf16-reduced-precision-matmul",
     accept("keeps cuBLAS's bf16 GEMMs from reducing in bf16: the CPU's bf16 GEMMs accumulate "
            "in fp32 always")},
    {"--reuse-grad-buf-for-mxfp8-param-ag",
     accept("reuses a buffer for MXFP8 parameters: only with FP8 training, which megatron.cpp "
            "refuses"),
     kTrainingOnly},
    // distributed
    {"--tensor-model-parallel-size", kDefined, kOneProcess},
    {"--encoder-tensor-model-parallel-size", refuse(kT5)},
    {"--pipeline-model-parallel-size", kDefined, kOneProcess},
    {"--encoder-pipeline-model-parallel-size", refuse(kT5)},
    {"--pipeline-model-parallel-split-rank", refuse(kT5)},
    {"--decoder-first-pipeline-num-layers", kDefined, kOneProcess},
    {"--decoder-last-pipeline-num-layers", kDefined, kOneProcess},
    {"--pipeline-model-parallel-layout", refuse(kPipeline), kOneProcess},
    {"--model-parallel-size", invalid("--model-parallel-size is no longer valid, use "
                                      "--tensor-model-parallel-size instead")},
    {"--num-layers-per-virtual-pipeline-stage", kDefined, kOneProcess},
    {"--num-virtual-stages-per-pipeline-rank", kDefined, kOneProcess},
    {"--microbatch-group-size-per-virtual-pipeline-stage", kDefined, kOneProcess},
    {"--no-overlap-p2p-communication", kDefined, kOneProcess},
    {"--overlap-p2p-communication-warmup-flush", kDefined, kOneProcess},
    {"--distributed-backend", kDefined,
     accept("megatron-generate runs as one process: nothing to communicate")},
    {"--distributed-timeout-minutes", kDefined,
     accept("megatron-generate runs as one process: nothing to wait for")},
    {"--overlap-grad-reduce", kDefined, kTrainingOnly},
    {"--defer-embedding-wgrad-compute", kPipelineOnly, kTrainingOnly},
    {"--wgrad-deferral-limit", kPipelineOnly, kTrainingOnly},
    {"--no-align-grad-reduce", kPipelineOnly, kTrainingOnly},
    {"--ddp-num-buckets",
     accept("how many buckets group the data-parallel gradient reduction: the same reduced "
            "gradients"),
     kTrainingOnly},
    {"--ddp-bucket-size", kDefined, kTrainingOnly},
    {"--ddp-pad-buckets-for-high-nccl-busbw", kNcclTuning, kTrainingOnly},
    {"--ddp-average-in-collective",
     accept("whether the collective or a scaling before it takes the data-parallel mean of the "
            "gradients: the same mean"),
     kTrainingOnly},
    {"--overlap-param-gather", kDefined, kTrainingOnly},
    {"--overlap-param-gather-with-optimizer-step",
     accept("overlaps the first bucket's parameter gather with the optimizer step "
            "(interleaved pipelines): the same weights"),
     kTrainingOnly},
    {"--no-align-param-gather", kPipelineOnly, kTrainingOnly},
    {"--no-scatter-gather-tensors-in-pipeline", kPipelineOnly, kTrainingOnly},
    {"--use-ring-exchange-p2p", kPipelineOnly, kTrainingOnly},
    {"--local-rank", accept("set by PyTorch's launchers: ranks come from mpirun or srun here")},
    {"--lazy-mpu-init",
     accept("lets an external data-parallel manager finish Megatron's initialisation from "
            "Python: no such manager here")},
    {"--account-for-embedding-in-pipeline-split", kDefined, kOneProcess},
    {"--account-for-loss-in-pipeline-split", kDefined, kOneProcess},
    {"--use-distributed-optimizer", kDefined, kTrainingOnly},
    {"--use-nccl-ub", kNcclTuning, kTrainingOnly},
    {"--use-sharp", kNcclTuning, kTrainingOnly},
    {"--use-custom-fsdp", refuse(kFsdp), kTrainingOnly},
    {"--init-model-with-meta-device", kFsdpOnly, kTrainingOnly},
    {"--data-parallel-sharding-strategy", refuse(kFsdp), kTrainingOnly},
    {"--no-gradient-reduce-div-fusion", kFusion, kTrainingOnly},
    {"--fsdp-double-buffer", kFsdpOnly, kTrainingOnly},
    {"--suggested-communication-unit-size", kFsdpOnly, kTrainingOnly},
    {"--keep-fp8-transpose-cache-when-using-custom-fsdp", kFsdpOnly, kTrainingOnly},
    {"--num-distributed-optimizer-instances",
     refuse("several distributed-optimizer instances (the optimizer is sharded over all "
            "data-parallel ranks)"),
     kTrainingOnly},
    {"--use-torch-fsdp2", refuse(kFsdp), kTrainingOnly},
    {"--torch-fsdp2-no-reshard-after-forward", kFsdpOnly, kTrainingOnly},
    {"--context-parallel-size", kDefined, kOneProcess},
    {"--cp-comm-type", kContextOnly, kOneProcess},
    {"--hierarchical-context-parallel-sizes", kContextOnly, kOneProcess},
    {"--nccl-communicator-config-path", kNcclTuning},
    {"--use-tp-pp-dp-mapping", kDefined, kOneProcess},
    {"--replication",
     accept("replicates local non-persistent checkpoints, which megatron.cpp refuses"),
     kTrainingOnly},
    {"--replication-jump",
     accept("replicates local non-persistent checkpoints, which megatron.cpp refuses"),
     kTrainingOnly},
    {"--replication-factor",
     accept("replicates local non-persistent checkpoints, which megatron.cpp refuses"),
     kTrainingOnly},
    // validation
    {"--eval-iters", kDefined, kTrainingOnly},
    {"--eval-interval", kDefined, kTrainingOnly},
    {"--test-mode", accept("Megatron's functional-test hooks (real-time checks in attention)")},
    {"--skip-train", refuse("evaluation without training (--skip-train)"), kTrainingOnly},
    // data and dataloader
    {"--data-path", kDefined, kTrainingOnly},
    {"--split", kDefined, kTrainingOnly},
    {"--train-data-path", kDefined, kTrainingOnly},
    {"--valid-data-path", kDefined, kTrainingOnly},
    {"--test-data-path", kDefined, kTrainingOnly},
    {"--data-args-path", refuse("reading the data paths from a file (--data-args-path)"),
     kTrainingOnly},
    {"--per-split-data-args-path",
     refuse("reading the per-split data paths from a file (--per-split-data-args-path)"),
     kTrainingOnly},
    {"--data-cache-path", kDefined, kTrainingOnly},
    {"--no-mmap-bin-files", accept("reads the .bin files without mmap: the same data"),
     kTrainingOnly},
    {"--mock-data", kDefined, kTrainingOnly},
    {"--encoder-seq-length", refuse("T5 / encoder-decoder models (for GPT give --seq-length)")},
    {"--decoder-seq-length", refuse(kT5)},
    {"--retriever-seq-length", refuse(kRetriever)},
    {"--sample-rate", refuse(kRetriever)},
    {"--mask-prob", invalid("--mask-prob is read only by BERT and T5 pretraining: give --model "
                            "bert (T5 is not supported yet)")},
    {"--short-seq-prob", invalid("--short-seq-prob is read only by BERT and T5 pretraining: give "
                                 "--model bert (T5 is not supported yet)")},
    {"--num-workers",
     accept("data-loader worker processes: megatron-train builds its batches in the training "
            "process, in the same order"),
     kTrainingOnly},
    {"--reset-position-ids", kDefined, kTrainingOnly},
    {"--reset-attention-mask", kDefined, kTrainingOnly},
    {"--eod-mask-loss", kDefined, kTrainingOnly},
    {"--no-create-attention-mask-in-dataloader",
     accept("the attention mask is never materialised here: the same attention"), kTrainingOnly},
    {"--num-dataset-builder-threads",
     accept("threads building the dataset indices: the same indices"), kTrainingOnly},
    {"--object-storage-cache-path",
     accept("only for data on object storage (s3://, msc://), which megatron.cpp does not read"),
     kTrainingOnly},
    {"--mid-level-dataset-surplus",
     refuse("a --mid-level-dataset-surplus other than Megatron's default"), kTrainingOnly},
    // tokenizer
    // Read only by TikTokenizer, which --tokenizer-type refuses itself.
    {"--tiktoken-pattern", accept(kTikTokenOnly)},
    {"--tiktoken-num-special-tokens", accept(kTikTokenOnly)},
    {"--tiktoken-special-tokens", accept(kTikTokenOnly)},
    // autoresume
    {"--adlr-autoresume",
     accept("autoresume on NVIDIA's ADLR cluster (internal): SIGTERM with "
            "--exit-signal-handler saves and stops here"),
     kTrainingOnly},
    {"--adlr-autoresume-interval",
     accept("autoresume on NVIDIA's ADLR cluster (internal): not used here"), kTrainingOnly},
    // biencoder
    {"--ict-head-size", refuse(kRetriever)},
    {"--biencoder-projection-dim", refuse(kRetriever)},
    {"--biencoder-shared-query-context-model", refuse(kRetriever)},
    {"--ict-load", refuse(kRetriever)},
    {"--bert-load", refuse(kRetriever)},
    {"--titles-data-path", refuse(kRetriever)},
    {"--query-in-block-prob", refuse(kRetriever)},
    {"--use-one-sent-docs", refuse(kRetriever)},
    {"--evidence-data-path", refuse(kRetriever)},
    {"--retriever-report-topk-accuracies", refuse(kRetriever)},
    {"--retriever-score-scaling", refuse(kRetriever)},
    {"--block-data-path", refuse(kRetriever)},
    {"--embedding-path", refuse(kRetriever)},
    {"--indexer-batch-size", refuse(kRetriever)},
    {"--indexer-log-interval", refuse(kRetriever)},
    // vision
    {"--num-classes", refuse(kVision)},
    {"--img-h", refuse(kVision)},
    {"--img-w", refuse(kVision)},
    {"--num-channels", refuse(kVision)},
    {"--patch-dim", refuse(kVision)},
    {"--classes-fraction", refuse(kVision)},
    {"--data-per-class-fraction", refuse(kVision)},
    {"--no-data-sharding", refuse(kVision)},
    {"--head-lr-mult", refuse(kVision)},
    {"--vision-pretraining", refuse(kVision)},
    {"--vision-pretraining-type", refuse(kVision)},
    {"--vision-backbone-type", refuse(kVision)},
    {"--swin-backbone-type", refuse(kVision)},
    {"--mask-type", refuse(kVision)},
    {"--mask-factor", refuse(kVision)},
    {"--iter-per-epoch", refuse(kVision)},
    {"--dino-local-img-size", refuse(kVision)},
    {"--dino-local-crops-number", refuse(kVision)},
    {"--dino-head-hidden-size", refuse(kVision)},
    {"--dino-bottleneck-size", refuse(kVision)},
    {"--dino-freeze-last-layer", refuse(kVision)},
    {"--dino-norm-last-layer", refuse(kVision)},
    {"--dino-warmup-teacher-temp", refuse(kVision)},
    {"--dino-teacher-temp", refuse(kVision)},
    {"--dino-warmup-teacher-temp-epochs", refuse(kVision)},
    {"--qk-l2-norm", refuse("L2-normalised queries and keys (Llama 4, --qk-l2-norm)")},
    // moe
    {"--expert-model-parallel-size", kDefined, kOneProcess},
    {"--expert-tensor-parallel-size", kDefined, kOneProcess},
    {"--moe-use-legacy-grouped-gemm", refuse(kMoE)},
    {"--moe-layer-recompute", refuse(kMoE)},
    {"--moe-extended-tp", refuse(kMoE)},
    {"--moe-use-upcycling", refuse(kMoE)},
    {"--moe-router-force-load-balancing", refuse(kMoE)},
    {"--moe-router-padding-for-fp8", refuse(kMoE)},
    {"--moe-per-layer-logging", refuse(kMoE)},
    {"--moe-enable-deepep", refuse(kMoE)},
    {"--moe-deepep-num-sms", refuse(kMoE)},
    {"--moe-permute-fusion", kFusion},
    {"--moe-apply-probs-on-input", refuse(kMoE)},
    {"--delay-wgrad-compute",
     accept("delays weight-gradient GEMMs to overlap them with MoE communication: the same "
            "gradients"),
     kTrainingOnly},
    {"--moe-upcycling-granularity", refuse(kMoE)},
    // mla
    {"--q-lora-rank", refuse(kMla)},
    {"--kv-lora-rank", refuse(kMla)},
    {"--qk-head-dim", refuse(kMla)},
    {"--qk-pos-emb-head-dim", refuse(kMla)},
    {"--v-head-dim", refuse(kMla)},
    {"--rotary-scaling-factor", refuse(kMla)},
    {"--mscale", refuse(kMla)},
    {"--mscale-all-dim", refuse(kMla)},
    // heterogeneous architecture
    {"--heterogeneous-layers-config-path", refuse(kHeterogeneous)},
    {"--heterogeneous-layers-config-encoded-json", refuse(kHeterogeneous)},
    // logging
    {"--log-params-norm", kDefined, kTrainingOnly},
    {"--log-num-zeros-in-grad", kDefined, kTrainingOnly},
    {"--log-throughput", kDefined, kTrainingOnly},
    {"--log-progress",
     accept("Megatron's progress.txt (tokens and FLOPs so far) in the checkpoint directory: a "
            "log file, not written here"),
     kTrainingOnly},
    {"--timing-log-level", kDefined, kTrainingOnly},
    {"--log-energy", accept("GPU energy in the log line: not measured here"), kTrainingOnly},
    {"--no-barrier-with-level-1-timing", kTimers, kTrainingOnly},
    {"--timing-log-option", kDefined, kTrainingOnly},
    {"--tensorboard-log-interval",
     accept("how often TensorBoard gets the iteration's scalars: megatron-train writes them "
            "every iteration"),
     kTrainingOnly},
    {"--tensorboard-queue-size",
     accept("events pending before TensorBoard writes them: megatron-train writes each at "
            "once"),
     kTrainingOnly},
    {"--log-timers-to-tensorboard", kTimers, kTrainingOnly},
    {"--no-log-loss-scale-to-tensorboard",
     accept("a TensorBoard scalar: megatron-train writes the loss scale anyway"), kTrainingOnly},
    {"--log-validation-ppl-to-tensorboard",
     accept("a TensorBoard scalar: megatron-train writes the validation perplexity always"),
     kTrainingOnly},
    {"--log-memory-to-tensorboard", kDefined, kTrainingOnly},
    {"--log-world-size-to-tensorboard",
     accept("a TensorBoard scalar (the world size): not written here"), kTrainingOnly},
    {"--wandb-project", kWandb, kTrainingOnly},
    {"--wandb-exp-name", kWandb, kTrainingOnly},
    {"--wandb-save-dir", kWandb, kTrainingOnly},
    {"--logging-level", accept("the level of Python's logging module: no Python here")},
    // straggler
    {"--log-straggler", kStraggler, kTrainingOnly},
    {"--disable-straggler-on-startup", kStraggler, kTrainingOnly},
    {"--straggler-ctrlr-port", kStraggler, kTrainingOnly},
    {"--straggler-minmax-count", kStraggler, kTrainingOnly},
    // workload inspector
    {"--run-workload-inspector-server",
     accept("a server for on-demand profiling: nothing to profile through here"), kTrainingOnly},
    // inference
    {"--inference-batch-times-seqlen-threshold", kInferenceOnly,
     accept("splits batches for pipelining: no effect without pipeline parallelism")},
    {"--max-tokens-to-oom", kInferenceOnly,
     accept("a guard against running out of GPU memory: megatron-generate limits prompt and "
            "generated tokens by the model's positions")},
    {"--output-bert-embeddings", refuse(kBertEmbeddings)},
    {"--bert-embedder-type", refuse(kBertEmbeddings)},
    {"--flash-decode", kInferenceOnly, accept("a decoding kernel choice: the same attention")},
    {"--enable-cuda-graph", kCudaGraph},
    {"--cuda-graph-warmup-steps", kCudaGraph},
    {"--external-cuda-graph", kCudaGraph},
    {"--cuda-graph-scope", kCudaGraph},
    {"--inference-max-requests", kInferenceOnly,
     accept("sizes Megatron's GPU inference context: megatron-generate sizes its KV cache per "
            "request")},
    {"--inference-max-seq-length", kInferenceOnly,
     accept("sizes Megatron's GPU inference context: megatron-generate sizes its KV cache per "
            "request")},
    {"--inference-dynamic-batching", kInferenceOnly,
     accept("Megatron's dynamic batching engine: megatron-generate serves one request at a "
            "time, the same texts")},
    {"--inference-dynamic-batching-buffer-size-gb", kInferenceOnly,
     accept("Megatron's dynamic batching engine: megatron-generate serves one request at a "
            "time, the same texts")},
    {"--inference-dynamic-batching-chunk-size", kInferenceOnly,
     accept("Megatron's dynamic batching engine: megatron-generate serves one request at a "
            "time, the same texts")},
    {"--inference-dynamic-batching-buffer-guaranteed-fraction", kInferenceOnly,
     accept("Megatron's dynamic batching engine: megatron-generate serves one request at a "
            "time, the same texts")},
    {"--inference-dynamic-batching-buffer-overflow-factor", kInferenceOnly,
     accept("Megatron's dynamic batching engine: megatron-generate serves one request at a "
            "time, the same texts")},
    {"--inference-dynamic-batching-max-requests-override", kInferenceOnly,
     accept("Megatron's dynamic batching engine: megatron-generate serves one request at a "
            "time, the same texts")},
    {"--inference-dynamic-batching-max-tokens-override", kInferenceOnly,
     accept("Megatron's dynamic batching engine: megatron-generate serves one request at a "
            "time, the same texts")},
    {"--symmetric-ar-type", kInferenceOnly, kNcclTuning},
    {"--nccl-all-reduce-for-prefill", kInferenceOnly, kNcclTuning},
    {"--mlp-chunks-for-prefill", kInferenceOnly,
     accept("computes the prefill's MLP in chunks along the sequence: the same numbers")},
    // Transformer-Engine
    {"--fp8-format", refuse(kFp8)},
    {"--fp8-recipe", refuse(kFp8)},
    {"--fp8-margin", refuse(kFp8)},
    {"--fp8-interval", accept("deprecated: Megatron ignores it too (FP8 is refused anyway)")},
    {"--fp8-amax-history-len", refuse(kFp8)},
    {"--fp8-amax-compute-algo", refuse(kFp8)},
    {"--no-fp8-wgrad", refuse(kFp8)},
    {"--fp8-param-gather", refuse(kFp8)},
    {"--first-last-layers-bf16", refuse(kFp8)},
    {"--num-layers-at-start-in-bf16", refuse(kFp8)},
    {"--num-layers-at-end-in-bf16", refuse(kFp8)},
    {"--te-rng-tracker",
     accept("which CUDA RNG tracker draws dropout masks (Transformer Engine's, for CUDA "
            "graphs): megatron.cpp draws them from its own counter-based generator")},
    {"--inference-rng-tracker",
     accept("which CUDA RNG tracker inference uses: megatron.cpp draws from its own "
            "counter-based generator")},
    // retro
    {"--retro-project-dir", refuse(kRetro)},
    {"--retro-add-retriever", refuse(kRetro)},
    {"--retro-cyclic-train-iters", refuse(kRetro)},
    {"--retro-encoder-layers", refuse(kRetro)},
    {"--retro-encoder-hidden-dropout", refuse(kRetro)},
    {"--retro-encoder-attention-dropout", refuse(kRetro)},
    {"--retro-num-neighbors", refuse(kRetro)},
    {"--retro-num-retrieved-chunks", refuse(kRetro)},
    {"--retro-attention-gate", refuse(kRetro)},
    {"--retro-no-verify-neighbor-count", refuse(kRetro)},
    // experimental
    {"--enable-experimental",
     accept("turns on Megatron-core's experimental code paths (MoE permute fusion), none of "
            "which megatron.cpp has")},
    {"--spec", refuse("custom layer specs (--spec)")},
    {"--hybrid-attention-ratio", refuse(kMamba)},
    {"--hybrid-mlp-ratio", refuse(kMamba)},
    {"--hybrid-override-pattern", refuse(kMamba)},
    {"--mamba-state-dim", refuse(kMamba)},
    {"--mamba-head-dim", refuse(kMamba)},
    {"--mamba-num-groups", refuse(kMamba)},
    {"--mamba-num-heads", refuse(kMamba)},
    {"--is-hybrid-model", refuse(kMamba)},
    {"--disable-mamba-mem-eff-path", refuse(kMamba)},
    {"--yaml-cfg", refuse("YAML configuration files (--yaml-cfg)")},
    {"--use-precision-aware-optimizer",
     accept("Transformer Engine's FusedAdam keeping main weights, grads and moments in the "
            "--main-*-dtype / --exp-avg-*-dtype types: with their fp32 defaults the same Adam "
            "step"),
     kTrainingOnly},
    {"--main-grads-dtype", refuse(kLowPrecisionOptimizer), kTrainingOnly},
    {"--main-params-dtype", refuse(kLowPrecisionOptimizer), kTrainingOnly},
    {"--exp-avg-dtype", refuse(kLowPrecisionOptimizer), kTrainingOnly},
    {"--exp-avg-sq-dtype", refuse(kLowPrecisionOptimizer), kTrainingOnly},
    // one logger
    {"--no-one-logger", kOneLogger},
    {"--one-logger-project", kOneLogger},
    {"--one-logger-run-name", kOneLogger},
    {"--one-logger-async", kOneLogger},
    {"--app-tag-run-name", kOneLogger},
    {"--app-tag-run-version", kOneLogger},
    // In-process restart
    {"--inprocess-restart", kInprocessRestart},
    {"--inprocess-max-iterations", kInprocessRestart},
    {"--inprocess-monitor-thread-interval", kInprocessRestart},
    {"--inprocess-monitor-process-interval", kInprocessRestart},
    {"--inprocess-progress-watchdog-interval", kInprocessRestart},
    {"--inprocess-heartbeat-interval", kInprocessRestart},
    {"--inprocess-soft-timeout", kInprocessRestart},
    {"--inprocess-hard-timeout", kInprocessRestart},
    {"--inprocess-heartbeat-timeout", kInprocessRestart},
    {"--inprocess-barrier-timeout", kInprocessRestart},
    {"--inprocess-completion-timeout", kInprocessRestart},
    {"--inprocess-last-call-wait", kInprocessRestart},
    {"--inprocess-termination-grace-time", kInprocessRestart},
    {"--inprocess-granularity", kInprocessRestart},
    {"--inprocess-active-world-size", kInprocessRestart},
    {"--inprocess-empty-cuda-cache", kInprocessRestart},
    // ft_package
    {"--enable-ft-package", kFaultTolerance},
    {"--calc-ft-timeouts", kFaultTolerance},
    // config logger
    {"--config-logger-dir",
     accept("dumps the modules' configurations for debugging: not written here")},
    // msc
    {"--disable-msc",
     accept("turns off the Multi-Storage Client (object-storage paths), which megatron.cpp "
            "does not use")},
    // kitchen
    {"--kitchen-config-file", refuse(kKitchen)},
    {"--kitchen-recipe-number", refuse(kKitchen)},
    // sft
    {"--sft", refuse(kSft)},
    {"--sft-tokenizer-prompt-format", refuse(kSft)},
    // modelopt-generic (pretrain_gpt.py's, when NVIDIA ModelOpt is installed)
    {"--export-model-type", refuse(kModelOpt)},
    {"--export-legacy-megatron", refuse(kModelOpt)},
    {"--export-te-mcore-model", refuse(kModelOpt)},
    {"--export-force-local-attention", refuse(kModelOpt)},
    {"--export-kv-cache-quant", refuse(kModelOpt)},
    {"--export-real-quant-cfg", refuse(kModelOpt)},
    {"--export-quant-cfg", refuse(kModelOpt)},
    {"--export-kd-cfg", refuse(kModelOpt)},
    {"--export-kd-teacher-load", refuse(kModelOpt)},
    {"--export-kd-teacher-ckpt-format", refuse(kModelOpt)},
    {"--export-num-medusa-heads", refuse(kModelOpt)},
    {"--export-eagle-algorithm", refuse(kModelOpt)},
    {"--export-num-eagle-layers", refuse(kModelOpt)},
    {"--export-draft-vocab-size", refuse(kModelOpt)},
    {"--export-num-mtp", refuse(kModelOpt)},
    {"--export-freeze-mtp", refuse(kModelOpt)},
    {"--finetune-hf-dataset", refuse(kModelOpt)},
    {"--finetune-data-split", refuse(kModelOpt)},
    {"--export-qk-l2-norm", refuse(kModelOpt)},
    {"--export-moe-apply-probs-on-input", refuse(kModelOpt)},
};

}  // namespace

std::span<const CatalogueEntry> catalogue() {
    return kCatalogue;
}

}  // namespace mt::cli::detail
