// The catalogue's rows: for each Megatron flag that some tool does not define itself, what a
// training tool and an inference tool do with it (core/src/cli/megatron_flag_catalogue.cpp).
#pragma once

#include <span>
#include <string_view>

#include "mt/cli/megatron_flags.h"

namespace mt::cli::detail {

struct FlagRule {
    // implemented: the tool is expected to define the flag itself (no fallback here).
    FlagStatus status = FlagStatus::unknown;
    const char* text = "";
    // For refused value flags: a value besides Megatron's default that changes nothing.
    const char* also_harmless = nullptr;
    // For refused flags: "flag=value", accepted when the tool's own flag has that value.
    const char* unless = nullptr;
};

struct CatalogueEntry {
    std::string_view flag;
    FlagRule training, inference;
    constexpr CatalogueEntry(std::string_view f, FlagRule both)
        : flag(f), training(both), inference(both) {}
    constexpr CatalogueEntry(std::string_view f, FlagRule train, FlagRule infer)
        : flag(f), training(train), inference(infer) {}
};

// core_v0.13's rows (megatron_flag_catalogue.cpp), then those of the flags core_v0.19 added
// (megatron_flag_catalogue_0_19.cpp) and of those only Megatron-DeepSpeed has
// (megatron_flag_catalogue_deepspeed.cpp).
std::span<const CatalogueEntry> catalogue();
std::span<const CatalogueEntry> newer_catalogue();
std::span<const CatalogueEntry> deepspeed_catalogue();

}  // namespace mt::cli::detail
