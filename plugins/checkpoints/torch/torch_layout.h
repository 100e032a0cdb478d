// Megatron's `torch` checkpoint directory layout (megatron/training/checkpointing.py):
// <dir>/latest_checkpointed_iteration.txt names the latest iteration (or "release"), whose file
// is <dir>/iter_{:07d}/mp_rank_00/model_optim_rng.pt (one process: TP 1, PP 1, EP 1).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

namespace mt::plugins::torch_ckpt {

namespace fs = std::filesystem;

inline constexpr const char* kTrackerName = "latest_checkpointed_iteration.txt";
inline constexpr const char* kFileName = "model_optim_rng.pt";

// What the tracker names: an iteration > 0, or the release checkpoint.
struct Latest {
    int64_t iteration = 0;
    bool release = false;
};

// "iter_0000100" or "release".
fs::path iteration_dir(const fs::path& dir, const Latest& latest);
// <iteration dir>/mp_rank_00/model_optim_rng.pt
fs::path checkpoint_file(const fs::path& dir, const Latest& latest);

// Reads the tracker as Megatron's read_metadata does; nullopt when there is none. A malformed
// tracker is an mt::Error naming the file and its text.
std::optional<Latest> read_tracker(const fs::path& dir);

// Writes the file via `write` into a temporary iteration directory renamed into place, then the
// tracker (temporary file renamed), so an interrupted save never changes what is latest.
template <class Write>
void write_checkpoint(const fs::path& dir, int64_t iteration, Write write);

// The non-template part of write_checkpoint.
fs::path begin_write(const fs::path& dir, int64_t iteration);  // returns the temporary file
void finish_write(const fs::path& dir, int64_t iteration);

template <class Write>
void write_checkpoint(const fs::path& dir, int64_t iteration, Write write) {
    write(begin_write(dir, iteration));
    finish_write(dir, iteration);
}

}  // namespace mt::plugins::torch_ckpt
