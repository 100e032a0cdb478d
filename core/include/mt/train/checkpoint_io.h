// megatron-train's checkpoint loading and saving on every rank of a run: the state is captured
// as whole tensors (collectively) and written in Megatron's layout for the run's tensor
// parallelism (torch: rank 0 writes one mp_rank_TT file per tensor rank; torch_dist: each tensor
// rank writes its pieces to its own __R_0.distcp), and read back by every rank, which keeps its
// pieces — so any layout resumes any other.
#pragma once

#include <filesystem>
#include <vector>

#include "mt/api.h"
#include "mt/checkpoint.h"
#include "mt/model.h"
#include "mt/train/checkpointing.h"
#include "mt/train/training_flags.h"

namespace mt::train {

// Megatron's load_checkpoint: the latest checkpoint of --load (true), or a warning and a fresh
// start (false). Collective when the run has several ranks. `params`: this rank's model (its
// pipeline stage's), whole tensors; `model_params`: the whole model's (family.parameters), by
// which the other stages' tensors of a pipeline-split checkpoint are read before this stage
// keeps its own (none: `params` is the whole model). `resumed`, when given, is set to what the
// checkpoint's optimizer says of the Megatron that saved it.
struct ResumedOptimizer;
MT_API bool load_checkpoint(const TrainingFlags& flags, const train::TrainingParts& parts,
                            const std::vector<ParameterInfo>& params,
                            const std::vector<ParameterInfo>* model_params = nullptr,
                            ResumedOptimizer* resumed = nullptr);

// What a resumed checkpoint's optimizer state says of the Megatron that saved it.
struct ResumedOptimizer {
    // How it kept the distributed optimizer's state (none: not at all).
    DistributedOptimizerLayout layout = DistributedOptimizerLayout::none;
    bool core_v0_19 = false;  // OptimizerCheckpoint::core_v0_19
};

// Whether the run saves its optimizer as core_v0.19 does (OptimizerCheckpoint::core_v0_19): it
// continues a checkpoint core_v0.19 saved (`resumed`) or gives a flag only core_v0.19 has.
MT_API bool saves_for_core_v0_19(const TrainingFlags& flags, const ResumedOptimizer& resumed);

// The layout torch_dist saves the distributed optimizer's state in, as the Megatron the run
// stands for would: core_v0.19's fully_reshardable with --dist-ckpt-optim-fully-reshardable;
// else core_v0.19's default dp_reshardable when the run saves for core_v0.19; else core_v0.13's
// fully_sharded_model_space (which core_v0.19 no longer reads, nor core_v0.13 the others).
MT_API DistributedOptimizerLayout saved_distributed_layout(const TrainingFlags& flags,
                                                           const ResumedOptimizer& resumed);

// The model tensors of the latest checkpoint in `dir` (any format, any tensor and pipeline layout)
// that parameters of `params` hold, whole, under the checkpoint's names (either
// --transformer-impl's norm spelling); the checkpoint's other tensors are left out (a pretrained
// model's heads that a finetuned one lacks), and so are the parameters it does not have. No
// optimizer state. Each rank reads for itself.
MT_API CheckpointState read_model_tensors(const std::filesystem::path& dir,
                                          const std::vector<ParameterInfo>& params);

// Saves the run's state as Megatron's save_checkpoint does, with its messages. Collective.
// `params`: the whole model's (family.parameters: every stage's layers and every expert), by
// which the tensor-parallel files are cut.
MT_API void save_checkpoint(const TrainingFlags& flags, CheckpointFormat& format,
                            const train::TrainingParts& parts, const train::CaptureOptions& options,
                            const std::vector<ParameterInfo>& params);

}  // namespace mt::train
