// A checkpoint's args Namespace (Megatron's argument names and Python values) as tools read and
// write it: typed look-ups, setting an entry in place, and the model flags it describes, which
// megatron-convert, megatron-generate and megatron-eval build their models from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mt/api.h"
#include "mt/checkpoint.h"
#include "mt/model.h"

namespace mt {

// Megatron's Namespace name of a flag: "num-layers" -> "num_layers".
MT_API std::string python_arg_name(std::string flag);
// A list of ints as Python prints it and as flag text: "[1, 0, 1]".
MT_API std::string int_list_text(const std::vector<int64_t>& values);
MT_API std::optional<int64_t> int_arg(const CheckpointArgs& args, const std::string& name);
// True only for an entry that is the Python True.
MT_API bool bool_arg(const CheckpointArgs& args, const std::string& name);
// Sets `name` (replacing an earlier value in its position, else appending).
MT_API void set_arg(CheckpointArgs& args, const std::string& name, ArgValue value);

// The model flags (ModelArgs) the args describe, by the family's flags (add_bias_linear False is
// --disable-bias-linear; None and False switches are left out), plus "padded-vocab-size" and
// "vocab-size" where the args hold them. A model-shaping arg the family does not read that is
// not Megatron's default is an mt::Error (mt/cli/megatron_flags.h check_checkpoint_model_args).
MT_API ModelArgs model_args_from_checkpoint(const CheckpointArgs& args,
                                            const std::vector<FlagInfo>& flags);

}  // namespace mt
