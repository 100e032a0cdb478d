// Megatron's multi-latent attention flags (--multi-latent-attention, --q-lora-rank, ...,
// --rope-type) as read into the transformer flags' config.
#pragma once

#include <vector>

#include "mt/api.h"
#include "mt/model.h"
#include "mt/model_args_reader.h"

namespace mt::nn {

struct TransformerArgs;

// The flags, with Megatron's help texts and defaults.
MT_API std::vector<FlagInfo> mla_flags();

// Reads the flags into config.mla (nothing without --multi-latent-attention), with Megatron's
// defaults and checks; mt::Error names the flag for anything refused. Reads config's
// max_position_embeddings, rotary_interleaved and recompute, so it runs after those are read.
MT_API void read_mla_args(const ModelArgsReader& f, TransformerArgs& config);

}  // namespace mt::nn
