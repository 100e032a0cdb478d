// The catalogue's rows for the flags only Megatron-DeepSpeed has
// (megatron_flag_list_deepspeed.inc): its DeepSpeed engine, ZeRO, DeepSpeed MoE, Ulysses sequence
// parallelism, data-efficiency and distillation options. As for Megatron-LM's rows: accepted only
// when the flag changes nothing here, refused naming the capability otherwise. A Megatron-DeepSpeed
// flag that is another name of a Megatron-LM one (--local_rank, --layernorm-epsilon) takes that
// flag's row.
#include "megatron_flag_catalogue.h"
#include "megatron_flag_rules.h"

namespace mt::cli::detail {

namespace {

constexpr FlagRule kDeepSpeedMoeOnly = accept(
    "how DeepSpeed's MoE layers run (Tutel's kernels, parameter groups of the same "
    "settings): the same results");
constexpr FlagRule kUlyssesOnly = accept(
    "tunes DeepSpeed-Ulysses sequence parallelism: no effect without "
    "--ds-sequence-parallel-size above 1, which megatron-train refuses");
constexpr FlagRule kZeroTuning = accept(
    "tunes how DeepSpeed's ZeRO buckets and overlaps its communication: the same reductions");
constexpr FlagRule kMemoryLayout = accept(
    "where DeepSpeed keeps parameters or activations in memory (tiling, partitioning, pinning, "
    "host memory): the same computation");
constexpr FlagRule kRecomputeTuning = accept(
    "how DeepSpeed's activation checkpointing stores or partitions what it saves: recomputation "
    "gives the same results");
constexpr FlagRule kFlashAttention = accept(
    "a FlashAttention implementation's choice: the CPU attention is a flash-style kernel "
    "already, the same attention");
constexpr FlagRule kAdamImplementation =
    accept("which Adam implementation DeepSpeed runs (fused, CPU, torch): the same Adam step");
constexpr FlagRule kTensorboardScalar =
    accept("a TensorBoard scalar of Megatron-DeepSpeed's: not written here");
constexpr const char* kUlysses = "DeepSpeed-Ulysses sequence parallelism";
constexpr const char* kDistillation =
    "Megatron-DeepSpeed's knowledge distillation and Mixture-of-Students (--kd, --mos)";
constexpr const char* kDataEfficiency =
    "DeepSpeed's data-efficiency library (curriculum learning by data analysis, precomputed "
    "sample indices)";

constexpr CatalogueEntry kCatalogue[] = {
    // network size
    {"--mlp-type", kDefined, kFromCheckpoint},
    {"--topk", kDefined, kFromCheckpoint},
    {"--expert-interval", kDefined, kFromCheckpoint},
    {"--num-experts-switch", refuse("Megatron-DeepSpeed's SwitchMLP (--num-experts-switch)"),
     kFromCheckpoint},
    {"--disable-mem-efficient-ln",
     accept("a memory-efficient LayerNorm backward (apex): the same gradients")},
    {"--embedding-weights-in-fp32",
     refuse_unless("embedding weights kept in fp32 in a bf16 / fp16 model",
                   "bf16=false,fp16=false")},
    {"--kill-switch-file", kDefined, kTrainingOnly},
    // training
    {"--enable-zbh1-pipeline", refuse("the zero-bubble (ZB-H1) pipeline schedule"), kTrainingOnly},
    {"--enable-zbh1-exact-semantics", refuse("the zero-bubble (ZB-H1) pipeline schedule"),
     kTrainingOnly},
    {"--distribute-checkpointed-activations", kRecomputeTuning, kTrainingOnly},
    {"--checkpoint-num-layers", kRecomputeTuning, kTrainingOnly},
    {"--train-tokens", kDefined, kTrainingOnly},
    {"--random-ltd", refuse("random layerwise token dropping (random-LTD)"), kTrainingOnly},
    {"--disable-moe-token-dropping", kDefined, kTrainingOnly},
    {"--moe-train-capacity-factor", kDefined, kTrainingOnly},
    {"--moe-eval-capacity-factor", kDefined, kFromCheckpoint},
    {"--moe-min-capacity", kDefined, kFromCheckpoint},
    {"--moe-loss-coeff", kDefined, kTrainingOnly},
    {"--create-moe-param-group", kDeepSpeedMoeOnly, kTrainingOnly},
    {"--disable-moe-top2-2nd-expert-sampling", kDefined, kFromCheckpoint},
    {"--use-tutel", kDeepSpeedMoeOnly, kFromCheckpoint},
    {"--use-flash-attn-v1", kFlashAttention},
    {"--use-flash-attn-v2", kFlashAttention},
    {"--use-flash-attn-triton", kFlashAttention},
    {"--use-flash-attn-builder", kFlashAttention},
    {"--ds-inference",
     accept("DeepSpeed's inference kernels for generation: the same math on the CPU")},
    {"--cpu-optimizer", kAdamImplementation, kTrainingOnly},
    {"--cpu_torch_adam", kAdamImplementation, kTrainingOnly},
    {"--ds_fused_adam", kAdamImplementation, kTrainingOnly},
    {"--no-pipeline-parallel", kDefined, kTrainingOnly},
    {"--inference",
     refuse("Megatron-DeepSpeed's training entry point in its inference mode (--inference)"),
     kInferenceOnly},
    {"--ds-sequence-parallel-size", refuse(kUlysses), kOneProcess},
    {"--force-ds-sequence-parallel", kUlyssesOnly, kOneProcess},
    {"--ds-sequence-parallel-fpdt", kUlyssesOnly, kOneProcess},
    {"--ds-sequence-parallel-fpdt-chunk-size", kUlyssesOnly, kOneProcess},
    {"--ds-sequence-parallel-fpdt-offloading", kUlyssesOnly, kOneProcess},
    {"--use-dataset-only",
     refuse("building the datasets without a model (--use-dataset-only True)"), kTrainingOnly},
    // learning rate
    {"--lr-decay-tokens", kDefined, kTrainingOnly},
    {"--lr-warmup-tokens", kDefined, kTrainingOnly},
    // checkpointing
    {"--load-tag", kDefined, kTrainingOnly},
    {"--no-load-lr-state",
     accept("Megatron-DeepSpeed's load_checkpoint never reads it: the schedule is resumed "
            "either way"),
     kTrainingOnly},
    {"--universal-checkpoint", kDefined, kTrainingOnly},
    // mixed precision
    {"--no-query-key-layer-scaling",
     accept("turns off scaling the attention scores by the layer number against fp16 "
            "overflow: the CPU attention keeps its scores in fp32, so nothing changes")},
    // distributed
    {"--enable-expert-tensor-parallelism", kDeepSpeedMoeOnly, kOneProcess},
    {"--moe-expert-parallel-size", kDefined, kOneProcess},
    {"--overlap-p2p-communication", kPipelineOnly, kOneProcess},
    {"--DDP-impl", refuse(kFsdp, "torch"), kTrainingOnly},
    {"--no-contiguous-buffers-in-local-ddp",
     accept("whether local DDP keeps its gradients in one contiguous buffer: the same sums"),
     kTrainingOnly},
    {"--standalone-embedding-stage", refuse("a pipeline stage holding only the embedding"),
     kOneProcess},
    // data and dataloader
    {"--aml-data-download-path", refuse("Azure ML data download paths (--aml-data-download-path)"),
     kTrainingOnly},
    {"--mmap-warmup",
     accept("reads the memory-mapped dataset once ahead of training: the same samples"),
     kTrainingOnly},
    {"--data-impl",
     accept("the indexed dataset's implementation: megatron.cpp reads Megatron's memory-mapped "
            ".bin/.idx pairs, which both mmap and infer find"),
     kTrainingOnly},
    {"--train-data-exact-num-epochs",
     refuse("training for an exact number of epochs (--train-data-exact-num-epochs)"),
     kTrainingOnly},
    {"--return-data-index",
     accept("adds each sample's index to the batch for analysis: the same training"),
     kTrainingOnly},
    {"--data-efficiency-curriculum-learning", refuse(kDataEfficiency), kTrainingOnly},
    {"--train-idx-path", refuse(kDataEfficiency), kTrainingOnly},
    {"--train-desc-path", refuse(kDataEfficiency), kTrainingOnly},
    {"--train-doc-idx-path", refuse(kDataEfficiency), kTrainingOnly},
    {"--train-sample-idx-path", refuse(kDataEfficiency), kTrainingOnly},
    {"--train-shuffle-idx-path", refuse(kDataEfficiency), kTrainingOnly},
    {"--repeated-dataloader",
     accept("restarts an exhausted training data loader: megatron-train's datasets are built "
            "for --train-iters / --train-samples, as Megatron builds them, and none runs out"),
     kTrainingOnly},
    // logging
    {"--log-batch-size-to-tensorboard", kTensorboardScalar, kTrainingOnly},
    {"--no-log-learnig-rate-to-tensorboard", kTensorboardScalar, kTrainingOnly},
    {"--log-optimizer-states-to-tensorboard", kTensorboardScalar, kTrainingOnly},
    // ZeRO
    {"--zero-stage", kDefined, kTrainingOnly},
    {"--zero-reduce-scatter", kZeroTuning, kTrainingOnly},
    {"--zero-contigious-gradients", kZeroTuning, kTrainingOnly},
    {"--zero-reduce-bucket-size", kZeroTuning, kTrainingOnly},
    {"--zero-allgather-bucket-size", kZeroTuning, kTrainingOnly},
    {"--remote-device", kMemoryLayout, kTrainingOnly},
    {"--use-pin-memory", kMemoryLayout, kTrainingOnly},
    // memory optimizations
    {"--scattered-embeddings", kMemoryLayout, kTrainingOnly},
    {"--split-transformers", kMemoryLayout, kTrainingOnly},
    {"--memory-centric-tiled-linear", kMemoryLayout, kTrainingOnly},
    {"--tile-factor", kMemoryLayout, kTrainingOnly},
    // activation checkpointing
    {"--deepspeed-activation-checkpointing", kRecomputeTuning, kTrainingOnly},
    {"--partition-activations", kRecomputeTuning, kTrainingOnly},
    {"--contigious-checkpointing", kRecomputeTuning, kTrainingOnly},
    {"--checkpoint-in-cpu", kRecomputeTuning, kTrainingOnly},
    {"--synchronize-each-layer", kRecomputeTuning, kTrainingOnly},
    {"--profile-backward", kProfiling, kTrainingOnly},
    // knowledge distillation
    {"--num-layers-teacher", refuse(kDistillation), kTrainingOnly},
    {"--num-experts-teacher", refuse(kDistillation), kTrainingOnly},
    {"--hidden-size-teacher", refuse(kDistillation), kTrainingOnly},
    {"--num-attention-heads-teacher", refuse(kDistillation), kTrainingOnly},
    {"--mos", refuse(kDistillation), kTrainingOnly},
    {"--kd", refuse(kDistillation), kTrainingOnly},
    {"--kd-alpha-ce", refuse(kDistillation), kTrainingOnly},
    {"--kd-beta-ce", refuse(kDistillation), kTrainingOnly},
    {"--kd-temp", refuse(kDistillation), kTrainingOnly},
    {"--reset-iteration", refuse(kDistillation), kTrainingOnly},
    {"--load-teacher", refuse(kDistillation), kTrainingOnly},
    // Transformer Engine
    {"--fp8-e4m3", refuse(kFp8), kFromCheckpoint},
    {"--fp8-hybrid", refuse(kFp8), kFromCheckpoint},
    // retro
    {"--retro-workdir", refuse(kRetro)},
    {"--retro-return-doc-ids", refuse(kRetro)},
    // profiling
    {"--profile_steps", kProfiling, kTrainingOnly},
    // DeepSpeed's own (deepspeed.add_config_arguments)
    {"--deepspeed", kDefined,
     accept("turns on Megatron-DeepSpeed's training engine: megatron-generate and megatron-eval "
            "do not read it")},
    {"--deepspeed_config", kDefined, kTrainingOnly},
};

}  // namespace

std::span<const CatalogueEntry> deepspeed_catalogue() {
    return kCatalogue;
}

}  // namespace mt::cli::detail
