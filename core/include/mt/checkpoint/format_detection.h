// Which checkpoint format a --load directory holds, asked of every checkpoint plugin, as
// Megatron's loader tells torch_dist from torch by looking at the directory.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "mt/api.h"
#include "mt/checkpoint.h"
#include "mt/registry.h"

namespace mt {

// `format` when not empty; else the first format whose detect() accepts `dir` (Megatron's own
// formats first, then the others, e.g. hf). mt::Error naming the directory and the formats tried
// when none does.
MT_API std::unique_ptr<CheckpointFormat> detect_checkpoint_format(Registry& registry,
                                                                  const std::filesystem::path& dir,
                                                                  const std::string& format = "");

}  // namespace mt
