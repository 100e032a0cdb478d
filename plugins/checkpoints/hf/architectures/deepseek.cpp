// DeepSeek-V3 and -V2 (transformers' DeepseekV3ForCausalLM, DeepseekV2ForCausalLM) as
// Megatron's GPT with multi-latent attention (--multi-latent-attention, the q and kv latents
// RMS-normed: --qk-layernorm), YaRN or plain rope, first_k_dense_replace dense SwiGLU layers,
// then DeepSeek's MoE (grouped_moe.h), and any multi-token prediction layers.
#include <algorithm>
#include <cmath>

#include "architectures/grouped_moe.h"
#include "hf_architecture.h"
#include "hf_config_reader.h"
#include "hf_config_writer.h"
#include "hf_export.h"
#include "hf_import.h"
#include "hf_layout.h"
#include "hf_saver_args.h"
#include "hf_tensors.h"

namespace mt::plugins::hf {

namespace {

using namespace json;

// DeepseekV3ForCausalLM: multi-latent attention (its q and kv latents RMS-normed: Megatron's
// --qk-layernorm), YaRN or plain rope, first_k_dense_replace dense SwiGLU layers, then DeepSeek's
// MoE (grouped sigmoid routing with a correction bias, n_shared_experts shared experts as one of
// their summed width).
// DeepseekV3Config, or DeepseekV2Config (c.moe.softmax set: V2's routing, no multi-token
// prediction).
void read_deepseek(const ConfigJson& j, const std::filesystem::path& dir, HfConfig& c) {
    const std::string& where = j.where();
    MT_CHECK(!j.boolean("attention_bias", false), where,
             ": not supported yet: 'attention_bias' true (Megatron's MLA has no biases)");
    // DeepSeek's published weights are FP8 with a scale per 128x128 block (weight_scale_inv).
    MT_CHECK(!j.has("quantization_config"), where,
             ": not supported yet: 'quantization_config' (FP8 block-scaled weights): dequantise "
             "the folder to bf16 first");
    const std::string act = j.text("hidden_act", "silu");
    MT_CHECK(act == "silu", where, ": not supported yet: 'hidden_act' ", act,
             " (only silu, Megatron's --swiglu)");
    c.num_layers = j.integer("num_hidden_layers");
    c.hidden_size = j.integer("hidden_size");
    c.num_heads = c.num_kv_heads = j.integer("num_attention_heads");
    c.ffn_hidden_size = j.integer("intermediate_size");
    c.vocab_size = j.integer("vocab_size");
    c.max_position_embeddings = j.integer("max_position_embeddings");
    c.norm_epsilon = j.real("rms_norm_eps", 1e-6);
    c.tied = j.boolean("tie_word_embeddings", false);
    MlaParts& m = c.mla;
    m.q_lora_rank = j.integer("q_lora_rank", 0);  // null: no q-lora
    m.kv_lora_rank = j.integer("kv_lora_rank");
    m.qk_nope_head_dim = j.integer("qk_nope_head_dim");
    m.qk_rope_head_dim = j.integer("qk_rope_head_dim");
    m.v_head_dim = j.integer("v_head_dim");
    // DeepSeek-V2 rotates interleaved pairs always (transformers' complex rotation).
    m.rope_interleave = c.moe.softmax || j.boolean("rope_interleave", true);
    c.head_dim = m.v_head_dim;  // Megatron's DeepSeek recipes give --kv-channels the value head
    MT_CHECK(m.q_lora_rank >= 0 && m.kv_lora_rank > 0 && m.qk_nope_head_dim > 0 &&
                 m.qk_rope_head_dim > 0 && m.qk_rope_head_dim % 2 == 0 && m.v_head_dim > 0,
             where, ": bad multi-latent attention sizes (q_lora_rank ", m.q_lora_rank,
             ", kv_lora_rank ", m.kv_lora_rank, ", qk_nope_head_dim ", m.qk_nope_head_dim,
             ", qk_rope_head_dim ", m.qk_rope_head_dim, ", v_head_dim ", m.v_head_dim, ")");
    // rope_parameters (transformers 5) or rope_scaling and rope_theta (4).
    c.rope_theta = j.real("rope_theta", 10000);
    simdjson::dom::object rope;
    const char* key = j.has("rope_parameters") ? "rope_parameters" : "rope_scaling";
    if (!j.object()[key].get_object().get(rope)) {
        const ConfigJson r(rope, where + " " + key);
        c.rope_theta = r.real("rope_theta", c.rope_theta);
        const std::string type = r.text("rope_type", r.text("type", "default"));
        if (type == "yarn") {
            m.yarn_factor = r.real("factor", 0);
            m.original_max_positions = r.integer("original_max_position_embeddings");
            const double mscale = r.real("mscale", 0), all = r.real("mscale_all_dim", 0);
            MT_CHECK(m.yarn_factor > 0 && mscale > 0 && mscale == all, where, " ", key,
                     ": not supported yet: YaRN with factor ", m.yarn_factor, ", mscale ", mscale,
                     " and mscale_all_dim ", all,
                     " (Megatron's MLA scales the softmax by mscale, transformers by "
                     "mscale_all_dim: they must be equal and given)");
            m.yarn_mscale = mscale;
            MT_CHECK(r.real("beta_fast", 32) == 32 && r.real("beta_slow", 1) == 1 &&
                         r.boolean("truncate", true) && !r.has("attention_factor"),
                     where, " ", key,
                     ": not supported yet: YaRN's beta_fast, beta_slow, truncate or "
                     "attention_factor other than Megatron's (32, 1, true, from the mscales)");
        } else {
            MT_CHECK(type == "default", where, " ", key, ": not supported yet: '", type,
                     "' rope scaling with multi-latent attention (supported are yarn and none)");
        }
    }
    if (j.integer("n_routed_experts", 0) > 0) {
        read_grouped_moe(j, c);
        c.moe.shared_ffn = j.integer("n_shared_experts", 0) * c.moe.expert_ffn;
        m.first_dense_layers = j.integer("first_k_dense_replace", 0);
        MT_CHECK(m.first_dense_layers >= 0 && m.first_dense_layers <= c.num_layers, where,
                 ": 'first_k_dense_replace' ", m.first_dense_layers, " is not in [0, ",
                 c.num_layers, "]");
        MT_CHECK(c.moe.softmax || (j.text("topk_method", "noaux_tc") == "noaux_tc" &&
                                   j.text("scoring_func", "sigmoid") == "sigmoid"),
                 where, ": not supported yet: 'topk_method' ", j.text("topk_method", ""),
                 " / 'scoring_func' ", j.text("scoring_func", ""),
                 " (DeepSeek-V3's noaux_tc sigmoid routing only)");
    } else {
        m.first_dense_layers = c.num_layers;
    }
    // The multi-token prediction layers config.json counts, when the weights hold them all.
    const int64_t mtp = c.moe.softmax ? 0 : j.integer("num_nextn_predict_layers", 0);
    const HfTensors tensors(dir);
    const auto held = [&](int64_t k) {
        return tensors.has("model.layers." + std::to_string(c.num_layers + k) + ".eh_proj.weight");
    };
    if (mtp > 0 && held(0)) {
        for (int64_t k = 1; k < mtp; ++k)
            MT_CHECK(held(k), dir.string(), ": 'num_nextn_predict_layers' is ", mtp,
                     " but the weights hold no model.layers.", c.num_layers + k, ".eh_proj.weight");
        c.mtp_layers = mtp;
    }
}

// One DeepseekV3DecoderLayer (`src`, "model.layers.<i>.") as Megatron's layer `dst`
// ("decoder.layers.<i>."): multi-latent attention, then a dense MLP or a MoE block.
void import_deepseek_layer(HfImport& in, const std::string& src, const std::string& dst,
                           bool dense) {
    const HfConfig& c = in.config();
    const int64_t h = c.hidden_size, f = c.ffn_hidden_size, n = c.num_heads;
    const MlaParts& m = c.mla;
    const int64_t dq = m.qk_nope_head_dim + m.qk_rope_head_dim, rope = m.qk_rope_head_dim;
    const bool halves = !m.rope_interleave;
    // `src` with its rotary rows at `offset` of each block of `block` rows in pairs.
    auto put_rope = [&](const std::string& name, const std::string& from, int64_t block,
                        int64_t offset) {
        in.put(name, in.shape(from), {from}, [from, block, offset, rope, halves](const HfRead& t) {
            return halves ? interleaved_rope_rows(t.get(from), block, offset, rope) : t.get(from);
        });
    };
    const std::string from = src + "self_attn.", attn = dst + "self_attention.";
    in.put(dst + "input_layernorm.weight", in.hf(src + "input_layernorm.weight", {h}));
    in.put(attn + "linear_proj.weight", in.hf(from + "o_proj.weight", {h, n * m.v_head_dim}));
    if (m.q_lora_rank > 0) {
        in.put(attn + "linear_q_down_proj.weight",
               in.hf(from + "q_a_proj.weight", {m.q_lora_rank, h}));
        in.put(attn + "linear_q_up_proj.layer_norm_weight",
               in.hf(from + "q_a_layernorm.weight", {m.q_lora_rank}));
        put_rope(attn + "linear_q_up_proj.weight",
                 in.hf(from + "q_b_proj.weight", {n * dq, m.q_lora_rank}), dq, m.qk_nope_head_dim);
    } else {
        put_rope(attn + "linear_q_proj.weight", in.hf(from + "q_proj.weight", {n * dq, h}), dq,
                 m.qk_nope_head_dim);
    }
    put_rope(attn + "linear_kv_down_proj.weight",
             in.hf(from + "kv_a_proj_with_mqa.weight", {m.kv_lora_rank + rope, h}),
             m.kv_lora_rank + rope, m.kv_lora_rank);
    in.put(attn + "linear_kv_up_proj.layer_norm_weight",
           in.hf(from + "kv_a_layernorm.weight", {m.kv_lora_rank}));
    in.put(attn + "linear_kv_up_proj.weight",
           in.hf(from + "kv_b_proj.weight",
                 {n * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank}));
    const std::string mlp = dst + "mlp.", norm = src + "post_attention_layernorm.weight";
    if (dense) {
        in.put(mlp + "linear_fc1.layer_norm_weight", in.hf(norm, {h}));
        in.put_swiglu(mlp, src + "mlp.", f);
        return;
    }
    const int64_t e = c.moe.expert_ffn, s = c.moe.shared_ffn;
    in.put(dst + "pre_mlp_layernorm.weight", in.hf(norm, {h}));
    in.put(mlp + "router.weight", in.hf(src + "mlp.gate.weight", {c.num_experts, h}));
    if (!c.moe.softmax)  // DeepSeek-V3's correction bias
        in.put(mlp + "router.expert_bias",
               in.hf(src + "mlp.gate.e_score_correction_bias", {c.num_experts}));
    for (int64_t j = 0; j < c.num_experts; ++j)
        in.put_swiglu(mlp + "experts.local_experts." + std::to_string(j) + ".",
                      src + "mlp.experts." + std::to_string(j) + ".", e);
    if (s > 0) in.put_swiglu(mlp + "shared_experts.", src + "mlp.shared_experts.", s);
}

// DeepseekV3ForCausalLM as Megatron's GPTModel with multi-latent attention (Transformer
// Engine's names: the latents' norms fused into the up-projections), dense layers then MoE
// layers (router with its expert bias, SequentialMLP experts, shared experts). Megatron
// rotates q's and the rope key's rotary rows in DeepSeek's interleaved pairs; a folder
// without rope_interleave has them in halves, put in pairs here.
void import_deepseek(HfImport& in) {
    const HfConfig& c = in.config();
    const int64_t h = c.hidden_size;
    in.put("embedding.word_embeddings.weight",
           in.hf("model.embed_tokens.weight", {c.vocab_size, h}));
    for (int64_t i = 0; i < c.num_layers; ++i)
        import_deepseek_layer(in, "model.layers." + std::to_string(i) + ".",
                              "decoder.layers." + std::to_string(i) + ".",
                              i < c.mla.first_dense_layers);
    in.put("decoder.final_layernorm.weight", in.hf("model.norm.weight", {h}));
    // The multi-token prediction layers after the decoder's, each on the spec of the
    // decoder's last layer; their embed_tokens and shared_head.head are DeepSeek's copies of
    // the weights Megatron shares (left out here).
    for (int64_t k = 0; k < c.mtp_layers; ++k) {
        const std::string src = "model.layers." + std::to_string(c.num_layers + k) + ".";
        const std::string dst = "mtp.layers." + std::to_string(k) + ".";
        in.put(dst + "enorm.weight", in.hf(src + "enorm.weight", {h}));
        in.put(dst + "hnorm.weight", in.hf(src + "hnorm.weight", {h}));
        in.put(dst + "eh_proj.weight", in.hf(src + "eh_proj.weight", {h, 2 * h}));
        import_deepseek_layer(in, src, dst + "transformer_layer.",
                              c.num_layers <= c.mla.first_dense_layers);
        in.put(dst + "final_layernorm.weight", in.hf(src + "shared_head.norm.weight", {h}));
    }
    if (!c.tied) in.put("output_layer.weight", in.hf("lm_head.weight", {c.vocab_size, h}));
}

// A MoE layer's experts (SequentialMLP's or grouped), router with its expert bias and shared
// experts as DeepseekV3MoE's experts, gate and shared_experts.
void export_deepseek_experts(HfExport& out, const std::string& mlp, const std::string& dst) {
    const HfConfig& c = out.config();
    const int64_t h = c.hidden_size, e = c.moe.expert_ffn, s = c.moe.shared_ffn;
    for (int64_t j = 0; j < c.num_experts; ++j) {
        const std::string to = dst + "experts." + std::to_string(j) + ".";
        out.put_gate_up(to + "gate_proj.weight", to + "up_proj.weight",
                        out.get(out.expert_fc(mlp, 1, j), {2 * e, h}), e);
        out.put(to + "down_proj.weight", out.get(out.expert_fc(mlp, 2, j), {h, e}));
    }
    out.put(dst + "gate.weight", out.get(mlp + "router.weight", {c.num_experts, h}));
    if (!c.moe.softmax)  // DeepSeek-V3's correction bias
        out.put(dst + "gate.e_score_correction_bias",
                out.get(mlp + "router.expert_bias", {c.num_experts}));
    if (s == 0) return;
    out.put_gate_up(dst + "shared_experts.gate_proj.weight", dst + "shared_experts.up_proj.weight",
                    out.get(mlp + "shared_experts.linear_fc1.weight", {2 * s, h}), s);
    out.put(dst + "shared_experts.down_proj.weight",
            out.get(mlp + "shared_experts.linear_fc2.weight", {h, s}));
}

// Megatron's layer `src` ("decoder.layers.<i>.") as DeepseekV3DecoderLayer `dst`
// ("model.layers.<i>."), in its state-dict order.
void export_deepseek_layer(HfExport& out, const std::string& src, const std::string& dst,
                           bool dense) {
    const HfConfig& c = out.config();
    const int64_t h = c.hidden_size, f = c.ffn_hidden_size, n = c.num_heads;
    const MlaParts& m = c.mla;
    const int64_t dq = m.qk_nope_head_dim + m.qk_rope_head_dim;
    auto norm = [&](const std::string& te, const std::string& local, int64_t size) {
        return out.get(out.has(te) ? te : local, {size});
    };
    const std::string attn = src + "self_attention.", to = dst + "self_attn.";
    if (m.q_lora_rank > 0) {
        out.put(to + "q_a_proj.weight",
                out.get(attn + "linear_q_down_proj.weight", {m.q_lora_rank, h}));
        out.put(to + "q_a_layernorm.weight", norm(attn + "linear_q_up_proj.layer_norm_weight",
                                                  attn + "q_layernorm.weight", m.q_lora_rank));
        out.put(to + "q_b_proj.weight",
                out.get(attn + "linear_q_up_proj.weight", {n * dq, m.q_lora_rank}));
    } else {
        out.put(to + "q_proj.weight", out.get(attn + "linear_q_proj.weight", {n * dq, h}));
    }
    out.put(to + "kv_a_proj_with_mqa.weight",
            out.get(attn + "linear_kv_down_proj.weight", {m.kv_lora_rank + m.qk_rope_head_dim, h}));
    out.put(to + "kv_a_layernorm.weight", norm(attn + "linear_kv_up_proj.layer_norm_weight",
                                               attn + "kv_layernorm.weight", m.kv_lora_rank));
    out.put(to + "kv_b_proj.weight",
            out.get(attn + "linear_kv_up_proj.weight",
                    {n * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank}));
    out.put(to + "o_proj.weight", out.get(attn + "linear_proj.weight", {h, n * m.v_head_dim}));
    const std::string mlp = src + "mlp.";
    std::string post_norm = src + "pre_mlp_layernorm.weight";
    if (dense) {
        out.put_gate_up(dst + "mlp.gate_proj.weight", dst + "mlp.up_proj.weight",
                        out.get(mlp + "linear_fc1.weight", {2 * f, h}), f);
        out.put(dst + "mlp.down_proj.weight", out.get(mlp + "linear_fc2.weight", {h, f}));
        post_norm = mlp + "linear_fc1.layer_norm_weight";
    } else {
        export_deepseek_experts(out, mlp, dst + "mlp.");
    }
    out.put(dst + "input_layernorm.weight", out.get(src + "input_layernorm.weight", {h}));
    out.put(dst + "post_attention_layernorm.weight", out.get(post_norm, {h}));
}

// DeepseekV3ForCausalLM's names in its state-dict order; the rotary rows stay in DeepSeek's
// interleaved pairs (rope_interleave), as Megatron's MLA rotates them. The latents' norms
// under either --transformer-impl's names, the experts SequentialMLP's or grouped.
void export_deepseek(HfExport& out) {
    const HfConfig& c = out.config();
    const int64_t h = c.hidden_size;
    out.put("model.embed_tokens.weight", out.vocab_table("embedding.word_embeddings.weight"));
    for (int64_t i = 0; i < c.num_layers; ++i)
        export_deepseek_layer(out, "decoder.layers." + std::to_string(i) + ".",
                              "model.layers." + std::to_string(i) + ".",
                              i < c.mla.first_dense_layers);
    out.put("model.norm.weight", out.get("decoder.final_layernorm.weight", {h}));
    const std::string head = c.tied ? "embedding.word_embeddings.weight" : "output_layer.weight";
    if (!c.tied) out.put("lm_head.weight", out.vocab_table(head));
    // The multi-token prediction layers as DeepSeek's folders hold them, after the
    // decoder's, with their copies of the embedding and of the output layer.
    for (int64_t k = 0; k < c.mtp_layers; ++k) {
        const std::string src = "mtp.layers." + std::to_string(k) + ".";
        const std::string dst = "model.layers." + std::to_string(c.num_layers + k) + ".";
        export_deepseek_layer(out, src + "transformer_layer.", dst,
                              c.num_layers <= c.mla.first_dense_layers);
        out.put(dst + "embed_tokens.weight", out.vocab_table("embedding.word_embeddings.weight"));
        out.put(dst + "enorm.weight", out.get(src + "enorm.weight", {h}));
        out.put(dst + "hnorm.weight", out.get(src + "hnorm.weight", {h}));
        out.put(dst + "eh_proj.weight", out.get(src + "eh_proj.weight", {h, 2 * h}));
        out.put(dst + "shared_head.norm.weight", out.get(src + "final_layernorm.weight", {h}));
        out.put(dst + "shared_head.head.weight", out.vocab_table(head));
    }
}

// DeepseekV3Config: the multi-latent attention sizes, YaRN or plain rope (rope_parameters, with
// rope_scaling for transformers 4), the dense layers then the MoE ones, the multi-token
// prediction layers. DeepseekV2Config for V2's routing (c.moe.softmax): greedy top-k, no
// groups, no multi-token prediction, rope always interleaved.
Members deepseek_members(const HfConfig& c) {
    const MlaParts& mla = c.mla;
    const bool v2 = c.moe.softmax;
    Members m = {
        {"architectures", strings({v2 ? "DeepseekV2ForCausalLM" : "DeepseekV3ForCausalLM"}, 1)},
        {"attention_bias", boolean(false)},
        {"attention_dropout", real(0.0)},
        {"first_k_dense_replace", integer(mla.first_dense_layers)},
        // transformers writes the rotary part's width as head_dim
        {"head_dim", integer(mla.qk_rope_head_dim)},
        {"hidden_act", text("silu")},
        {"hidden_size", integer(c.hidden_size)},
        {"initializer_range", real(c.initializer_range)},
        {"intermediate_size", integer(c.ffn_hidden_size)},
        {"kv_lora_rank", integer(mla.kv_lora_rank)},
        {"max_position_embeddings", integer(c.max_position_embeddings)},
        {"model_type", text(v2 ? "deepseek_v2" : "deepseek_v3")},
        {"num_attention_heads", integer(c.num_heads)},
        {"num_hidden_layers", integer(c.num_layers)},
        {"num_key_value_heads", integer(c.num_heads)},
        {"num_nextn_predict_layers", integer(c.mtp_layers)},
        {"output_router_logits", boolean(false)},
        {"pretraining_tp", integer(1)},
        {"q_lora_rank", mla.q_lora_rank > 0 ? integer(mla.q_lora_rank) : "null"},
        {"qk_head_dim", integer(mla.qk_nope_head_dim + mla.qk_rope_head_dim)},
        {"qk_nope_head_dim", integer(mla.qk_nope_head_dim)},
        {"qk_rope_head_dim", integer(mla.qk_rope_head_dim)},
        {"rms_norm_eps", real(c.norm_epsilon)},
        {"rope_interleave", boolean(true)},
        {"rope_theta", real(c.rope_theta)},
        {"tie_word_embeddings", boolean(c.tied)},
        {"v_head_dim", integer(mla.v_head_dim)}};
    std::optional<Members> scaling;
    if (mla.yarn_factor > 0)
        scaling = Members{{"beta_fast", real(32.0)},
                          {"beta_slow", real(1.0)},
                          {"factor", real(mla.yarn_factor)},
                          {"mscale", real(mla.yarn_mscale)},
                          {"mscale_all_dim", real(mla.yarn_mscale)},
                          {"original_max_position_embeddings", integer(mla.original_max_positions)},
                          {"rope_type", text("yarn")}};
    put_rope_settings(m, scaling, c.rope_theta);
    const GroupedMoe& moe = c.moe;
    m["n_routed_experts"] = c.num_experts > 0 ? integer(c.num_experts) : "null";
    m["num_experts_per_tok"] = c.num_experts > 0 ? integer(c.experts_per_token) : "null";
    m["moe_intermediate_size"] = integer(c.num_experts > 0 ? moe.expert_ffn : c.ffn_hidden_size);
    m["n_shared_experts"] = integer(moe.expert_ffn > 0 ? moe.shared_ffn / moe.expert_ffn : 0);
    m["routed_scaling_factor"] = real(moe.scaling_factor);
    if (v2) {
        m.erase("num_nextn_predict_layers");
        m.erase("rope_interleave");
        m.erase("rope_scaling");
        m["mlp_bias"] = boolean(false);
        m["n_group"] = m["topk_group"] = "null";
        m["topk_method"] = text("greedy");
        m["norm_topk_prob"] = boolean(false);
        return m;
    }
    m["n_group"] = integer(moe.num_groups);
    m["topk_group"] = integer(moe.group_topk);
    m["norm_topk_prob"] = boolean(c.experts_per_token > 1);
    return m;
}

// Megatron's GPT with multi-latent attention as DeepseekV3ForCausalLM: RMSNorm, SwiGLU without
// biases, the q and kv latents normed (--qk-layernorm), YaRN with mscale = mscale_all_dim (or
// --rope-type rope), dense layers then MoE layers routed as DeepseekV3MoE routes, and any
// multi-token prediction layers; the model's positions are YaRN's original ones times its factor.
// MoE layers routed by the softmax over all experts (--moe-router-pre-softmax) make it a
// DeepseekV2ForCausalLM.
HfConfig deepseek_config_from_args(const SaverArgs& a) {
    const std::string why =
        "DeepSeek-V3 has RMSNorm, rope, SwiGLU without biases, normed q and kv latents, and "
        "sigmoid-routed MoE layers after its dense ones";
    HfConfig c;
    c.model_type = "deepseek_v3";
    c.num_layers = a.integer("num_layers");
    c.hidden_size = a.integer("hidden_size");
    c.num_heads = c.num_kv_heads = a.integer("num_attention_heads");
    c.ffn_hidden_size =
        a.integer("ffn_hidden_size", int64_t(double(4 * c.hidden_size) * 2 / 3 / 64) * 64);
    c.norm_epsilon = a.real("norm_epsilon", 1e-5);
    c.initializer_range = a.real("init_method_std", 0.02);
    c.tied = !a.flag("untie_embeddings_and_output_weights");
    c.rope_theta = a.real("rotary_base", 10000);
    if (a.text("normalization", "LayerNorm") != "RMSNorm")
        not_supported("normalization", a.text("normalization", "LayerNorm"), why);
    if (a.text("position_embedding_type", "learned_absolute") != "rope")
        not_supported("position_embedding_type",
                      a.text("position_embedding_type", "learned_absolute"), why);
    if (!a.flag("swiglu")) not_supported("swiglu", "False", why);
    if (a.flag("add_bias_linear", true)) not_supported("add_bias_linear", "True", why);
    if (!a.flag("qk_layernorm")) not_supported("qk_layernorm", "False", why);
    for (const char* name : {"apply_layernorm_1p", "add_qkv_bias", "window_size"})
        if (a.set(name)) not_supported(name, "set", why);
    c.mtp_layers = a.integer("mtp_num_layers", 0);
    MlaParts& m = c.mla;
    m.q_lora_rank = a.set("q_lora_rank") ? a.integer("q_lora_rank") : 0;
    m.kv_lora_rank = a.integer("kv_lora_rank", 32);
    m.qk_nope_head_dim = a.integer("qk_head_dim", 128);
    m.qk_rope_head_dim = a.integer("qk_pos_emb_head_dim", 64);
    m.v_head_dim = a.integer("v_head_dim", 128);
    c.head_dim = m.v_head_dim;
    const int64_t positions = a.integer("max_position_embeddings", a.integer("seq_length", 0));
    c.max_position_embeddings = positions;
    if (a.text("rope_type", "yarn") == "yarn") {
        m.yarn_factor = a.real("rotary_scaling_factor", 1.0);
        m.yarn_mscale = a.real("mscale", 1.0);
        if (a.real("mscale_all_dim", 1.0) != m.yarn_mscale)
            not_supported("mscale_all_dim", number_text(a.real("mscale_all_dim", 1.0)),
                          "Megatron's MLA scales the softmax by mscale, transformers' by "
                          "mscale_all_dim: they must be equal");
        m.original_max_positions = positions;
        c.max_position_embeddings = int64_t(std::llround(double(positions) * m.yarn_factor));
    }
    m.first_dense_layers = c.num_layers;
    if (a.set("num_experts")) {
        read_grouped_moe_args(a, c, why, /*softmax_allowed=*/true);
        if (c.moe.softmax) {
            c.model_type = "deepseek_v2";  // its routing
            if (c.mtp_layers > 0)
                not_supported("mtp_num_layers", std::to_string(c.mtp_layers),
                              "DeepSeek-V2 (a softmax-routed DeepSeek) has no multi-token "
                              "prediction layers");
        }
        if (c.moe.shared_ffn % c.moe.expert_ffn != 0)
            not_supported("moe_shared_expert_intermediate_size", std::to_string(c.moe.shared_ffn),
                          "DeepSeek's shared experts are n_shared_experts experts wide");
        // --moe-layer-freq: every layer (1), or dense layers first then MoE ones.
        const ArgValue* freq = a.find("moe_layer_freq");
        std::vector<int64_t> pattern(size_t(c.num_layers), 1);
        if (freq && std::holds_alternative<std::vector<int64_t>>(*freq))
            pattern = std::get<std::vector<int64_t>>(*freq);
        else if (freq && std::holds_alternative<int64_t>(*freq) && std::get<int64_t>(*freq) != 1)
            not_supported("moe_layer_freq", std::to_string(std::get<int64_t>(*freq)), why);
        m.first_dense_layers =
            int64_t(std::find(pattern.begin(), pattern.end(), 1) - pattern.begin());
        if (int64_t(pattern.size()) != c.num_layers ||
            std::find(pattern.begin() + m.first_dense_layers, pattern.end(), 0) != pattern.end())
            not_supported("moe_layer_freq", "a pattern with dense layers after MoE ones", why);
    }
    MT_CHECK(c.num_layers > 0 && c.hidden_size > 0 && c.num_heads > 0 && m.kv_lora_rank > 0 &&
                 c.max_position_embeddings > 0,
             "--saver hf: bad sizes in the checkpoint's args of a multi-latent attention model");
    return c;
}

class Deepseek final : public HfArchitecture {
  public:
    std::vector<std::string> model_types() const override { return {"deepseek_v3", "deepseek_v2"}; }
    void read_config(const ConfigJson& j, const std::filesystem::path& dir,
                     HfConfig& c) const override {
        c.moe.softmax = c.model_type == "deepseek_v2";  // V2's routing
        read_deepseek(j, dir, c);
    }
    void add_model_args(const HfConfig& c, ModelArgs& a) const override {
        // Llama's layers but for the attention: RMSNorm, rope, SwiGLU, no linear biases.
        a["normalization"] = "RMSNorm";
        a["position-embedding-type"] = "rope";
        a["rotary-base"] = number_text(c.rope_theta);
        a["swiglu"] = "";
        a["disable-bias-linear"] = "";
        const MlaParts& m = c.mla;
        a["multi-latent-attention"] = "";
        if (m.q_lora_rank > 0) a["q-lora-rank"] = std::to_string(m.q_lora_rank);
        a["kv-lora-rank"] = std::to_string(m.kv_lora_rank);
        a["qk-head-dim"] = std::to_string(m.qk_nope_head_dim);
        a["qk-pos-emb-head-dim"] = std::to_string(m.qk_rope_head_dim);
        a["v-head-dim"] = std::to_string(m.v_head_dim);
        a["qk-layernorm"] = "";  // the q and kv latents' RMSNorms
        if (m.yarn_factor > 0) {
            a["rotary-scaling-factor"] = number_text(m.yarn_factor);
            a["mscale"] = a["mscale-all-dim"] = number_text(m.yarn_mscale);
            // Megatron's YaRN takes --max-position-embeddings as the original context.
            a["max-position-embeddings"] = a["seq-length"] =
                std::to_string(m.original_max_positions);
        } else {
            a["rope-type"] = "rope";
        }
        if (c.mtp_layers > 0) a["mtp-num-layers"] = std::to_string(c.mtp_layers);
        if (c.num_experts > 0) {
            add_grouped_moe_args(c, a);
            std::string freq = "[";
            for (int64_t i = 0; i < c.num_layers; ++i)
                freq += (i ? "," : "") + std::string(i < m.first_dense_layers ? "0" : "1");
            a["moe-layer-freq"] = freq + "]";
        }
    }
    void import_tensors(HfImport& in) const override { import_deepseek(in); }
    void export_tensors(HfExport& out) const override { export_deepseek(out); }
    Members config_members(const HfConfig& c) const override { return deepseek_members(c); }

    bool exports(const SaverArgs& a, const std::optional<BertParts>& bert) const override {
        return !bert && a.flag("multi_latent_attention");
    }
    HfConfig config_from_args(const SaverArgs& a, const std::optional<BertParts>&) const override {
        return deepseek_config_from_args(a);
    }
};

}  // namespace

const HfArchitecture& deepseek_architecture() {
    static const Deepseek kDeepseek;
    return kDeepseek;
}

}  // namespace mt::plugins::hf
