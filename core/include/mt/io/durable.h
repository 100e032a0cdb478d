// What renaming into place needs to survive a crash (power loss, kill -9 of the machine): the
// data reaches the disk before a name points at it, and a replaced directory is swapped in one
// step, so no moment leaves the name without a complete copy behind it.
#pragma once

#include <filesystem>

#include "mt/api.h"

namespace mt::io {

// Renames `from` to `to` (mt::Error naming both when it cannot). Every rename into place goes
// through here or exchange_paths, so that a test can stop the process at any one of them:
// with MT_FAULT_KILL_AT_RENAME=N in its environment the process SIGKILLs itself just before its
// Nth rename (fault injection for the crash-consistency tests; unset, nothing happens).
MT_API void rename_path(const std::filesystem::path& from, const std::filesystem::path& to);

// fsync of the file or directory at `path` (mt::Error naming it).
MT_API void sync_path(const std::filesystem::path& path);

// fsync of every file and directory under `root`, then of `root` itself.
MT_API void sync_tree(const std::filesystem::path& root);

// Swaps two existing paths in one atomic step (Linux renameat2 RENAME_EXCHANGE); false where the
// filesystem or kernel cannot, having changed nothing. Other failures are mt::Errors.
MT_API bool exchange_paths(const std::filesystem::path& a, const std::filesystem::path& b);

// Puts the complete directory `tmp` at `target` (syncing it first): renamed there when `target`
// is absent, else swapped with it in one step (or, where the filesystem cannot, two back-to-back
// renames) and the old copy removed; then syncs `target`'s parent. For outputs that are a whole
// folder (a Hugging Face model folder) written into a sibling temporary directory.
MT_API void replace_directory(const std::filesystem::path& tmp,
                              const std::filesystem::path& target);

}  // namespace mt::io
