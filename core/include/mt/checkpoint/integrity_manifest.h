// Megatron's checkpoint integrity manifest (--verify-integrity; megatron/core/dist_checkpointing/
// validation.py): <iteration dir>/integrity.json holds the SHA-256 of every file directly in the
// iteration directory, as json.dump(..., indent=2) writes {"algorithm": "sha256", "files":
// {name: hex digest}}, the names sorted; loading with the flag re-hashes every listed file first.
#pragma once

#include <filesystem>

#include "mt/api.h"

namespace mt {

inline constexpr const char* kIntegrityManifestName = "integrity.json";

// Hashes the files of `iteration_dir` (the manifest itself left out) and writes the manifest
// there (a temporary file renamed into place).
MT_API void write_integrity_manifest(const std::filesystem::path& iteration_dir);

// Re-hashes every file the manifest of `iteration_dir` lists: an mt::Error when the manifest is
// missing or not Megatron's, or naming each file that is missing or differs (as Megatron's
// CheckpointingException does).
MT_API void verify_integrity_manifest(const std::filesystem::path& iteration_dir);

}  // namespace mt
