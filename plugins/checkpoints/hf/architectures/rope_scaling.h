// Rope scaling as config.json states it (rope_scaling in transformers 4, rope_parameters in 5)
// and as Megatron's flags compute it: Llama 3's (--use-rope-scaling --rope-scaling-factor) and
// linear (--rotary-seq-len-interpolation-factor). Llama's family and Gemma 3's full layers.
#pragma once

#include <optional>
#include <string>

#include "hf_config.h"
#include "hf_config_reader.h"
#include "hf_json.h"

namespace mt::plugins::hf {

// One rope_scaling / rope_parameters object `r` into c.llama3_rope_factor or
// c.linear_rope_factor (plain rope: neither), or "not supported yet" at `where` naming the values.
void read_rope_scaling(const ConfigJson& r, const std::string& where, HfConfig& c);

// The members of c's rope scaling (without rope_theta), or none for plain rope.
std::optional<json::Members> rope_scaling(const HfConfig& c);

}  // namespace mt::plugins::hf
