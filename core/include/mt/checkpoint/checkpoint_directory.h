// Megatron's checkpoint directory, whatever the format in it (megatron/training/checkpointing.py):
// <dir>/latest_checkpointed_iteration.txt names the latest iteration (or "release"), whose files
// are under <dir>/iter_{:07d}/ (or <dir>/release/).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "mt/api.h"

namespace mt {

inline constexpr const char* kCheckpointTrackerName = "latest_checkpointed_iteration.txt";

// What the tracker names: an iteration > 0, or the release checkpoint.
struct LatestCheckpoint {
    int64_t iteration = 0;
    bool release = false;
};

// <dir>/latest_checkpointed_iteration.txt.
MT_API std::filesystem::path checkpoint_tracker(const std::filesystem::path& dir);
// "iter_0000100" (iteration 0 and release included: "iter_0000000").
MT_API std::string iteration_dir_name(int64_t iteration);
// <dir>/iter_0000100 or <dir>/release.
MT_API std::filesystem::path iteration_dir(const std::filesystem::path& dir,
                                           const LatestCheckpoint& latest);
// Reads the tracker as Megatron's read_metadata does; nullopt when there is none. A malformed
// tracker is an mt::Error naming the file and its text.
MT_API std::optional<LatestCheckpoint> read_tracker(const std::filesystem::path& dir);

}  // namespace mt
