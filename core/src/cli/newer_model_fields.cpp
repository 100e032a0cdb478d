// What a checkpoint's args mean for the model when they hold a model option of Megatron's newer
// arguments.py (newer_megatron_flags()) that core_v0.13 lacks: accepted when the option changes
// nothing in a loaded model's numbers (the text says why), refused naming the capability
// otherwise. Only the checkpoint-args walk reads this table; the command line's catalogue is
// keyed by core_v0.13's flags.
#include "newer_model_fields.h"

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
constexpr const char* kWeightShards =
    "generalized tensor parallelism's weight shards (--tensor-parallel-num-weight-shards)";
constexpr const char* kAttentionVariants =
    "experimental attention variants (gated delta net linear attention, DeepSeek sparse "
    "attention)";
constexpr const char* kMup = "muP (maximal-update parametrization) multipliers";
constexpr const char* kKitchenAttention = "kitchen quantized attention";
constexpr const char* kWeightLayout =
    "this expert / MLP weight layout (grouped or GLU-interleaved weights)";

constexpr NewerModelField kNewerModelFields[] = {
    // validate_args stores 1 (no sharding) when the flag is not given.
    {"--tensor-parallel-num-weight-shards", refuse(kWeightShards, "1")},
    {"--expert-tensor-parallel-num-weight-shards", refuse(kWeightShards, "1")},
    {"--max-seqlen-per-dp-cp-rank", kTrainingSchedule},
    {"--hybrid-context-parallel", kTrainingSchedule},
    {"--no-tp-comm-bulk-wgrad", kTpOverlap},
    {"--no-tp-comm-bulk-dgrad", kTpOverlap},
    {"--no-tp-comm-overlap-ag", kTpOverlap},
    {"--no-tp-comm-overlap-rs", kTpOverlap},
    {"--no-tp-comm-split-ag", kTpOverlap},
    {"--no-tp-comm-split-rs", kTpOverlap},
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
    {"--qk-clip", kQkClip},
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
    {"--disable-dsa-indexer-rotate-activation", refuse(kAttentionVariants)},
    {"--no-dsa-indexer-scoring-relu", refuse(kAttentionVariants)},
    {"--disable-dsa-indexer-scoring-relu", refuse(kAttentionVariants)},
    {"--dsa-indexer-k-norm-epsilon", refuse(kAttentionVariants)},
    {"--dsa-indexer-k-norm-fp32", refuse(kAttentionVariants)},
    {"--linear-attention-freq", refuse(kAttentionVariants)},
    {"--linear-conv-kernel-dim", refuse(kAttentionVariants)},
    {"--linear-key-head-dim", refuse(kAttentionVariants)},
    {"--linear-value-head-dim", refuse(kAttentionVariants)},
    {"--linear-num-key-heads", refuse(kAttentionVariants)},
    {"--linear-num-value-heads", refuse(kAttentionVariants)},
    {"--embedding-init-method-std", kFromCheckpoint},
    {"--use-mup", refuse(kMup)},
    {"--mup-width-mult", refuse(kMup)},
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
    {"--disable-clone-scatter-output-in-embedding",
     accept("whether the embedding clones its scattered output: the same values")},
    {"--fp8-quantizer-factory", kLowPrecisionRecipe},
    {"--disable-fp8-wgrad", kLowPrecisionRecipe},
    {"--fp8-output-proj", kLowPrecisionRecipe},
    {"--fp4-format", kLowPrecisionRecipe},
    {"--fp4-recipe", kLowPrecisionRecipe},
    {"--fp4-quantizer-factory", kLowPrecisionRecipe},
    {"--use-kitchen-attention", refuse(kKitchenAttention)},
    {"--kitchen-attention-backend", refuse(kKitchenAttention)},
    {"--moe-shared-expert-gate", refuse("a gated shared expert (Qwen2-MoE)")},
    {"--use-grouped-gemm-for-shared-expert", refuse(kWeightLayout)},
    {"--use-grouped-gemm-for-dense-mlp", refuse(kWeightLayout)},
    {"--moe-shared-expert-glu-interleave-size", refuse(kWeightLayout)},
    {"--moe-mlp-glu-interleave-size", refuse(kWeightLayout)},
    {"--moe-single-grouped-weight", refuse(kWeightLayout)},
    {"--moe-single-grouped-bias", refuse(kWeightLayout)},
    {"--moe-enable-routing-replay",
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
};

}  // namespace

std::span<const NewerModelField> newer_model_fields() {
    return kNewerModelFields;
}

}  // namespace mt::cli::detail
