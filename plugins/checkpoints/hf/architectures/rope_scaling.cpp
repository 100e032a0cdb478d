// config.json's rope scaling <-> Megatron's rope flags.
#include "rope_scaling.h"

#include "mt/error.h"

namespace mt::plugins::hf {

void read_rope_scaling(const ConfigJson& r, const std::string& where, HfConfig& c) {
    const std::string type = r.text("rope_type", r.text("type", "default"));
    if (type == "default") return;
    const double factor = r.real("factor", 0);
    if (type == "llama3") {
        const double low = r.real("low_freq_factor", 1), high = r.real("high_freq_factor", 4);
        const int64_t original = r.integer("original_max_position_embeddings", 8192);
        MT_CHECK(factor > 0 && low == 1 && high == 4 && original == 8192, where,
                 ": not supported yet: llama3 rope scaling with factor ", factor,
                 ", low_freq_factor ", low, ", high_freq_factor ", high,
                 ", original_max_position_embeddings ", original,
                 " (Megatron's --use-rope-scaling fixes 1, 4 and 8192)");
        c.llama3_rope_factor = factor;
        return;
    }
    if (type == "linear") {
        MT_CHECK(factor >= 1 && factor == double(int64_t(factor)), where,
                 ": not supported yet: linear rope scaling by ", factor,
                 " (Megatron's --rotary-seq-len-interpolation-factor is an integer)");
        c.linear_rope_factor = int64_t(factor);
        return;
    }
    MT_FAIL(where, ": not supported yet: '", type,
            "' rope scaling (supported are llama3's and linear)");
}

std::optional<json::Members> rope_scaling(const HfConfig& c) {
    using namespace json;
    if (c.llama3_rope_factor > 0)
        return Members{{"factor", real(c.llama3_rope_factor)},
                       {"high_freq_factor", real(4.0)},
                       {"low_freq_factor", real(1.0)},
                       {"original_max_position_embeddings", integer(8192)},
                       {"rope_type", text("llama3")}};
    if (c.linear_rope_factor > 0)
        return Members{{"factor", real(double(c.linear_rope_factor))},
                       {"rope_type", text("linear")}};
    return std::nullopt;
}

}  // namespace mt::plugins::hf
