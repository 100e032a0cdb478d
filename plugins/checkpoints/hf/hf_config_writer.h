// The JSON files of a Hugging Face model folder that describe the model rather than hold it:
// config.json and generation_config.json, written as transformers writes them (keys sorted,
// two-space indent, Python's float repr).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hf_config.h"
#include "hf_json.h"
#include "mt/dtype.h"

namespace mt::plugins::hf {

// What config.json says besides the model's shape.
struct HfConfigExtras {
    DType dtype = DType::f32;                           // of the weights written
    std::optional<int64_t> bos_token_id, eos_token_id;  // when the tokenizer is known
};

// config.json for the config's model_type: its family's config_members and the keys every family
// has. Both spellings of the settings transformers renamed are written (torch_dtype and dtype,
// rope_theta and rope_parameters), so transformers 4.x and 5.x read the folder alike.
std::string hf_config_json(const HfConfig& config, const HfConfigExtras& extras);

// The rope settings as transformers 4.x and 5.x read them, into a config's members: rope_scaling
// (`scaling`, or null for plain rope) and rope_parameters (the scaling, or rope_type default,
// with rope_theta `theta`).
void put_rope_settings(json::Members& m, const std::optional<json::Members>& scaling, double theta);

// generation_config.json: the bos/eos ids when known (transformers' "_from_model_config").
std::string hf_generation_config_json(const HfConfigExtras& extras);

}  // namespace mt::plugins::hf
