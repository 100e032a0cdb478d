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
// The Namespace name a family's flag is stored under: its dest, else python_arg_name.
MT_API std::string flag_arg_name(const FlagInfo& flag);
// A list of ints as Python prints it and as flag text: "[1, 0, 1]".
MT_API std::string int_list_text(const std::vector<int64_t>& values);
// A list of str as the words of its flag (nargs='+'): "a b c".
MT_API std::string string_list_words(const std::vector<std::string>& values);
MT_API std::optional<int64_t> int_arg(const CheckpointArgs& args, const std::string& name);
// True only for an entry that is the Python True.
MT_API bool bool_arg(const CheckpointArgs& args, const std::string& name);
// Whether core_v0.19's tokenizer classes built the checkpoint's tokenizer: its args hold their
// fields (tokenizer_sentencepiece_legacy, which every core_v0.19 training records).
MT_API bool core_v0_19_tokenizer_args(const CheckpointArgs& args);
// Sets `name` (replacing an earlier value in its position, else appending).
MT_API void set_arg(CheckpointArgs& args, const std::string& name, ArgValue value);
// Whether the args are those of Megatron's MambaModel (pretrain_mamba.py): --is-hybrid-model, a
// hybrid ratio or layer pattern, or the Mamba stack's --spec.
MT_API bool megatron_mamba_model(const CheckpointArgs& args);

// A checkpoint's args as core_v0.13's arguments.py names them, which every reader here uses,
// whichever Megatron wrote them (core/src/checkpoint/megatron_arg_dialects.cpp):
// - a newer Megatron-LM stores some flags under other names (--norm-epsilon: layernorm_epsilon
//   in core_v0.19, norm_epsilon before; --apply-layernorm-1p: layernorm_zero_centered_gamma):
//   core_v0.13's name is added beside the newer one, with its value (negated where a switch
//   changed polarity: --disable-mamba-mem-eff-path's use_mamba_mem_eff_path);
// - Megatron-DeepSpeed (args with its `deepspeed` field) spells the same model its own way:
//   normalization layernorm / rmsnorm, layernorm_epsilon, rope_theta, num_key_value_heads,
//   use_rotary_position_embeddings without a position_embedding_type, num_experts [1] for a
//   dense model; they are added as core_v0.13's fields. Its own mixture of experts
//   (num_experts above 1, --mlp-type residual) is an mt::Error naming the field.
// The readers of Megatron's formats call it on every checkpoint's args.
MT_API void as_core_v013_args(CheckpointArgs& args);

// The model flags (ModelArgs) the args describe, by the family's flags (add_bias_linear False is
// --disable-bias-linear; None and False switches are left out), plus "padded-vocab-size" and
// "vocab-size" where the args hold them. A model-shaping arg the family does not read that is
// not Megatron's default is an mt::Error (mt/cli/megatron_flags.h check_checkpoint_model_args).
MT_API ModelArgs model_args_from_checkpoint(const CheckpointArgs& args,
                                            const std::vector<FlagInfo>& flags);

// Megatron's load_args_from_checkpoint (--use-checkpoint-args) over the family's flags: the
// command line's model args (`given`) with the checkpoint's values for the fields Megatron takes
// from it: always for the position embedding, biases, activation, norms, dropouts, query groups
// and the experts' and Mamba's sizes (the checkpoint's False switches clear given ones; a value
// it holds as None leaves the given one), only where `given` has none for the sizes argparse
// leaves unset (layers, hidden and FFN sizes, heads, kv channels, sequence length, position
// table).
MT_API ModelArgs load_args_from_checkpoint(const ModelArgs& given, const CheckpointArgs& saved,
                                           const std::vector<FlagInfo>& flags);

}  // namespace mt
