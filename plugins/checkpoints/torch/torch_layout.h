// Megatron's `torch` checkpoint layout (megatron/training/checkpointing.py): the iteration
// directory of mt/checkpoint/checkpoint_directory.h (iter_{:07d}/ or release/) holds one
// mp_rank_{tp:02d}/ per tensor rank, or mp_rank_{tp:02d}_{pp:03d}/ when the saving run had
// several pipeline stages (and _{ep:03d} after when it had several expert-parallel ranks), each
// with model_optim_rng.pt.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include "mt/checkpoint.h"
#include "mt/checkpoint/checkpoint_directory.h"

namespace mt::plugins::torch_ckpt {

namespace fs = std::filesystem;

inline constexpr const char* kFileName = "model_optim_rng.pt";

// "mp_rank_01", "mp_rank_01_002" when the layout has several pipeline stages, then "_003" for
// the expert-parallel rank when it has several of those.
std::string rank_dir_name(const CheckpointLayout& layout, int64_t tp_rank, int64_t pp_rank,
                          int64_t ep_rank = 0);
// <iteration dir>/<rank dir>/model_optim_rng.pt
fs::path checkpoint_file(const fs::path& dir, const LatestCheckpoint& latest,
                         const CheckpointLayout& layout, int64_t tp_rank, int64_t pp_rank,
                         int64_t ep_rank = 0);

// The layout of an iteration directory, from its mp_rank_* subdirectories; nullopt when it has
// none (another format's directory). Two numbers after the tensor rank are the pipeline and the
// expert rank; one is read as the pipeline rank (the caller tells an expert-parallel one by the
// args). A missing rank is an mt::Error naming the directory it expects.
std::optional<CheckpointLayout> read_layout(const fs::path& iteration_dir);

// Writes a checkpoint via `write(temporary iteration dir)` into a temporary iteration directory
// renamed into place, then the tracker (temporary file renamed), so an interrupted save never
// changes what is latest. Iteration 0 is Megatron's release checkpoint.
template <class Write>
void write_checkpoint(const fs::path& dir, int64_t iteration, Write write);

// The non-template part of write_checkpoint.
fs::path begin_write(const fs::path& dir, int64_t iteration);  // the temporary iteration dir
void finish_write(const fs::path& dir, int64_t iteration);

template <class Write>
void write_checkpoint(const fs::path& dir, int64_t iteration, Write write) {
    write(begin_write(dir, iteration));
    finish_write(dir, iteration);
}

}  // namespace mt::plugins::torch_ckpt
