// GPT-OSS (transformers' GptOssForCausalLM, model_type gpt_oss): Mixtral's layout with biases
// everywhere (q/k/v/o, the router, each expert's projections), a learned sink per attention head,
// sliding windows on the layers layer_types names, YaRN rope, and experts whose gate and up
// columns interleave in one gate_up_proj and whose GLU is clamped quick GeGLU. Megatron's GPT
// with core_v0.19's --quick-geglu --glu-linear-offset 1 --activation-func-clamp-value
// --softmax-type learnable --position-embedding-type yarn (as Megatron-Bridge maps it). OpenAI's
// folders pack the experts in MXFP4 (dequantized on load; written back unquantized).
#include <cmath>

#include "hf_architecture.h"
#include "hf_config_reader.h"
#include "hf_config_writer.h"
#include "hf_export.h"
#include "hf_import.h"
#include "hf_layout.h"
#include "hf_saver_args.h"
#include "mxfp4.h"
#include "sliding_window.h"
#include "topk_moe.h"

namespace mt::plugins::hf {

namespace {

using namespace json;

// Megatron's quick_gelu fixes the sigmoid's slope.
constexpr double kQuickGeluSlope = 1.702;

// gate_up_proj's [..., 2I] columns, gate and up interleaved (gate = [..., 0::2]), as [gate | up]
// halves (`to_halves`), or back.
Tensor regroup_gate_up(const Tensor& t, bool to_halves) {
    const int64_t rows = t.numel() / t.shape().back(), half = t.shape().back() / 2;
    const Shape split = to_halves ? Shape{rows, half, 2} : Shape{rows, 2, half};
    return t.contiguous().view(split).transpose(1, 2).contiguous().view(t.shape());
}

// rope_parameters (transformers 5) or rope_scaling with rope_theta (4): YaRN, or plain rope.
void read_rope(const ConfigJson& j, HfConfig& c) {
    const std::string& where = j.where();
    c.rope_theta = j.real("rope_theta", 150000);
    simdjson::dom::object rope;
    const bool v5 = !j.object()["rope_parameters"].get_object().get(rope);
    if (!v5 && j.object()["rope_scaling"].get_object().get(rope)) return;
    const ConfigJson r(rope, where + (v5 ? " rope_parameters" : " rope_scaling"));
    c.rope_theta = r.real("rope_theta", c.rope_theta);
    const std::string type = r.text("rope_type", r.text("type", "default"));
    if (type == "default") return;
    MT_CHECK(type == "yarn", r.where(), ": not supported yet: '", type,
             "' rope scaling (GPT-OSS's is yarn)");
    for (const char* key : {"mscale", "mscale_all_dim", "attention_factor"})
        MT_CHECK(!r.has(key), r.where(), ": not supported yet: '", key,
                 "' (Megatron's YaRN for GPT takes the attention factor from the factor alone)");
    GptOssParts& g = c.gpt_oss;
    g.yarn_factor = r.real("factor", 0);
    MT_CHECK(g.yarn_factor > 0, r.where(), ": 'factor' must be positive");
    g.yarn_beta_fast = r.real("beta_fast", 32);
    g.yarn_beta_slow = r.real("beta_slow", 1);
    g.yarn_original_max_positions =
        r.integer("original_max_position_embeddings", c.max_position_embeddings);
    g.yarn_truncate = r.boolean("truncate", true);
}

void read_gpt_oss(const ConfigJson& j, HfConfig& c) {
    const std::string& where = j.where();
    // OpenAI's releases: the experts' projections in MXFP4 (dequantized on load), the rest not.
    if (j.has("quantization_config")) {
        simdjson::dom::object q;
        MT_CHECK(!j.object()["quantization_config"].get_object().get(q), where,
                 ": 'quantization_config' must be an object");
        const std::string method =
            ConfigJson(q, where + " quantization_config").text("quant_method", "");
        MT_CHECK(method == "mxfp4", where,
                 ": not supported yet: 'quantization_config' with "
                 "quant_method '",
                 method.substr(0, 64), "' (GPT-OSS's MXFP4 experts are read)");
    }
    // Megatron's add_bias_linear gives every linear its bias, or none.
    MT_CHECK(j.boolean("attention_bias", true), where,
             ": not supported yet: 'attention_bias' false (GPT-OSS without attention biases)");
    const double alpha = j.real("swiglu_alpha", kQuickGeluSlope);
    MT_CHECK(std::abs(alpha - kQuickGeluSlope) < 1e-12, where,
             ": not supported yet: "
             "'swiglu_alpha' ",
             alpha, " (Megatron's quick_gelu is x sigmoid(1.702 x))");
    c.num_layers = j.integer("num_hidden_layers");
    c.hidden_size = j.integer("hidden_size");
    read_attention_heads(j, c);
    c.ffn_hidden_size = j.integer("intermediate_size");
    c.vocab_size = j.integer("vocab_size");
    c.max_position_embeddings = j.integer("max_position_embeddings");
    c.norm_epsilon = j.real("rms_norm_eps", 1e-5);
    c.tied = j.boolean("tie_word_embeddings", false);
    c.initializer_range = j.real("initializer_range", 0.02);
    read_topk_experts(j, "num_local_experts", c);
    c.gpt_oss.swiglu_limit = j.real("swiglu_limit", 7.0);
    MT_CHECK(c.gpt_oss.swiglu_limit > 0 && std::isfinite(c.gpt_oss.swiglu_limit), where,
             ": 'swiglu_limit' must be positive");
    read_rope(j, c);
    if (j.has("sliding_window")) {
        c.sliding_window = j.integer("sliding_window");
        MT_CHECK(c.sliding_window > 0, where, ": 'sliding_window' must be positive");
        read_windowed_layers(j, c);
    }
}

// One layer's experts from MXFP4 blocks and scales (OpenAI's releases): gate_up_proj_blocks
// [E, 2I, H/32, 16] dequantize to gate_up_proj[e]^T (its rows gate and up interleaved),
// down_proj_blocks [E, H, I/32, 16] to down_proj[e]^T, in the folder's other weights' dtype
// (the values are exact in bf16 and f32).
void import_mxfp4_experts(HfImport& in, const std::string& ex, const std::string& mlp) {
    const HfConfig& c = in.config();
    const int64_t h = c.hidden_size, f = c.ffn_hidden_size, E = c.num_experts;
    MT_CHECK(h % 32 == 0 && f % 32 == 0, "MXFP4 experts need hidden_size (", h,
             ") and intermediate_size (", f, ") in blocks of 32");
    const std::string up_blocks = in.hf(ex + "gate_up_proj_blocks", {E, 2 * f, h / 32, 16});
    const std::string up_scales = in.hf(ex + "gate_up_proj_scales", {E, 2 * f, h / 32});
    const std::string down_blocks = in.hf(ex + "down_proj_blocks", {E, h, f / 32, 16});
    const std::string down_scales = in.hf(ex + "down_proj_scales", {E, h, f / 32});
    const DType dtype = in.dtype(ex + "gate_up_proj_bias");
    for (int64_t e = 0; e < E; ++e) {
        const std::string to = mlp + "experts.local_experts." + std::to_string(e) + ".";
        const auto expert = [e](const HfRead& t, const std::string& blocks,
                                const std::string& scales) {
            return dequantize_mxfp4(t.tensors.get(blocks, DType::u8).select(0, e),
                                    t.tensors.get(scales, DType::u8).select(0, e), t.as);
        };
        in.put(
            to + "linear_fc1.weight", {2 * f, h}, {up_blocks, up_scales},
            [=](const HfRead& t) {
                const Tensor rows = expert(t, up_blocks, up_scales);  // gate, up interleaved
                return transposed(regroup_gate_up(transposed(rows), true));
            },
            dtype);
        in.put(
            to + "linear_fc2.weight", {h, f}, {down_blocks, down_scales},
            [=](const HfRead& t) { return expert(t, down_blocks, down_scales); }, dtype);
    }
}

void import_gpt_oss(HfImport& in) {
    const HfConfig& c = in.config();
    const int64_t h = c.hidden_size, f = c.ffn_hidden_size, hd = c.head_dim, E = c.num_experts;
    const int64_t nq = c.num_heads, ng = c.num_kv_heads;
    in.put("embedding.word_embeddings.weight",
           in.hf("model.embed_tokens.weight", {c.vocab_size, h}));
    for (int64_t i = 0; i < c.num_layers; ++i) {
        const std::string src = "model.layers." + std::to_string(i) + ".";
        const std::string dst = "decoder.layers." + std::to_string(i) + ".";
        const std::string attn = dst + "self_attention.", mlp = dst + "mlp.";
        const std::string sa = src + "self_attn.";
        in.put(attn + "core_attention.softmax_offset", in.hf(sa + "sinks", {nq}));
        in.put(attn + "linear_proj.weight", in.hf(sa + "o_proj.weight", {h, nq * hd}));
        in.put(attn + "linear_proj.bias", in.hf(sa + "o_proj.bias", {h}));
        in.put(attn + "linear_qkv.layer_norm_weight", in.hf(src + "input_layernorm.weight", {h}));
        for (const char* kind : {"weight", "bias"}) {
            const bool w = std::string(kind) == "weight";
            auto shape = [&](int64_t rows) { return w ? Shape{rows, h} : Shape{rows}; };
            in.put_qkv(attn + "linear_qkv." + kind, in.hf(sa + "q_proj." + kind, shape(nq * hd)),
                       in.hf(sa + "k_proj." + kind, shape(ng * hd)),
                       in.hf(sa + "v_proj." + kind, shape(ng * hd)), nq, ng, hd);
        }
        in.put(dst + "pre_mlp_layernorm.weight",
               in.hf(src + "post_attention_layernorm.weight", {h}));
        in.put(mlp + "router.weight", in.hf(src + "mlp.router.weight", {E, h}));
        in.put(mlp + "router.bias", in.hf(src + "mlp.router.bias", {E}));
        const std::string ex = src + "mlp.experts.";
        if (in.has(ex + "gate_up_proj_blocks")) {
            import_mxfp4_experts(in, ex, mlp);
        } else {
            const std::string gate_up = in.hf(ex + "gate_up_proj", {E, h, 2 * f});
            const std::string down = in.hf(ex + "down_proj", {E, f, h});
            for (int64_t e = 0; e < E; ++e) {
                const std::string to = mlp + "experts.local_experts." + std::to_string(e) + ".";
                // fc1 = [gate; up] rows of gate_up_proj[e]^T; fc2 = down_proj[e]^T.
                in.put(to + "linear_fc1.weight", {2 * f, h}, {gate_up},
                       [gate_up, e](const HfRead& t) {
                           return transposed(regroup_gate_up(t.get(gate_up).select(0, e), true));
                       });
                in.put(to + "linear_fc2.weight", {h, f}, {down}, [down, e](const HfRead& t) {
                    return transposed(t.get(down).select(0, e).contiguous());
                });
            }
        }
        const std::string gate_up_bias = in.hf(ex + "gate_up_proj_bias", {E, 2 * f});
        const std::string down_bias = in.hf(ex + "down_proj_bias", {E, h});
        for (int64_t e = 0; e < E; ++e) {
            const std::string to = mlp + "experts.local_experts." + std::to_string(e) + ".";
            in.put(to + "linear_fc1.bias", {2 * f}, {gate_up_bias},
                   [gate_up_bias, e](const HfRead& t) {
                       return regroup_gate_up(t.get(gate_up_bias).select(0, e), true);
                   });
            in.put(to + "linear_fc2.bias", {h}, {down_bias}, [down_bias, e](const HfRead& t) {
                return t.get(down_bias).select(0, e).contiguous();
            });
        }
    }
    in.put("decoder.final_layernorm.weight", in.hf("model.norm.weight", {h}));
    if (!c.tied) in.put("output_layer.weight", in.hf("lm_head.weight", {c.vocab_size, h}));
}

// The experts' projections of one layer stacked as GptOssExperts holds them: parts[e] is expert
// e's, `shape` the whole.
Lazy stacked(const Shape& shape, std::vector<Lazy> parts) {
    return {shape, [parts = std::move(parts), shape]() {
                std::vector<Tensor> made;
                for (const Lazy& p : parts) made.push_back(p.make().contiguous());
                Tensor out = Tensor::empty(shape, made.front().dtype());
                for (size_t e = 0; e < made.size(); ++e)
                    out.select(0, int64_t(e)).copy_from(made[e]);
                return out;
            }};
}

void export_gpt_oss(HfExport& out) {
    const HfConfig& c = out.config();
    const int64_t h = c.hidden_size, f = c.ffn_hidden_size, hd = c.head_dim, E = c.num_experts;
    const int64_t nq = c.num_heads, ng = c.num_kv_heads;
    out.put("model.embed_tokens.weight", out.vocab_table("embedding.word_embeddings.weight"));
    for (int64_t i = 0; i < c.num_layers; ++i) {
        const std::string src = "decoder.layers." + std::to_string(i) + ".";
        const std::string dst = "model.layers." + std::to_string(i) + ".";
        const std::string attn = src + "self_attention.", mlp = src + "mlp.";
        // GptOssDecoderLayer's state-dict order: attention (sinks, q, k, v, o), the MLP (router,
        // experts), then the norms.
        out.put(dst + "self_attn.sinks", out.get(attn + "core_attention.softmax_offset", {nq}));
        LazyQkv w =
            ungroup(out.get(attn + "linear_qkv.weight", {(nq + 2 * ng) * hd, h}), nq, ng, hd);
        LazyQkv b = ungroup(out.get(attn + "linear_qkv.bias", {(nq + 2 * ng) * hd}), nq, ng, hd);
        for (auto [name, wp, bp] :
             {std::tuple{"q_proj", &w.q, &b.q}, std::tuple{"k_proj", &w.k, &b.k},
              std::tuple{"v_proj", &w.v, &b.v}}) {
            out.put(dst + "self_attn." + name + ".weight", std::move(*wp));
            out.put(dst + "self_attn." + name + ".bias", std::move(*bp));
        }
        out.put(dst + "self_attn.o_proj.weight",
                out.get(attn + "linear_proj.weight", {h, nq * hd}));
        out.put(dst + "self_attn.o_proj.bias", out.get(attn + "linear_proj.bias", {h}));
        out.put(dst + "mlp.router.weight", out.get(mlp + "router.weight", {E, h}));
        out.put(dst + "mlp.router.bias", out.get(mlp + "router.bias", {E}));
        std::vector<Lazy> gate_up, gate_up_bias, down, down_bias;
        for (int64_t e = 0; e < E; ++e) {
            auto bias = [&](int fc) {
                std::string name = out.expert_fc(mlp, fc, e);
                return name.replace(name.rfind("weight"), 6, "bias");
            };
            gate_up.push_back(
                out.get(out.expert_fc(mlp, 1, e), {2 * f, h}).map({h, 2 * f}, [](const Tensor& t) {
                    return regroup_gate_up(transposed(t), false);
                }));
            gate_up_bias.push_back(out.get(bias(1), {2 * f}).map({2 * f}, [](const Tensor& t) {
                return regroup_gate_up(t, false);
            }));
            down.push_back(out.get(out.expert_fc(mlp, 2, e), {h, f}).transpose());
            down_bias.push_back(out.get(bias(2), {h}));
        }
        const std::string ex = dst + "mlp.experts.";
        out.put(ex + "gate_up_proj", stacked({E, h, 2 * f}, std::move(gate_up)));
        out.put(ex + "gate_up_proj_bias", stacked({E, 2 * f}, std::move(gate_up_bias)));
        out.put(ex + "down_proj", stacked({E, f, h}, std::move(down)));
        out.put(ex + "down_proj_bias", stacked({E, h}, std::move(down_bias)));
        out.put(dst + "input_layernorm.weight",
                out.get(attn + "linear_qkv.layer_norm_weight", {h}));
        out.put(dst + "post_attention_layernorm.weight",
                out.get(src + "pre_mlp_layernorm.weight", {h}));
    }
    out.put("model.norm.weight", out.get("decoder.final_layernorm.weight", {h}));
    if (!c.tied) out.put("lm_head.weight", out.vocab_table("output_layer.weight"));
}

Members gpt_oss_members(const HfConfig& c) {
    const GptOssParts& g = c.gpt_oss;
    std::vector<std::string> types;
    for (int64_t i = 0; i < c.num_layers; ++i)
        types.push_back(c.sliding_window > 0 &&
                                (c.windowed_layers.empty() || c.windowed_layers[size_t(i)])
                            ? "sliding_attention"
                            : "full_attention");
    Members m = {{"architectures", strings({"GptOssForCausalLM"}, 1)},
                 {"attention_bias", boolean(true)},
                 {"attention_dropout", real(0.0)},
                 {"head_dim", integer(c.head_dim)},
                 {"hidden_act", text("silu")},
                 {"hidden_size", integer(c.hidden_size)},
                 {"initializer_range", real(c.initializer_range)},
                 {"intermediate_size", integer(c.ffn_hidden_size)},
                 {"layer_types", strings(types, 1)},
                 {"max_position_embeddings", integer(c.max_position_embeddings)},
                 {"model_type", text("gpt_oss")},
                 {"num_attention_heads", integer(c.num_heads)},
                 {"num_experts_per_tok", integer(c.experts_per_token)},
                 {"num_hidden_layers", integer(c.num_layers)},
                 {"num_key_value_heads", integer(c.num_kv_heads)},
                 {"num_local_experts", integer(c.num_experts)},
                 {"output_router_logits", boolean(false)},
                 {"rms_norm_eps", real(c.norm_epsilon)},
                 {"router_aux_loss_coef", real(0.0)},
                 // transformers needs a window even where no layer has one.
                 {"sliding_window", integer(c.sliding_window > 0 ? c.sliding_window : 128)},
                 {"swiglu_alpha", real(kQuickGeluSlope)},
                 {"swiglu_limit", real(g.swiglu_limit)},
                 {"tie_word_embeddings", boolean(c.tied)}};
    std::optional<Members> scaling;
    if (g.yarn_factor > 0)
        scaling =
            Members{{"beta_fast", real(g.yarn_beta_fast)},
                    {"beta_slow", real(g.yarn_beta_slow)},
                    {"factor", real(g.yarn_factor)},
                    {"original_max_position_embeddings", integer(g.yarn_original_max_positions)},
                    {"rope_type", text("yarn")},
                    {"truncate", boolean(g.yarn_truncate)}};
    put_rope_settings(m, scaling, c.rope_theta);
    return m;
}

class GptOss final : public HfArchitecture {
  public:
    std::vector<std::string> model_types() const override { return {"gpt_oss"}; }
    void read_config(const ConfigJson& j, const std::filesystem::path&,
                     HfConfig& c) const override {
        read_gpt_oss(j, c);
    }
    void add_model_args(const HfConfig& c, ModelArgs& a) const override {
        const GptOssParts& g = c.gpt_oss;
        a["normalization"] = "RMSNorm";
        a["rotary-base"] = number_text(c.rope_theta);
        if (g.yarn_factor > 0) {
            a["position-embedding-type"] = "yarn";
            a["rotary-scaling-factor"] = number_text(g.yarn_factor);
            a["yarn-original-max-position-embeddings"] =
                std::to_string(g.yarn_original_max_positions);
            a["yarn-beta-fast"] = number_text(g.yarn_beta_fast);
            a["yarn-beta-slow"] = number_text(g.yarn_beta_slow);
            if (!g.yarn_truncate) a["no-yarn-correction-range-round-to-int"] = "";
        } else {
            a["position-embedding-type"] = "rope";
        }
        a["softmax-type"] = "learnable";
        a["quick-geglu"] = "";
        a["glu-linear-offset"] = "1.0";
        a["activation-func-clamp-value"] = number_text(g.swiglu_limit);
        put_window_args(c, a);
        put_topk_moe_args(c, a);
    }
    void import_tensors(HfImport& in) const override { import_gpt_oss(in); }
    void export_tensors(HfExport& out) const override { export_gpt_oss(out); }
    Members config_members(const HfConfig& c) const override { return gpt_oss_members(c); }

    bool exports(const SaverArgs& a, const std::optional<BertParts>& bert) const override {
        return !bert && a.flag("quick_geglu") && a.set("num_experts");
    }
    HfConfig config_from_args(const SaverArgs& a, const std::optional<BertParts>&) const override {
        HfConfig c = transformer_sizes_from_args(a);
        c.model_type = "gpt_oss";
        const std::string why =
            "GPT-OSS is RMSNorm, every linear biased, learned attention sinks, quick GeGLU "
            "experts (up + 1) clamped, every layer MoE with softmax top-k routing";
        const std::string norm = a.text("normalization", "LayerNorm");
        if (norm != "RMSNorm") not_supported("normalization", norm, why);
        if (!a.flag("add_bias_linear", true)) not_supported("add_bias_linear", "False", why);
        if (a.text("softmax_type", "vanilla") != "learnable")
            not_supported("softmax_type", a.text("softmax_type", "vanilla"), why);
        if (a.real("glu_linear_offset", 0) != 1.0)
            not_supported("glu_linear_offset", number_text(a.real("glu_linear_offset", 0)), why);
        if (!a.set("activation_func_clamp_value"))
            not_supported("activation_func_clamp_value", "None", why);
        c.gpt_oss.swiglu_limit = a.real("activation_func_clamp_value", 7.0);
        for (const char* name : {"qk_layernorm", "moe_router_pre_softmax", "rotary_interleaved"})
            if (a.flag(name)) not_supported(name, "True", why);
        read_topk_moe_args(a, why, c);
        const double percent = a.real("rotary_percent", 1.0);
        if (percent != 1.0) not_supported("rotary_percent", number_text(percent), why);
        c.rope_theta = a.real("rotary_base", 10000);
        const std::string pos = a.text("position_embedding_type", "learned_absolute");
        if (pos == "yarn") {
            GptOssParts& g = c.gpt_oss;
            g.yarn_factor = a.real("rotary_scaling_factor", 1.0);
            g.yarn_original_max_positions =
                a.integer("yarn_original_max_position_embeddings", 4096);
            g.yarn_beta_fast = a.real("yarn_beta_fast", 32);
            g.yarn_beta_slow = a.real("yarn_beta_slow", 1);
            g.yarn_truncate = a.flag("yarn_correction_range_round_to_int", true);
            // transformers' attention factor is 0.1 ln(factor) + 1: Megatron's with mscale 1
            // over mscale_all_dim 0.
            if (a.real("mscale", 1.0) != 1.0 || a.real("mscale_all_dim", 0.0) != 0.0)
                not_supported("mscale", number_text(a.real("mscale", 1.0)), why);
        } else if (pos != "rope") {
            not_supported("position_embedding_type", pos, why);
        }
        read_windows_of_args(a, c);
        return c;
    }
};

}  // namespace

const HfArchitecture& gpt_oss_architecture() {
    static const GptOss kGptOss;
    return kGptOss;
}

}  // namespace mt::plugins::hf
