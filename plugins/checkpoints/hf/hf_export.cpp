#include "hf_export.h"

#include <map>
#include <memory>
#include <tuple>

#include "hf_hybrid_tensors.h"
#include "hf_layout.h"
#include "mt/checkpoint/reshard.h"
#include "mt/error.h"

namespace mt::plugins::hf {

namespace {

// A tensor of the folder before it is made: its shape, and how to make it from the Megatron
// tensors it is drawn from when it is written.
struct Lazy {
    Shape shape;
    std::function<Tensor()> make;

    // f(this tensor), of shape `to`.
    Lazy map(Shape to, std::function<Tensor(const Tensor&)> f) const {
        return {std::move(to), [m = make, f = std::move(f)] { return f(m()); }};
    }
    // Rows [from, to) (a view).
    Lazy rows(int64_t from, int64_t to) const {
        Shape s = shape;
        s[0] = to - from;
        return map(s, [from, to](const Tensor& t) { return t.slice(0, from, to); });
    }
    Lazy transpose() const {
        return map({shape[1], shape[0]}, [](const Tensor& t) { return transposed(t); });
    }
};

// ungroup_qkv's parts of a linear_qkv weight or bias, each made on its own.
struct LazyQkv {
    Lazy q, k, v;
};
LazyQkv ungroup(const Lazy& qkv, int64_t nq, int64_t ng, int64_t hd) {
    auto part = [&](int64_t heads, Tensor Qkv::*member) {
        Shape s = qkv.shape;
        s[0] = heads * hd;
        return qkv.map(
            s, [=](const Tensor& t) { return std::move(ungroup_qkv(t, nq, ng, hd).*member); });
    };
    return {part(nq, &Qkv::q), part(ng, &Qkv::k), part(ng, &Qkv::v)};
}

class Exporter {
  public:
    Exporter(const CheckpointState& state, std::function<Tensor(size_t)> make, const HfConfig& c,
             DType dtype)
        : c_(c),
          dtype_(dtype),
          make_(std::make_shared<const std::function<Tensor(size_t)>>(std::move(make))) {
        for (size_t i = 0; i < state.model.size(); ++i)
            by_name_.emplace(state.model[i].first, Source{&state.model[i].second, i});
    }

    std::vector<TensorToWrite> run() {
        if (c_.arch == HfArch::gpt2)
            gpt2();
        else if (c_.arch == HfArch::llama)
            llama();
        else if (c_.arch == HfArch::hybrid)
            hybrid();
        else if (c_.arch == HfArch::deepseek)
            deepseek();
        else
            bert();
        return std::move(out_);
    }

  private:
    struct Source {
        const ShardedTensor* tensor;  // its shape (a placeholder in a streamed save)
        size_t index;                 // its values: make(index)
    };

    // The whole tensor `name` (or its other norm spelling) in the output dtype, of `shape`;
    // checked now, made when written.
    Lazy get(const std::string& name, const Shape& shape) const {
        auto it = by_name_.find(name);
        if (it == by_name_.end()) it = by_name_.find(other_impl_name(name));
        MT_CHECK(it != by_name_.end(), "--saver hf: the checkpoint has no tensor '", name, "'");
        const ShardedTensor& s = *it->second.tensor;
        MT_CHECK(s.local.shape() == s.global_shape, "--saver hf: '", name, "' is a ",
                 shape_str(s.local.shape()), " piece of ", shape_str(s.global_shape),
                 ": Hugging Face folders hold whole tensors");
        MT_CHECK(s.local.shape() == shape, "--saver hf: '", name, "' has shape ",
                 shape_str(s.local.shape()), ", the model's args imply ", shape_str(shape));
        return {shape, [make = make_, i = it->second.index, dtype = dtype_] {
                    const Tensor t = (*make)(i);
                    return t.dtype() == dtype ? t : cast_float(t, dtype);
                }};
    }
    // The vocabulary table ([rows, hidden], or BERT's output-layer bias [rows]) cut to the
    // config's vocabulary (any padded rows dropped).
    Lazy vocab_table(const std::string& name) const {
        auto it = by_name_.find(name);
        MT_CHECK(it != by_name_.end(), "--saver hf: the checkpoint has no tensor '", name, "'");
        const Shape& global = it->second.tensor->global_shape;
        const int64_t rows = global.empty() ? 0 : global[0];
        MT_CHECK(rows >= c_.vocab_size, "--saver hf: '", name, "' has ", rows,
                 " rows, fewer than the vocabulary's ", c_.vocab_size);
        const Shape shape = global.size() == 1 ? Shape{rows} : Shape{rows, c_.hidden_size};
        return get(name, shape).rows(0, c_.vocab_size);
    }
    void put(std::string name, Lazy t) {
        out_.push_back({std::move(name), std::move(t.shape), dtype_, std::move(t.make)});
    }
    // A SwiGLU fc1 ([gate; up] rows, `f` each) as its two halves.
    void put_gate_up(const std::string& gate, const std::string& up, const Lazy& fc1, int64_t f) {
        put(gate, fc1.rows(0, f));
        put(up, fc1.rows(f, 2 * f));
    }
    bool has(const std::string& name) const { return by_name_.count(name) > 0; }
    // Expert j's linear_fc<fc> weight in a MoE layer's `mlp` ("decoder.layers.<i>.mlp."), under
    // SequentialMLP's names or TEGroupedMLP's.
    std::string expert_fc(const std::string& mlp, int fc, int64_t j) const {
        const std::string n = std::to_string(fc), e = std::to_string(j);
        return has(mlp + "experts.linear_fc1.weight0")
                   ? mlp + "experts.linear_fc" + n + ".weight" + e
                   : mlp + "experts.local_experts." + e + ".linear_fc" + n + ".weight";
    }

    void gpt2() {
        const int64_t h = c_.hidden_size, f = c_.ffn_hidden_size, n = c_.num_heads;
        const int64_t hd = c_.head_dim;
        // GPT2LMHeadModel's names and state-dict order; its lm_head is the tied wte, which
        // transformers leaves out.
        const std::string p = "transformer.";
        put(p + "wte.weight", vocab_table("embedding.word_embeddings.weight"));
        put(p + "wpe.weight",
            get("embedding.position_embeddings.weight", {c_.max_position_embeddings, h}));
        for (int64_t i = 0; i < c_.num_layers; ++i) {
            const std::string src = "decoder.layers." + std::to_string(i) + ".";
            const std::string dst = p + "h." + std::to_string(i) + ".";
            const std::string attn = src + "self_attention.", mlp = src + "mlp.";
            put(dst + "ln_1.weight", get(attn + "linear_qkv.layer_norm_weight", {h}));
            put(dst + "ln_1.bias", get(attn + "linear_qkv.layer_norm_bias", {h}));
            // c_attn is [q | k | v] along its output columns.
            auto qkv_rows = [n, hd](const Tensor& t) {
                const Qkv p = ungroup_qkv(t, n, n, hd);
                return concat_rows(concat_rows(p.q, p.k), p.v);
            };
            put(dst + "attn.c_attn.weight",
                get(attn + "linear_qkv.weight", {3 * h, h}).map({3 * h, h}, qkv_rows).transpose());
            put(dst + "attn.c_attn.bias",
                get(attn + "linear_qkv.bias", {3 * h}).map({3 * h}, qkv_rows));
            put(dst + "attn.c_proj.weight", get(attn + "linear_proj.weight", {h, h}).transpose());
            put(dst + "attn.c_proj.bias", get(attn + "linear_proj.bias", {h}));
            put(dst + "ln_2.weight", get(mlp + "linear_fc1.layer_norm_weight", {h}));
            put(dst + "ln_2.bias", get(mlp + "linear_fc1.layer_norm_bias", {h}));
            put(dst + "mlp.c_fc.weight", get(mlp + "linear_fc1.weight", {f, h}).transpose());
            put(dst + "mlp.c_fc.bias", get(mlp + "linear_fc1.bias", {f}));
            put(dst + "mlp.c_proj.weight", get(mlp + "linear_fc2.weight", {h, f}).transpose());
            put(dst + "mlp.c_proj.bias", get(mlp + "linear_fc2.bias", {h}));
        }
        put(p + "ln_f.weight", get("decoder.final_layernorm.weight", {h}));
        put(p + "ln_f.bias", get("decoder.final_layernorm.bias", {h}));
    }

    void llama() {
        const int64_t h = c_.hidden_size, f = c_.ffn_hidden_size, hd = c_.head_dim;
        const int64_t nq = c_.num_heads, ng = c_.num_kv_heads;
        put("model.embed_tokens.weight", vocab_table("embedding.word_embeddings.weight"));
        for (int64_t i = 0; i < c_.num_layers; ++i) {
            const std::string src = "decoder.layers." + std::to_string(i) + ".";
            const std::string dst = "model.layers." + std::to_string(i) + ".";
            const std::string attn = src + "self_attention.", mlp = src + "mlp.";
            // In LlamaDecoderLayer's state-dict order (attention, MLP, then the norms), which
            // decides where shards split.
            LazyQkv qkv =
                ungroup(get(attn + "linear_qkv.weight", {(nq + 2 * ng) * hd, h}), nq, ng, hd);
            LazyQkv bias;  // Qwen2's
            if (c_.qkv_bias)
                bias = ungroup(get(attn + "linear_qkv.bias", {(nq + 2 * ng) * hd}), nq, ng, hd);
            for (auto [name, w, b] :
                 {std::tuple{"q_proj", &qkv.q, &bias.q}, std::tuple{"k_proj", &qkv.k, &bias.k},
                  std::tuple{"v_proj", &qkv.v, &bias.v}}) {
                put(dst + "self_attn." + name + ".weight", std::move(*w));
                if (c_.qkv_bias) put(dst + "self_attn." + name + ".bias", std::move(*b));
            }
            put(dst + "self_attn.o_proj.weight", get(attn + "linear_proj.weight", {h, nq * hd}));
            if (c_.qk_norm) {  // Qwen3's
                put(dst + "self_attn.q_norm.weight", get(attn + "q_layernorm.weight", {hd}));
                put(dst + "self_attn.k_norm.weight", get(attn + "k_layernorm.weight", {hd}));
            }
            if (c_.num_experts > 0) {
                mixtral_experts(src, dst);
                continue;
            }
            put_gate_up(dst + "mlp.gate_proj.weight", dst + "mlp.up_proj.weight",
                        get(mlp + "linear_fc1.weight", {2 * f, h}), f);
            put(dst + "mlp.down_proj.weight", get(mlp + "linear_fc2.weight", {h, f}));
            put(dst + "input_layernorm.weight", get(attn + "linear_qkv.layer_norm_weight", {h}));
            put(dst + "post_attention_layernorm.weight",
                get(mlp + "linear_fc1.layer_norm_weight", {h}));
        }
        put("model.norm.weight", get("decoder.final_layernorm.weight", {h}));
        if (!c_.tied) put("lm_head.weight", vocab_table("output_layer.weight"));
    }

    // Mamba2ForCausalLM's or NemotronHForCausalLM's names (hf_hybrid_tensors.h).
    void hybrid() {
        for (const HybridTensor& t : hybrid_tensors(c_)) {
            if (t.kind == HybridTensor::Kind::vocab) {
                put(t.hf, vocab_table(t.megatron));
            } else if (t.kind == HybridTensor::Kind::qkv) {
                LazyQkv qkv =
                    ungroup(get(t.megatron, t.shape), c_.num_heads, c_.num_kv_heads, c_.head_dim);
                put(t.hf + "q_proj.weight", std::move(qkv.q));
                put(t.hf + "k_proj.weight", std::move(qkv.k));
                put(t.hf + "v_proj.weight", std::move(qkv.v));
            } else {
                put(t.hf, get(t.megatron, t.shape));
            }
        }
    }

    // DeepseekV3ForCausalLM's names in its state-dict order; the rotary rows stay in DeepSeek's
    // interleaved pairs (rope_interleave), as Megatron's MLA rotates them. The latents' norms
    // under either --transformer-impl's names, the experts SequentialMLP's or grouped.
    void deepseek() {
        const int64_t h = c_.hidden_size;
        put("model.embed_tokens.weight", vocab_table("embedding.word_embeddings.weight"));
        for (int64_t i = 0; i < c_.num_layers; ++i)
            deepseek_layer("decoder.layers." + std::to_string(i) + ".",
                           "model.layers." + std::to_string(i) + ".",
                           i < c_.mla.first_dense_layers);
        put("model.norm.weight", get("decoder.final_layernorm.weight", {h}));
        const std::string head =
            c_.tied ? "embedding.word_embeddings.weight" : "output_layer.weight";
        if (!c_.tied) put("lm_head.weight", vocab_table(head));
        // The multi-token prediction layers as DeepSeek's folders hold them, after the
        // decoder's, with their copies of the embedding and of the output layer.
        for (int64_t k = 0; k < c_.mtp_layers; ++k) {
            const std::string src = "mtp.layers." + std::to_string(k) + ".";
            const std::string dst = "model.layers." + std::to_string(c_.num_layers + k) + ".";
            deepseek_layer(src + "transformer_layer.", dst,
                           c_.num_layers <= c_.mla.first_dense_layers);
            put(dst + "embed_tokens.weight", vocab_table("embedding.word_embeddings.weight"));
            put(dst + "enorm.weight", get(src + "enorm.weight", {h}));
            put(dst + "hnorm.weight", get(src + "hnorm.weight", {h}));
            put(dst + "eh_proj.weight", get(src + "eh_proj.weight", {h, 2 * h}));
            put(dst + "shared_head.norm.weight", get(src + "final_layernorm.weight", {h}));
            put(dst + "shared_head.head.weight", vocab_table(head));
        }
    }

    // Megatron's layer `src` ("decoder.layers.<i>.") as DeepseekV3DecoderLayer `dst`
    // ("model.layers.<i>."), in its state-dict order.
    void deepseek_layer(const std::string& src, const std::string& dst, bool dense) {
        const int64_t h = c_.hidden_size, f = c_.ffn_hidden_size, n = c_.num_heads;
        const MlaParts& m = c_.mla;
        const int64_t dq = m.qk_nope_head_dim + m.qk_rope_head_dim;
        auto norm = [&](const std::string& te, const std::string& local, int64_t size) {
            return get(has(te) ? te : local, {size});
        };
        const std::string attn = src + "self_attention.", out = dst + "self_attn.";
        if (m.q_lora_rank > 0) {
            put(out + "q_a_proj.weight",
                get(attn + "linear_q_down_proj.weight", {m.q_lora_rank, h}));
            put(out + "q_a_layernorm.weight", norm(attn + "linear_q_up_proj.layer_norm_weight",
                                                   attn + "q_layernorm.weight", m.q_lora_rank));
            put(out + "q_b_proj.weight",
                get(attn + "linear_q_up_proj.weight", {n * dq, m.q_lora_rank}));
        } else {
            put(out + "q_proj.weight", get(attn + "linear_q_proj.weight", {n * dq, h}));
        }
        put(out + "kv_a_proj_with_mqa.weight",
            get(attn + "linear_kv_down_proj.weight", {m.kv_lora_rank + m.qk_rope_head_dim, h}));
        put(out + "kv_a_layernorm.weight", norm(attn + "linear_kv_up_proj.layer_norm_weight",
                                                attn + "kv_layernorm.weight", m.kv_lora_rank));
        put(out + "kv_b_proj.weight",
            get(attn + "linear_kv_up_proj.weight",
                {n * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank}));
        put(out + "o_proj.weight", get(attn + "linear_proj.weight", {h, n * m.v_head_dim}));
        const std::string mlp = src + "mlp.";
        std::string post_norm = src + "pre_mlp_layernorm.weight";
        if (dense) {
            put_gate_up(dst + "mlp.gate_proj.weight", dst + "mlp.up_proj.weight",
                        get(mlp + "linear_fc1.weight", {2 * f, h}), f);
            put(dst + "mlp.down_proj.weight", get(mlp + "linear_fc2.weight", {h, f}));
            post_norm = mlp + "linear_fc1.layer_norm_weight";
        } else {
            deepseek_experts(mlp, dst + "mlp.");
        }
        put(dst + "input_layernorm.weight", get(src + "input_layernorm.weight", {h}));
        put(dst + "post_attention_layernorm.weight", get(post_norm, {h}));
    }

    // A MoE layer's experts (SequentialMLP's or grouped), router with its expert bias and shared
    // experts as DeepseekV3MoE's experts, gate and shared_experts.
    void deepseek_experts(const std::string& mlp, const std::string& dst) {
        const int64_t h = c_.hidden_size, e = c_.moe.expert_ffn, s = c_.moe.shared_ffn;
        for (int64_t j = 0; j < c_.num_experts; ++j) {
            const std::string out = dst + "experts." + std::to_string(j) + ".";
            put_gate_up(out + "gate_proj.weight", out + "up_proj.weight",
                        get(expert_fc(mlp, 1, j), {2 * e, h}), e);
            put(out + "down_proj.weight", get(expert_fc(mlp, 2, j), {h, e}));
        }
        put(dst + "gate.weight", get(mlp + "router.weight", {c_.num_experts, h}));
        if (!c_.moe.softmax)  // DeepSeek-V3's correction bias
            put(dst + "gate.e_score_correction_bias",
                get(mlp + "router.expert_bias", {c_.num_experts}));
        if (s == 0) return;
        put_gate_up(dst + "shared_experts.gate_proj.weight", dst + "shared_experts.up_proj.weight",
                    get(mlp + "shared_experts.linear_fc1.weight", {2 * s, h}), s);
        put(dst + "shared_experts.down_proj.weight",
            get(mlp + "shared_experts.linear_fc2.weight", {h, s}));
    }

    // A MoE layer as MixtralDecoderLayer's (Qwen3MoeDecoderLayer's) state dict holds it: the
    // sparse MoE block (gate, then each expert's gate, down and up projections), then the
    // norms. Experts under SequentialMLP's or TEGroupedMLP's names alike.
    void mixtral_experts(const std::string& src, const std::string& dst) {
        const int64_t h = c_.hidden_size, f = c_.ffn_hidden_size;
        const SparseMoeNames names = sparse_moe_names(c_);
        const std::string mlp = src + "mlp.", moe = dst + names.block;
        put(moe + "gate.weight", get(mlp + "router.weight", {c_.num_experts, h}));
        for (int64_t j = 0; j < c_.num_experts; ++j) {
            const Lazy fc1 = get(expert_fc(mlp, 1, j), {2 * f, h});
            const std::string e = moe + "experts." + std::to_string(j) + ".";
            put(e + names.gate + ".weight", fc1.rows(0, f));
            put(e + names.down + ".weight", get(expert_fc(mlp, 2, j), {h, f}));
            put(e + names.up + ".weight", fc1.rows(f, 2 * f));
        }
        put(dst + "input_layernorm.weight",
            get(src + "self_attention.linear_qkv.layer_norm_weight", {h}));
        put(dst + "post_attention_layernorm.weight", get(src + "pre_mlp_layernorm.weight", {h}));
    }

    // MegatronBertForPreTraining's or BertForPreTraining's names (*ForMaskedLM's without the
    // binary head: no pooler, no cls.seq_relationship), the inverse of HfCheckpoint's reading.
    void bert() {
        const int64_t h = c_.hidden_size, f = c_.ffn_hidden_size, n = c_.num_heads;
        const int64_t hd = c_.head_dim;
        const bool post = c_.bert.post_layer_norm;
        put("bert.embeddings.word_embeddings.weight",
            vocab_table("embedding.word_embeddings.weight"));
        put("bert.embeddings.position_embeddings.weight",
            get("embedding.position_embeddings.weight", {c_.max_position_embeddings, h}));
        // transformers always adds a token-type embedding: one zero row adds nothing.
        put("bert.embeddings.token_type_embeddings.weight",
            c_.bert.tokentypes > 0
                ? get("embedding.tokentype_embeddings.weight", {c_.bert.tokentypes, h})
                : Lazy{{1, h}, [h, dtype = dtype_] {
                           return Tensor::zeros({1, h}, dtype);
                       }});
        if (post) {
            put("bert.embeddings.LayerNorm.weight", get("embedding.layernorm.weight", {h}));
            put("bert.embeddings.LayerNorm.bias", get("embedding.layernorm.bias", {h}));
        }
        for (int64_t i = 0; i < c_.num_layers; ++i) {
            const std::string src = "encoder.layers." + std::to_string(i) + ".";
            const std::string dst = "bert.encoder.layer." + std::to_string(i) + ".";
            const std::string attn = src + "self_attention.", mlp = src + "mlp.";
            for (const char* p : {"weight", "bias"}) {
                const std::string part = p;
                if (post) {
                    put(dst + "attention.output.LayerNorm." + part,
                        get(src + "post_self_attn_layernorm." + part, {h}));
                    put(dst + "output.LayerNorm." + part,
                        get(src + "post_mlp_layernorm." + part, {h}));
                } else {
                    put(dst + "attention.ln." + part,
                        get(attn + "linear_qkv.layer_norm_" + part, {h}));
                    put(dst + "ln." + part, get(mlp + "linear_fc1.layer_norm_" + part, {h}));
                }
            }
            LazyQkv w = ungroup(get(attn + "linear_qkv.weight", {3 * h, h}), n, n, hd);
            LazyQkv b = ungroup(get(attn + "linear_qkv.bias", {3 * h}), n, n, hd);
            const std::string self = dst + "attention.self.";
            put(self + "query.weight", std::move(w.q));
            put(self + "query.bias", std::move(b.q));
            put(self + "key.weight", std::move(w.k));
            put(self + "key.bias", std::move(b.k));
            put(self + "value.weight", std::move(w.v));
            put(self + "value.bias", std::move(b.v));
            put(dst + "attention.output.dense.weight", get(attn + "linear_proj.weight", {h, h}));
            put(dst + "attention.output.dense.bias", get(attn + "linear_proj.bias", {h}));
            put(dst + "intermediate.dense.weight", get(mlp + "linear_fc1.weight", {f, h}));
            put(dst + "intermediate.dense.bias", get(mlp + "linear_fc1.bias", {f}));
            put(dst + "output.dense.weight", get(mlp + "linear_fc2.weight", {h, f}));
            put(dst + "output.dense.bias", get(mlp + "linear_fc2.bias", {h}));
        }
        if (!post) {
            put("bert.encoder.ln.weight", get("encoder.final_layernorm.weight", {h}));
            put("bert.encoder.ln.bias", get("encoder.final_layernorm.bias", {h}));
        }
        if (c_.bert.binary_head) {
            put("bert.pooler.dense.weight", get("pooler.dense.weight", {h, h}));
            put("bert.pooler.dense.bias", get("pooler.dense.bias", {h}));
        }
        // The decoder's bias is cls.predictions.bias (one tensor in transformers), its weight
        // the tied word embeddings, which transformers leaves out.
        put("cls.predictions.bias", vocab_table("output_layer.bias"));
        put("cls.predictions.transform.dense.weight", get("lm_head.dense.weight", {h, h}));
        put("cls.predictions.transform.dense.bias", get("lm_head.dense.bias", {h}));
        put("cls.predictions.transform.LayerNorm.weight", get("lm_head.layer_norm.weight", {h}));
        put("cls.predictions.transform.LayerNorm.bias", get("lm_head.layer_norm.bias", {h}));
        if (!c_.tied) put("cls.predictions.decoder.weight", vocab_table("output_layer.weight"));
        if (c_.bert.binary_head) {
            put("cls.seq_relationship.weight", get("binary_head.weight", {2, h}));
            put("cls.seq_relationship.bias", get("binary_head.bias", {2}));
        }
    }

    const HfConfig& c_;
    DType dtype_;
    std::shared_ptr<const std::function<Tensor(size_t)>> make_;  // shared by the lazy tensors
    std::map<std::string, Source> by_name_;
    std::vector<TensorToWrite> out_;
};

}  // namespace

std::vector<TensorToWrite> hf_tensors(const CheckpointState& state,
                                      std::function<Tensor(size_t)> make, const HfConfig& config,
                                      DType dtype) {
    return Exporter(state, std::move(make), config, dtype).run();
}

}  // namespace mt::plugins::hf
