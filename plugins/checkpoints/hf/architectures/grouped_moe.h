// Nemotron-H's and DeepSeek's MoE layers (GroupedMoe), shared by the hybrid and deepseek
// descriptions: read from config.json, as Megatron's flags, and from Megatron's args.
#pragma once

#include <string>

#include "hf_config.h"
#include "mt/model.h"

namespace mt::plugins::hf {

class ConfigJson;
class SaverArgs;

// NemotronHMoE's and DeepseekV3MoE's routing and sizes (GroupedMoe, but the shared expert's),
// where they route as Megatron's sigmoid router does: a group's score is the sum of its top two
// (Megatron's: of its top topk / group_topk), and the chosen weights are renormalised exactly when
// there is more than one (Megatron's rule). c.moe.softmax set: DeepSeek-V2's greedy routing.
void read_grouped_moe(const ConfigJson& j, HfConfig& c);

// Megatron's flags for GroupedMoe's routing: sigmoid scores with the expert bias (or V2's
// softmax), groups, the scaling factor, the shared expert.
void add_grouped_moe_args(const HfConfig& c, ModelArgs& a);

// MoE layers as NemotronHMoE and DeepseekV3MoE route them (GroupedMoe): sigmoid scores with the
// expert bias, groups scored by their top two, shared experts, no capacity; with `softmax`
// allowed, DeepseekV2Moe's too (softmax over every expert, the top k scaled, no groups). `why`
// names the model for a refusal.
void read_grouped_moe_args(const SaverArgs& a, HfConfig& c, const std::string& why,
                           bool softmax_allowed = false);

}  // namespace mt::plugins::hf
