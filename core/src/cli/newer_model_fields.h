// The model options of Megatron's newer arguments.py (newer_megatron_flags()) that core_v0.13
// lacks, with what a checkpoint holding one other than its default means here
// (core/src/cli/newer_model_fields.cpp). Read by the checkpoint-args walk.
#pragma once

#include <span>
#include <string_view>

#include "megatron_flag_catalogue.h"

namespace mt::cli::detail {

struct NewerModelField {
    std::string_view flag;  // "--softmax-type"
    FlagRule rule;          // accepted (why) or refused (the capability)
};

std::span<const NewerModelField> newer_model_fields();

}  // namespace mt::cli::detail
