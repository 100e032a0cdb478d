#include "hybrid_args.h"

#include <algorithm>
#include <optional>

#include "mt/error.h"
#include "mt/model_args_reader.h"
#include "mt/nn/hybrid_layer_pattern.h"

namespace mt::plugins::gpt {

namespace {

// pretrain_mamba.py's --spec for Megatron's Mamba stack (what examples/mamba/train.sh gives),
// and core_v0.19's name for the same stack (pretrain_hybrid.py's default).
constexpr const char* kMambaStackSpec =
    "megatron.core.models.mamba.mamba_layer_specs mamba_stack_spec";
constexpr const char* kHybridStackSpec =
    "megatron.core.models.hybrid.hybrid_layer_specs hybrid_stack_spec";

}  // namespace

std::string mamba_stack_spec(const ModelArgs& args) {
    return args.count("hybrid-layer-pattern") ? kHybridStackSpec : kMambaStackSpec;
}

std::vector<FlagInfo> hybrid_flags() {
    FlagInfo spec =
        value_flag("spec", "the layer spec: Megatron's Mamba (core_v0.19: hybrid) stack spec only");
    spec.multiple = true;
    return {
        spec,
        switch_flag("is-hybrid-model", "a hybrid Mamba model (pretrain_mamba.py's models are)"),
        value_flag("hybrid-attention-ratio", "share of the layers that are attention layers",
                   "0.0"),
        value_flag("hybrid-mlp-ratio", "share of the layers that are MLP layers", "0.0"),
        value_flag("hybrid-override-pattern",
                   "the layers as a string of M (Mamba), * (attention) and - (MLP)"),
        value_flag("hybrid-layer-pattern", "core_v0.19's name for --hybrid-override-pattern"),
        value_flag("mamba-state-dim", "state dimension of the Mamba layers", "128"),
        value_flag("mamba-head-dim", "head dimension of the Mamba layers", "64"),
        value_flag("mamba-num-groups", "groups of heads sharing B and C in the Mamba layers", "8"),
        value_flag("mamba-num-heads",
                   "heads of the Mamba layers (default 2 x hidden size / head dimension)"),
        switch_flag("disable-mamba-mem-eff-path",
                    "Megatron's unfused Mamba kernels: the same results (one path here)"),
    };
}

HybridArgs read_hybrid_args(const ModelArgs& args, int64_t num_layers) {
    ModelArgsReader f(args);
    HybridArgs h;
    h.is_hybrid_model = f.flag("is-hybrid-model");
    MT_CHECK(
        !f.has("spec") || f.text("spec") == kMambaStackSpec || f.text("spec") == kHybridStackSpec,
        "not supported yet: custom layer specs (--spec ", f.text("spec").substr(0, 200),
        "); a hybrid model takes --spec ", kMambaStackSpec, " (or ", kHybridStackSpec, ")");
    h.mamba.state_dim = f.integer("mamba-state-dim", h.mamba.state_dim);
    h.mamba.head_dim = f.integer("mamba-head-dim", h.mamba.head_dim);
    h.mamba.num_groups = f.integer("mamba-num-groups", h.mamba.num_groups);
    h.mamba.num_heads = f.integer("mamba-num-heads", h.mamba.num_heads);
    MT_CHECK(h.mamba.state_dim > 0 && h.mamba.head_dim > 0 && h.mamba.num_groups > 0 &&
                 h.mamba.num_heads >= 0,
             "--mamba-state-dim, --mamba-head-dim, --mamba-num-groups and --mamba-num-heads "
             "must be positive");
    MT_CHECK(!(f.has("hybrid-override-pattern") && f.has("hybrid-layer-pattern")),
             "give one of --hybrid-override-pattern and --hybrid-layer-pattern");
    std::optional<std::string> pattern;
    for (const char* name : {"hybrid-override-pattern", "hybrid-layer-pattern"})
        if (f.has(name)) pattern = f.text(name);
    nn::HybridAllocation a =
        nn::allocate_hybrid_layers(num_layers, f.real("hybrid-attention-ratio", 0.0),
                                   f.real("hybrid-mlp-ratio", 0.0), pattern);
    h.layers = std::move(a.layers);
    h.allocation = std::move(a.lines);
    return h;
}

double hybrid_training_flops(const nn::TransformerArgs& c, const HybridArgs& h, int64_t samples) {
    const double b = double(samples), s = double(c.seq_length), d = double(c.hidden_size);
    const double heads = double(c.num_attention_heads), swiglu = c.swiglu ? 1.5 : 1.0;
    // attn_layer_flops: p = kv_channels heads / hidden; g the key/value groups.
    const double p = double(c.kv_channels) * heads / d, g = double(c.num_query_groups);
    const double attention = 4 * b * s * d * p * (d + d * (g / heads) + s / 2);
    const double mlp = 4 * (double(c.ffn_hidden_size) / d) * swiglu * b * s * d * d;
    const double d_in = 2 * d, n = double(h.mamba.state_dim);
    const double nheads = double(h.mamba.heads(c.hidden_size));
    const double mamba = 2 * b * s * d * (2 * d_in + 2 * double(h.mamba.num_groups) * n + nheads) +
                         7 * b * s * d_in * n + 2 * b * s * d_in * d;
    const double logits = 2 * b * s * d * double(c.padded_vocab_size);
    // core_v0.19's moe_layer_flops: the routed experts' MLPs at top-k and the shared experts'.
    const double moe_ffn = double(c.moe.enabled() ? c.moe.ffn_hidden_size : c.ffn_hidden_size);
    const double moe = 4 * b * s * d * moe_ffn * double(c.moe.router.topk) * swiglu +
                       4 * b * s * d * double(c.moe.shared_expert_ffn_size) * swiglu;
    const auto count = [&](char symbol) { return double(h.count(symbol)); };
    return 3 * (count('*') * attention + count('-') * mlp + count('M') * mamba + count('E') * moe +
                logits);
}

}  // namespace mt::plugins::gpt
