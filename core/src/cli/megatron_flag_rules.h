// The verdicts the flag catalogue and the checkpoint-args walk give Megatron's flags: the rule
// builders, the capabilities megatron.cpp lacks (refused) and the reasons a flag changes nothing
// here (accepted), named once for both tables.
#pragma once

#include "megatron_flag_catalogue.h"

namespace mt::cli::detail {

inline constexpr FlagRule accept(const char* why) {
    return {FlagStatus::accepted, why};
}
inline constexpr FlagRule refuse(const char* capability, const char* also_harmless = nullptr) {
    return {FlagStatus::refused, capability, also_harmless};
}
inline constexpr FlagRule refuse_unless(const char* capability, const char* unless) {
    return {FlagStatus::refused, capability, nullptr, unless};
}
inline constexpr FlagRule invalid(const char* message, const char* unless = nullptr) {
    return {FlagStatus::invalid, message, nullptr, unless};
}
// The training tool defines the flag itself.
inline constexpr FlagRule kDefined{FlagStatus::implemented};

// Capabilities megatron.cpp lacks (refused).
inline constexpr const char* kMoE = "this MoE (Mixture of Experts) option";
inline constexpr const char* kEncoderStages =
    "encoder-only pipeline and tensor-parallel sizes (removed in Megatron-core 0.14)";
inline constexpr const char* kMamba = "Mamba hybrid models";
inline constexpr const char* kBertEmbeddings = "BERT embeddings (Retro's embedder)";
inline constexpr const char* kVision = "vision models";
inline constexpr const char* kRetro = "Retro models";
inline constexpr const char* kRetriever = "ICT / biencoder retriever models and tasks";
inline constexpr const char* kMtp = "multi-token prediction (MTP)";
inline constexpr const char* kFp8 = "FP8 training";
inline constexpr const char* kFsdp = "FSDP (fully sharded data parallelism)";
inline constexpr const char* kNonPersistent =
    "non-persistent (global / local / in-memory) checkpoints";
inline constexpr const char* kLegacy = "Megatron's legacy (non-core) models";
inline constexpr const char* kHeterogeneous =
    "heterogeneous layers (Llama-Nemotron configurations)";
inline constexpr const char* kLowPrecisionOptimizer =
    "optimizer state or main weights below fp32 (the precision-aware optimizer's dtypes)";
inline constexpr const char* kKitchen = "kitchen quantization";
inline constexpr const char* kModelOpt =
    "NVIDIA ModelOpt (TensorRT Model Optimizer) export, quantization, distillation and "
    "speculative-decoding heads";
inline constexpr const char* kSft = "SFT (supervised fine-tuning) training";

// Reasons a flag changes nothing here (accepted).
inline constexpr FlagRule kTrainingOnly = accept("only used by training");
inline constexpr FlagRule kInferenceOnly =
    accept("only used by text generation (Megatron's training does not read it)");
inline constexpr FlagRule kOneProcess = accept(
    "megatron-generate and megatron-eval's zero-shot tasks run as one process and read the "
    "checkpoint whole, whatever parallel layout saved it (megatron-eval's finetuning has no "
    "pipeline stages)");
inline constexpr FlagRule kFromCheckpoint = accept("the weights come from the checkpoint");
inline constexpr FlagRule kFusion =
    accept("a GPU kernel fusion: the CPU kernels compute the same math unfused");
inline constexpr FlagRule kTpOverlap = accept(
    "overlaps tensor-parallel communication with GEMMs (Transformer Engine userbuffers): "
    "the same results");
inline constexpr FlagRule kPipelineOnly = accept(
    "tunes when pipeline stages post their sends and receives: megatron.cpp sends each output "
    "as soon as it exists and posts receives ahead, which computes the same");
inline constexpr FlagRule kContextOnly = accept(
    "chooses how context-parallel ranks exchange keys and values (p2p, a2a, allgather): "
    "megatron.cpp passes them around the ring (p2p) for the causal mask and gathers them "
    "(all_gather) for sliding windows and sinks; each computes the same attention");
inline constexpr FlagRule kFsdpOnly =
    accept("tunes FSDP: no effect without FSDP, which megatron.cpp refuses");
inline constexpr FlagRule kNcclTuning =
    accept("tunes NCCL communication: the same reductions (ranks talk over MPI on the CPU)");
inline constexpr FlagRule kCudaGraph =
    accept("CUDA graph capture: nothing to capture on the CPU backend; the same computation");
inline constexpr FlagRule kProfiling =
    accept("profiling hooks (nsys, the PyTorch profiler): nothing to profile through here");
inline constexpr FlagRule kCpuOffload = accept(
    "offloads the optimizer state and step to the CPU: megatron-train's optimizer runs "
    "on the CPU already, the same Adam step");
inline constexpr FlagRule kPythonGc = accept("Python garbage collection: there is none here");
inline constexpr FlagRule kStraggler =
    accept("detection of slow GPUs (straggler detector): nothing to measure here");
inline constexpr FlagRule kOneLogger =
    accept("NVIDIA's one-logger end-to-end metrics (internal): not collected here");
inline constexpr FlagRule kInprocessRestart = accept(
    "NVIDIA's in-process restart after failures (nvidia-resiliency-ext): a failure ends "
    "the run here");
inline constexpr FlagRule kFaultTolerance =
    accept("NVIDIA's fault-tolerance package (internal): not used here");
inline constexpr FlagRule kTimers = accept(
    "where or how Megatron's timers report: megatron-train prints them (--timing-log-level) "
    "without a barrier before level-1 timers, and not to TensorBoard");
inline constexpr FlagRule kWandb =
    accept("Weights & Biases logging: not available here (TensorBoard is)");
inline constexpr FlagRule kDynamicBatching = accept(
    "tunes Megatron's dynamic batching engine: megatron-generate's server always batches "
    "continuously (--inference-max-requests places, a KV cache per request), the same texts");
inline constexpr FlagRule kDeprecatedIgnored = accept("deprecated: Megatron ignores it too");

}  // namespace mt::cli::detail
