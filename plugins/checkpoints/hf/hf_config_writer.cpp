#include "hf_config_writer.h"

#include <optional>

#include "hf_architecture.h"
#include "hf_json.h"
#include "mt/error.h"

namespace mt::plugins::hf {

namespace {

using namespace json;

std::string optional_id(const std::optional<int64_t>& id) {
    return id ? integer(*id) : "null";
}

std::string torch_dtype(DType d) {
    switch (d) {
        case DType::f32:
            return "float32";
        case DType::bf16:
            return "bfloat16";
        case DType::f16:
            return "float16";
        default:
            MT_FAIL("--saver hf: weights of dtype ", dtype_name(d), " (f32, bf16 or f16 only)");
    }
}

}  // namespace

std::string hf_config_json(const HfConfig& c, const HfConfigExtras& extras) {
    Members m = c.arch->config_members(c);
    m["bos_token_id"] = optional_id(extras.bos_token_id);
    m["eos_token_id"] = optional_id(extras.eos_token_id);
    m["dtype"] = m["torch_dtype"] = text(torch_dtype(extras.dtype));
    m["use_cache"] = boolean(true);
    m["vocab_size"] = integer(c.vocab_size);
    return object(m, 0) + "\n";
}

void put_rope_settings(Members& m, const std::optional<Members>& scaling, double theta) {
    Members parameters = scaling.value_or(Members{{"rope_type", text("default")}});
    parameters["rope_theta"] = real(theta);
    m["rope_parameters"] = object(parameters, 1);
    m["rope_scaling"] = scaling ? object(*scaling, 1) : "null";
}

std::string hf_generation_config_json(const HfConfigExtras& extras) {
    Members m = {{"_from_model_config", boolean(true)}};
    if (extras.bos_token_id) m["bos_token_id"] = integer(*extras.bos_token_id);
    if (extras.eos_token_id) m["eos_token_id"] = integer(*extras.eos_token_id);
    return object(m, 0) + "\n";
}

}  // namespace mt::plugins::hf
