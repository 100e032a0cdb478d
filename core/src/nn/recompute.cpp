#include "mt/nn/recompute.h"

#include <algorithm>

#include "mt/error.h"

namespace mt::nn {

bool recompute_module(const RecomputeConfig& c, const std::string& module) {
    if (c.granularity != "selective") return false;
    if (c.modules.empty()) return module == "core_attn";  // Megatron's default
    return std::find(c.modules.begin(), c.modules.end(), module) != c.modules.end();
}

std::vector<RecomputeSegment> recompute_segments(const RecomputeConfig& c, int64_t layers) {
    if (c.granularity.empty()) return {};
    MT_CHECK(c.granularity == "full" || c.granularity == "selective", "--recompute-granularity ",
             c.granularity, ": choose from 'full', 'selective'");
    if (c.granularity == "selective") {
        MT_CHECK(c.method.empty(),
                 "recompute method is not yet supported for selective recomputing granularity");
        MT_CHECK(c.num_layers == 0,
                 "When using recompute_granularity: selective "
                 "recompute_num_layers must be None.");
        for (const std::string& m : c.modules) {
            MT_CHECK(m == "core_attn" || m == "moe_act" || m == "layernorm" || m == "mla_up_proj" ||
                         m == "mlp" || m == "moe",
                     "Invalid choices for recompute_modules: {'", m, "'}");
            MT_CHECK(m == "core_attn" || m == "mlp" || m == "layernorm" || m == "mla_up_proj" ||
                         m == "moe_act",
                     "--recompute-modules ", m,
                     ": not supported yet (core_attn, mlp, layernorm, mla_up_proj and moe_act "
                     "are)");
        }
        return {};  // the layers recompute their modules (recompute_module)
    }
    MT_CHECK(!c.method.empty(),
             "Using recompute_granularity: full so recompute_method must be "
             "\"block\" or \"uniform\"");
    MT_CHECK(c.method == "uniform" || c.method == "block", "--recompute-method ", c.method,
             ": choose from 'uniform', 'block'");
    MT_CHECK(c.num_layers >= 1 && c.num_layers <= layers,
             "When using recompute_granularity: full recompute_num_layers must be between 1 and "
             "num_layers_per_pipeline_rank: ",
             layers);
    std::vector<RecomputeSegment> out;
    if (c.method == "uniform") {
        for (int64_t i = 0; i < layers; i += c.num_layers)
            out.push_back({i, std::min(layers, i + c.num_layers)});
    } else {
        for (int64_t i = 0; i < c.num_layers; ++i) out.push_back({i, i + 1});
    }
    return out;
}

}  // namespace mt::nn
