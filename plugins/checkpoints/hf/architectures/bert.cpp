// BERT: transformers' MegatronBertForPreTraining (model_type megatron-bert: Megatron's
// pre-LayerNorm BERT) or BertForPreTraining (bert: the original post-LayerNorm one, which
// Megatron writes as --apply-residual-connection-post-layernorm with the LayerNorms shifted by
// one); *ForMaskedLM without the binary head. Learned absolute positions, LayerNorm, the erf
// GeLU, linear biases.
#include "hf_architecture.h"
#include "hf_config_reader.h"
#include "hf_export.h"
#include "hf_import.h"
#include "hf_saver_args.h"
#include "hf_tensors.h"

namespace mt::plugins::hf {

namespace {

using namespace json;

// transformers' MegatronBertConfig or BertConfig (the same keys), and the heads the weights
// hold: megatron.cpp's BERT is a pretraining model, so the masked-LM head (cls.predictions)
// must be there; the sentence-order head (cls.seq_relationship, with the pooler) is its binary
// head.
void read_bert(const ConfigJson& j, const std::filesystem::path& dir, HfConfig& c) {
    const std::string& where = j.where();
    const std::string act = j.text("hidden_act", "gelu");
    MT_CHECK(act == "gelu", where, ": not supported yet: 'hidden_act' ", act,
             " (Megatron's BertLMHead applies the erf GeLU whatever its layers use, and "
             "transformers' BERT applies hidden_act in both: only gelu, the erf GeLU of "
             "--no-bias-gelu-fusion, is the same network)");
    const std::string positions = j.text("position_embedding_type", "absolute");
    MT_CHECK(positions == "absolute", where, ": not supported yet: 'position_embedding_type' ",
             positions, " (megatron.cpp's BERT learns absolute positions)");
    MT_CHECK(!j.boolean("is_decoder", false) && !j.boolean("add_cross_attention", false), where,
             ": not supported yet: 'is_decoder' or 'add_cross_attention' true (megatron.cpp's "
             "BERT is a bidirectional encoder)");
    c.bert.post_layer_norm = c.model_type == "bert";
    c.num_layers = j.integer("num_hidden_layers");
    c.hidden_size = j.integer("hidden_size");
    c.num_heads = c.num_kv_heads = j.integer("num_attention_heads");
    MT_CHECK(c.num_heads > 0 && c.hidden_size % c.num_heads == 0, where, ": 'hidden_size' (",
             c.hidden_size, ") must be a multiple of 'num_attention_heads' (", c.num_heads, ")");
    c.head_dim = c.hidden_size / c.num_heads;
    c.ffn_hidden_size = j.integer("intermediate_size");
    c.vocab_size = j.integer("vocab_size");
    c.max_position_embeddings = j.integer("max_position_embeddings");
    c.norm_epsilon = j.real("layer_norm_eps", 1e-12);
    c.initializer_range = j.real("initializer_range", 0.02);
    c.tied = j.boolean("tie_word_embeddings", true);
    c.bert.tokentypes = j.integer("type_vocab_size", 2);
    MT_CHECK(c.bert.tokentypes >= 0, where, ": 'type_vocab_size' must not be negative");
    const HfTensors tensors(dir);
    MT_CHECK(tensors.has("cls.predictions.transform.dense.weight"), dir.string(),
             ": not supported yet: a BERT without the masked-LM head (no cls.predictions.*: a "
             "bare BertModel or a finetuned task model); megatron.cpp builds the pretraining "
             "model (*ForPreTraining, or *ForMaskedLM without the binary head)");
    c.bert.binary_head = tensors.has("cls.seq_relationship.weight");
}

// The Hugging Face module (a "….LayerNorm" or "….ln" prefix) of each Megatron norm: the one
// before layer i's attention, the one before its MLP, and the final one. MegatronBert has
// Megatron's own; the post-LayerNorm BERT's shift by one under
// --apply-residual-connection-post-layernorm (the embeddings' norm comes before layer 0's
// attention, each layer's output norm before the next layer's, the last one is the final).
std::string attention_norm(const HfConfig& c, int64_t i) {
    if (!c.bert.post_layer_norm) return "bert.encoder.layer." + std::to_string(i) + ".attention.ln";
    if (i == 0) return "bert.embeddings.LayerNorm";
    return "bert.encoder.layer." + std::to_string(i - 1) + ".output.LayerNorm";
}
std::string mlp_norm(const HfConfig& c, int64_t i) {
    const std::string layer = "bert.encoder.layer." + std::to_string(i) + ".";
    return layer + (c.bert.post_layer_norm ? "attention.output.LayerNorm" : "ln");
}
std::string final_norm(const HfConfig& c) {
    if (!c.bert.post_layer_norm) return "bert.encoder.ln";
    return "bert.encoder.layer." + std::to_string(c.num_layers - 1) + ".output.LayerNorm";
}

// MegatronBertForPreTraining or BertForPreTraining (*ForMaskedLM: no pooler, no
// cls.seq_relationship) as BertModel in Megatron-core's order: embedding, encoder, lm_head,
// output layer (the decoder's own weight only when untied; its bias is
// cls.predictions.bias), binary head, pooler (tests/fixtures/bert/make_bert_fixtures.py maps
// the same names). The layers keep their norms in linear_qkv / linear_fc1 and end in a final
// LayerNorm.
void import_bert(HfImport& in) {
    const HfConfig& c = in.config();
    const int64_t h = c.hidden_size, f = c.ffn_hidden_size, v = c.vocab_size;
    in.put("embedding.word_embeddings.weight",
           in.hf("bert.embeddings.word_embeddings.weight", {v, h}));
    in.put("embedding.position_embeddings.weight",
           in.hf("bert.embeddings.position_embeddings.weight", {c.max_position_embeddings, h}));
    if (c.bert.tokentypes > 0)
        in.put("embedding.tokentype_embeddings.weight",
               in.hf("bert.embeddings.token_type_embeddings.weight", {c.bert.tokentypes, h}));
    for (int64_t i = 0; i < c.num_layers; ++i) {
        const std::string src = "bert.encoder.layer." + std::to_string(i) + ".";
        const std::string dst = "encoder.layers." + std::to_string(i) + ".";
        const std::string attn = dst + "self_attention.", mlp = dst + "mlp.";
        in.put(attn + "linear_proj.weight", in.hf(src + "attention.output.dense.weight", {h, h}));
        in.put(attn + "linear_proj.bias", in.hf(src + "attention.output.dense.bias", {h}));
        for (const auto& [part, shape] :
             {std::pair<std::string, Shape>{"weight", {h, h}}, {"bias", {h}}}) {
            const std::string self = src + "attention.self.";
            in.put_qkv(attn + "linear_qkv." + part, in.hf(self + "query." + part, shape),
                       in.hf(self + "key." + part, shape), in.hf(self + "value." + part, shape),
                       c.num_heads, c.num_heads, c.head_dim);
        }
        in.put(mlp + "linear_fc1.weight", in.hf(src + "intermediate.dense.weight", {f, h}));
        in.put(mlp + "linear_fc1.bias", in.hf(src + "intermediate.dense.bias", {f}));
        in.put(mlp + "linear_fc2.weight", in.hf(src + "output.dense.weight", {h, f}));
        in.put(mlp + "linear_fc2.bias", in.hf(src + "output.dense.bias", {h}));
        for (const std::string part : {"weight", "bias"}) {
            in.put(attn + "linear_qkv.layer_norm_" + part,
                   in.hf(attention_norm(c, i) + "." + part, {h}));
            in.put(mlp + "linear_fc1.layer_norm_" + part, in.hf(mlp_norm(c, i) + "." + part, {h}));
        }
    }
    for (const std::string part : {"weight", "bias"})
        in.put("encoder.final_layernorm." + part, in.hf(final_norm(c) + "." + part, {h}));
    const std::string head = "cls.predictions.";
    in.put("lm_head.dense.weight", in.hf(head + "transform.dense.weight", {h, h}));
    in.put("lm_head.dense.bias", in.hf(head + "transform.dense.bias", {h}));
    in.put("lm_head.layer_norm.weight", in.hf(head + "transform.LayerNorm.weight", {h}));
    in.put("lm_head.layer_norm.bias", in.hf(head + "transform.LayerNorm.bias", {h}));
    if (!c.tied) in.put("output_layer.weight", in.hf(head + "decoder.weight", {v, h}));
    // transformers saves the decoder's bias once, as the shared cls.predictions.bias.
    in.put("output_layer.bias",
           in.hf(in.has(head + "bias") ? head + "bias" : head + "decoder.bias", {v}));
    if (!c.bert.binary_head) return;
    in.put("binary_head.weight", in.hf("cls.seq_relationship.weight", {2, h}));
    in.put("binary_head.bias", in.hf("cls.seq_relationship.bias", {2}));
    in.put("pooler.dense.weight", in.hf("bert.pooler.dense.weight", {h, h}));
    in.put("pooler.dense.bias", in.hf("bert.pooler.dense.bias", {h}));
}

// MegatronBertForPreTraining's or BertForPreTraining's names (*ForMaskedLM's without the
// binary head: no pooler, no cls.seq_relationship), the inverse of HfCheckpoint's reading.
void export_bert(HfExport& out) {
    const HfConfig& c = out.config();
    const int64_t h = c.hidden_size, f = c.ffn_hidden_size, n = c.num_heads;
    const int64_t hd = c.head_dim;
    out.put("bert.embeddings.word_embeddings.weight",
            out.vocab_table("embedding.word_embeddings.weight"));
    out.put("bert.embeddings.position_embeddings.weight",
            out.get("embedding.position_embeddings.weight", {c.max_position_embeddings, h}));
    // transformers always adds a token-type embedding: one zero row adds nothing.
    out.put("bert.embeddings.token_type_embeddings.weight",
            c.bert.tokentypes > 0
                ? out.get("embedding.tokentype_embeddings.weight", {c.bert.tokentypes, h})
                : Lazy{{1, h}, [h, dtype = out.dtype()] {
                           return Tensor::zeros({1, h}, dtype);
                       }});
    for (int64_t i = 0; i < c.num_layers; ++i) {
        const std::string src = "encoder.layers." + std::to_string(i) + ".";
        const std::string dst = "bert.encoder.layer." + std::to_string(i) + ".";
        const std::string attn = src + "self_attention.", mlp = src + "mlp.";
        for (const std::string part : {"weight", "bias"}) {
            out.put(attention_norm(c, i) + "." + part,
                    out.get(attn + "linear_qkv.layer_norm_" + part, {h}));
            out.put(mlp_norm(c, i) + "." + part,
                    out.get(mlp + "linear_fc1.layer_norm_" + part, {h}));
        }
        LazyQkv w = ungroup(out.get(attn + "linear_qkv.weight", {3 * h, h}), n, n, hd);
        LazyQkv b = ungroup(out.get(attn + "linear_qkv.bias", {3 * h}), n, n, hd);
        const std::string self = dst + "attention.self.";
        out.put(self + "query.weight", std::move(w.q));
        out.put(self + "query.bias", std::move(b.q));
        out.put(self + "key.weight", std::move(w.k));
        out.put(self + "key.bias", std::move(b.k));
        out.put(self + "value.weight", std::move(w.v));
        out.put(self + "value.bias", std::move(b.v));
        out.put(dst + "attention.output.dense.weight",
                out.get(attn + "linear_proj.weight", {h, h}));
        out.put(dst + "attention.output.dense.bias", out.get(attn + "linear_proj.bias", {h}));
        out.put(dst + "intermediate.dense.weight", out.get(mlp + "linear_fc1.weight", {f, h}));
        out.put(dst + "intermediate.dense.bias", out.get(mlp + "linear_fc1.bias", {f}));
        out.put(dst + "output.dense.weight", out.get(mlp + "linear_fc2.weight", {h, f}));
        out.put(dst + "output.dense.bias", out.get(mlp + "linear_fc2.bias", {h}));
    }
    for (const std::string part : {"weight", "bias"})
        out.put(final_norm(c) + "." + part, out.get("encoder.final_layernorm." + part, {h}));
    if (c.bert.binary_head) {
        out.put("bert.pooler.dense.weight", out.get("pooler.dense.weight", {h, h}));
        out.put("bert.pooler.dense.bias", out.get("pooler.dense.bias", {h}));
    }
    // The decoder's bias is cls.predictions.bias (one tensor in transformers), its weight
    // the tied word embeddings, which transformers leaves out.
    out.put("cls.predictions.bias", out.vocab_table("output_layer.bias"));
    out.put("cls.predictions.transform.dense.weight", out.get("lm_head.dense.weight", {h, h}));
    out.put("cls.predictions.transform.dense.bias", out.get("lm_head.dense.bias", {h}));
    out.put("cls.predictions.transform.LayerNorm.weight",
            out.get("lm_head.layer_norm.weight", {h}));
    out.put("cls.predictions.transform.LayerNorm.bias", out.get("lm_head.layer_norm.bias", {h}));
    if (!c.tied) out.put("cls.predictions.decoder.weight", out.vocab_table("output_layer.weight"));
    if (c.bert.binary_head) {
        out.put("cls.seq_relationship.weight", out.get("binary_head.weight", {2, h}));
        out.put("cls.seq_relationship.bias", out.get("binary_head.bias", {2}));
    }
}

// MegatronBertConfig (pre-LayerNorm) or BertConfig (post-LayerNorm): the same keys; the erf
// GeLU (hf_config_from_args admits no other).
Members bert_members(const HfConfig& c) {
    const std::string model = c.bert.post_layer_norm ? "Bert" : "MegatronBert";
    return {{"add_cross_attention", boolean(false)},
            {"architectures",
             strings({model + (c.bert.binary_head ? "ForPreTraining" : "ForMaskedLM")}, 1)},
            {"attention_probs_dropout_prob", real(0.0)},
            {"hidden_act", text("gelu")},
            {"hidden_dropout_prob", real(0.0)},
            {"hidden_size", integer(c.hidden_size)},
            {"initializer_range", real(c.initializer_range)},
            {"intermediate_size", integer(c.ffn_hidden_size)},
            {"is_decoder", boolean(false)},
            {"layer_norm_eps", real(c.norm_epsilon)},
            {"max_position_embeddings", integer(c.max_position_embeddings)},
            {"model_type", text(c.model_type)},
            {"num_attention_heads", integer(c.num_heads)},
            {"num_hidden_layers", integer(c.num_layers)},
            {"pad_token_id", integer(0)},
            {"position_embedding_type", text("absolute")},
            {"tie_word_embeddings", boolean(c.tied)},
            // At least one row: transformers always adds a token-type embedding.
            {"type_vocab_size", integer(std::max<int64_t>(1, c.bert.tokentypes))}};
}

class Bert final : public HfArchitecture {
  public:
    std::vector<std::string> model_types() const override { return {"megatron-bert", "bert"}; }
    void read_config(const ConfigJson& j, const std::filesystem::path& dir,
                     HfConfig& c) const override {
        read_bert(j, dir, c);
    }
    void add_model_args(const HfConfig& c, ModelArgs& a) const override {
        a["no-bias-gelu-fusion"] = "";  // the erf GeLU (read_bert admits no other)
        a["num-tokentypes"] = std::to_string(c.bert.tokentypes);
        if (!c.bert.binary_head) a["bert-no-binary-head"] = "";
        if (c.bert.post_layer_norm) a["apply-residual-connection-post-layernorm"] = "";
    }
    void import_tensors(HfImport& in) const override { import_bert(in); }
    void export_tensors(HfExport& out) const override { export_bert(out); }
    Members config_members(const HfConfig& c) const override { return bert_members(c); }
    // BertTokenizer's models have no bos/eos ids (their [CLS] and [SEP] are not those).
    bool generates_text() const override { return false; }

    bool exports(const SaverArgs&, const std::optional<BertParts>& bert) const override {
        return bert.has_value();
    }
    HfConfig config_from_args(const SaverArgs& a,
                              const std::optional<BertParts>& bert) const override {
        HfConfig c = transformer_config_from_args(a);
        c.bert = *bert;
        c.bert.post_layer_norm = a.flag("apply_residual_connection_post_layernorm");
        c.model_type = c.bert.post_layer_norm ? "bert" : "megatron-bert";
        const std::string why =
            "BERT is exported as megatron-bert or bert: learned absolute positions, LayerNorm, "
            "the erf GeLU, linear biases";
        const std::string position = a.text("position_embedding_type", "learned_absolute");
        if (position != "learned_absolute") not_supported("position_embedding_type", position, why);
        refuse_unless_gpt2_layers(a, c, "BERT", why);
        if (a.flag("bias_gelu_fusion", true))
            not_supported("bias_gelu_fusion", "True",
                          "Megatron's fused bias-GeLU is the tanh form while its BertLMHead "
                          "applies the erf GeLU, and transformers' BERT has one "
                          "hidden_act for both: train with --no-bias-gelu-fusion");
        return c;
    }
};

}  // namespace

const HfArchitecture& bert_architecture() {
    static const Bert kBert;
    return kBert;
}

}  // namespace mt::plugins::hf
