// The MoE layers Mixtral, Qwen3-MoE and GPT-OSS have (HfConfig's num_experts, experts_per_token):
// every layer sparse, each token to the softmax of its router's top-k logits (Qwen3-MoE may
// softmax first), no shared expert, no capacity; as Megatron's args say it.
#pragma once

#include <string>

#include "hf_config.h"
#include "hf_saver_args.h"

namespace mt::plugins::hf {

// The experts, top k and expert FFN size of a MoE checkpoint's args (c.ffn_hidden_size the
// fallback), after refusing, with `why`, any routing or layout such folders do not have (all but
// --moe-router-pre-softmax, which the caller judges).
void read_topk_moe_args(const SaverArgs& a, const std::string& why, HfConfig& c);

}  // namespace mt::plugins::hf
