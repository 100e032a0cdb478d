// The MoE layers Mixtral, Qwen3-MoE and GPT-OSS have (HfConfig's num_experts, experts_per_token):
// every layer sparse, each token to the softmax of its router's top-k logits (Qwen3-MoE may
// softmax first), no shared expert, no capacity; as Megatron's args say it.
#pragma once

#include <string>

#include "hf_config.h"
#include "hf_config_reader.h"
#include "hf_saver_args.h"
#include "mt/model.h"

namespace mt::plugins::hf {

// config.json's experts (under `experts_key`: num_local_experts, or transformers 4's num_experts)
// and num_experts_per_tok, checked (c.num_experts, c.experts_per_token).
void read_topk_experts(const ConfigJson& j, const char* experts_key, HfConfig& c);

// Megatron's flags of c's MoE layers: --num-experts, --moe-router-topk, --moe-ffn-hidden-size
// (c.ffn_hidden_size: the experts').
void put_topk_moe_args(const HfConfig& c, ModelArgs& a);

// The experts, top k and expert FFN size of a MoE checkpoint's args (c.ffn_hidden_size the
// fallback), after refusing, with `why`, any routing or layout such folders do not have (all but
// --moe-router-pre-softmax, which the caller judges).
void read_topk_moe_args(const SaverArgs& a, const std::string& why, HfConfig& c);

}  // namespace mt::plugins::hf
