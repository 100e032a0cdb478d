// GPT-2 (GPT2LMHeadModel, model_type gpt2): learned absolute positions, LayerNorm, the tanh GeLU,
// linear biases, tied embeddings; Conv1D weights ([in, out]) where Megatron has Linear ones.
#include "hf_architecture.h"
#include "hf_config_reader.h"
#include "hf_export.h"
#include "hf_import.h"
#include "hf_layout.h"
#include "hf_saver_args.h"

namespace mt::plugins::hf {

namespace {

using namespace json;

void read_gpt2(const ConfigJson& j, HfConfig& c) {
    const std::string& where = j.where();
    const std::string act = j.text("activation_function", "gelu_new");
    MT_CHECK(act == "gelu_new" || act == "gelu_pytorch_tanh", where,
             ": not supported yet: 'activation_function' ", act,
             " (only the tanh GeLU, Megatron's GeLU with biases)");
    MT_CHECK(!j.boolean("scale_attn_by_inverse_layer_idx", false) &&
                 !j.boolean("reorder_and_upcast_attn", false) &&
                 j.boolean("scale_attn_weights", true),
             where,
             ": not supported yet: 'scale_attn_by_inverse_layer_idx', 'reorder_and_upcast_attn' "
             "or 'scale_attn_weights' false");
    MT_CHECK(!j.has("add_cross_attention") || !j.boolean("add_cross_attention", false), where,
             ": not supported yet: 'add_cross_attention'");
    c.num_layers = j.integer("n_layer");
    c.hidden_size = j.integer("n_embd");
    c.num_heads = c.num_kv_heads = j.integer("n_head");
    MT_CHECK(c.num_heads > 0 && c.hidden_size % c.num_heads == 0, where, ": 'n_embd' (",
             c.hidden_size, ") must be a multiple of 'n_head' (", c.num_heads, ")");
    c.head_dim = c.hidden_size / c.num_heads;
    c.ffn_hidden_size = j.integer("n_inner", 4 * c.hidden_size);
    c.vocab_size = j.integer("vocab_size");
    c.max_position_embeddings = j.integer("n_positions");
    c.norm_epsilon = j.real("layer_norm_epsilon", 1e-5);
    c.tied = true;
}

void import_gpt2(HfImport& in) {
    const HfConfig& c = in.config();
    const int64_t h = c.hidden_size, f = c.ffn_hidden_size;
    // GPT2LMHeadModel prefixes "transformer."; a bare GPT2Model does not.
    const std::string p = in.has("transformer.wte.weight") ? "transformer." : "";
    in.put("embedding.word_embeddings.weight", in.hf(p + "wte.weight", {c.vocab_size, h}));
    in.put("embedding.position_embeddings.weight",
           in.hf(p + "wpe.weight", {c.max_position_embeddings, h}));
    for (int64_t i = 0; i < c.num_layers; ++i) {
        const std::string src = p + "h." + std::to_string(i) + ".";
        const std::string dst = "decoder.layers." + std::to_string(i) + ".";
        const std::string attn = dst + "self_attention.", mlp = dst + "mlp.";
        in.put_transposed(attn + "linear_proj.weight", in.hf(src + "attn.c_proj.weight", {h, h}));
        in.put(attn + "linear_proj.bias", in.hf(src + "attn.c_proj.bias", {h}));
        in.put(attn + "linear_qkv.layer_norm_weight", in.hf(src + "ln_1.weight", {h}));
        in.put(attn + "linear_qkv.layer_norm_bias", in.hf(src + "ln_1.bias", {h}));
        const std::string w = in.hf(src + "attn.c_attn.weight", {h, 3 * h});
        const std::string b = in.hf(src + "attn.c_attn.bias", {3 * h});
        const int64_t n = c.num_heads, hd = c.head_dim;
        in.put(attn + "linear_qkv.weight", {3 * h, h}, {w}, [w, h, n, hd](const HfRead& t) {
            const Tensor wt = transposed(t.get(w));
            return group_qkv(wt.slice(0, 0, h), wt.slice(0, h, 2 * h), wt.slice(0, 2 * h, 3 * h), n,
                             n, hd);
        });
        in.put(attn + "linear_qkv.bias", {3 * h}, {b}, [b, h, n, hd](const HfRead& t) {
            const Tensor bt = t.get(b);
            return group_qkv(bt.slice(0, 0, h), bt.slice(0, h, 2 * h), bt.slice(0, 2 * h, 3 * h), n,
                             n, hd);
        });
        in.put(mlp + "linear_fc1.layer_norm_weight", in.hf(src + "ln_2.weight", {h}));
        in.put(mlp + "linear_fc1.layer_norm_bias", in.hf(src + "ln_2.bias", {h}));
        in.put_transposed(mlp + "linear_fc1.weight", in.hf(src + "mlp.c_fc.weight", {h, f}));
        in.put(mlp + "linear_fc1.bias", in.hf(src + "mlp.c_fc.bias", {f}));
        in.put_transposed(mlp + "linear_fc2.weight", in.hf(src + "mlp.c_proj.weight", {f, h}));
        in.put(mlp + "linear_fc2.bias", in.hf(src + "mlp.c_proj.bias", {h}));
    }
    in.put("decoder.final_layernorm.weight", in.hf(p + "ln_f.weight", {h}));
    in.put("decoder.final_layernorm.bias", in.hf(p + "ln_f.bias", {h}));
}

void export_gpt2(HfExport& out) {
    const HfConfig& c = out.config();
    const int64_t h = c.hidden_size, f = c.ffn_hidden_size, n = c.num_heads;
    const int64_t hd = c.head_dim;
    // GPT2LMHeadModel's names and state-dict order; its lm_head is the tied wte, which
    // transformers leaves out.
    const std::string p = "transformer.";
    out.put(p + "wte.weight", out.vocab_table("embedding.word_embeddings.weight"));
    out.put(p + "wpe.weight",
            out.get("embedding.position_embeddings.weight", {c.max_position_embeddings, h}));
    for (int64_t i = 0; i < c.num_layers; ++i) {
        const std::string src = "decoder.layers." + std::to_string(i) + ".";
        const std::string dst = p + "h." + std::to_string(i) + ".";
        const std::string attn = src + "self_attention.", mlp = src + "mlp.";
        out.put(dst + "ln_1.weight", out.get(attn + "linear_qkv.layer_norm_weight", {h}));
        out.put(dst + "ln_1.bias", out.get(attn + "linear_qkv.layer_norm_bias", {h}));
        // c_attn is [q | k | v] along its output columns.
        auto qkv_rows = [n, hd](const Tensor& t) {
            const Qkv p = ungroup_qkv(t, n, n, hd);
            return concat_rows(concat_rows(p.q, p.k), p.v);
        };
        out.put(
            dst + "attn.c_attn.weight",
            out.get(attn + "linear_qkv.weight", {3 * h, h}).map({3 * h, h}, qkv_rows).transpose());
        out.put(dst + "attn.c_attn.bias",
                out.get(attn + "linear_qkv.bias", {3 * h}).map({3 * h}, qkv_rows));
        out.put(dst + "attn.c_proj.weight",
                out.get(attn + "linear_proj.weight", {h, h}).transpose());
        out.put(dst + "attn.c_proj.bias", out.get(attn + "linear_proj.bias", {h}));
        out.put(dst + "ln_2.weight", out.get(mlp + "linear_fc1.layer_norm_weight", {h}));
        out.put(dst + "ln_2.bias", out.get(mlp + "linear_fc1.layer_norm_bias", {h}));
        out.put(dst + "mlp.c_fc.weight", out.get(mlp + "linear_fc1.weight", {f, h}).transpose());
        out.put(dst + "mlp.c_fc.bias", out.get(mlp + "linear_fc1.bias", {f}));
        out.put(dst + "mlp.c_proj.weight", out.get(mlp + "linear_fc2.weight", {h, f}).transpose());
        out.put(dst + "mlp.c_proj.bias", out.get(mlp + "linear_fc2.bias", {h}));
    }
    out.put(p + "ln_f.weight", out.get("decoder.final_layernorm.weight", {h}));
    out.put(p + "ln_f.bias", out.get("decoder.final_layernorm.bias", {h}));
}

Members gpt2_members(const HfConfig& c) {
    return {{"activation_function", text("gelu_new")},
            {"architectures", strings({"GPT2LMHeadModel"}, 1)},
            {"attn_pdrop", real(0.0)},
            {"embd_pdrop", real(0.0)},
            {"initializer_range", real(c.initializer_range)},
            {"layer_norm_epsilon", real(c.norm_epsilon)},
            {"model_type", text("gpt2")},
            {"n_embd", integer(c.hidden_size)},
            {"n_head", integer(c.num_heads)},
            {"n_inner", integer(c.ffn_hidden_size)},
            {"n_layer", integer(c.num_layers)},
            {"n_positions", integer(c.max_position_embeddings)},
            {"reorder_and_upcast_attn", boolean(false)},
            {"resid_pdrop", real(0.0)},
            {"scale_attn_by_inverse_layer_idx", boolean(false)},
            {"scale_attn_weights", boolean(true)},
            {"tie_word_embeddings", boolean(true)}};
}

class Gpt2 final : public HfArchitecture {
  public:
    std::vector<std::string> model_types() const override { return {"gpt2"}; }
    void read_config(const ConfigJson& j, const std::filesystem::path&,
                     HfConfig& c) const override {
        read_gpt2(j, c);
    }
    // Megatron's GPT defaults are GPT-2's.
    void add_model_args(const HfConfig&, ModelArgs&) const override {}
    void import_tensors(HfImport& in) const override { import_gpt2(in); }
    void export_tensors(HfExport& out) const override { export_gpt2(out); }
    Members config_members(const HfConfig& c) const override { return gpt2_members(c); }

    bool exports(const SaverArgs& a, const std::optional<BertParts>& bert) const override {
        return !bert && a.text("position_embedding_type", "learned_absolute") == "learned_absolute";
    }
    HfConfig config_from_args(const SaverArgs& a, const std::optional<BertParts>&) const override {
        HfConfig c = transformer_config_from_args(a);
        c.model_type = "gpt2";
        const std::string why =
            "learned absolute positions are exported as GPT-2: LayerNorm, "
            "GeLU, linear biases, tied embeddings";
        refuse_unless_gpt2_layers(a, c, "GPT-2", why);
        if (!c.tied) not_supported("untie_embeddings_and_output_weights", "True", why);
        // Megatron's GeLU with biases is the fused tanh form, GPT-2's gelu_new.
        if (!a.flag("bias_gelu_fusion", true))
            not_supported("bias_gelu_fusion", "False", "GPT-2's GeLU is the tanh form");
        return c;
    }
};

}  // namespace

const HfArchitecture& gpt2_architecture() {
    static const Gpt2 kGpt2;
    return kGpt2;
}

}  // namespace mt::plugins::hf
