#include "hf_checkpoint.h"

#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <set>

#include "hf_config.h"
#include "hf_config_writer.h"
#include "hf_export.h"
#include "hf_hybrid_tensors.h"
#include "hf_layout.h"
#include "hf_tensors.h"
#include "hf_tokenizer_export.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/error.h"
#include "mt/io/atomic_file.h"
#include "mt/io/durable.h"
#include "mt/log.h"
#include "safetensors.h"

namespace mt::plugins::hf {

namespace fs = std::filesystem;

namespace {

void expect_shape(const Shape& found, const Shape& shape, const std::string& name) {
    MT_CHECK(found == shape, "Hugging Face tensor '", name, "' has shape ", shape_str(found),
             ", config.json implies ", shape_str(shape));
}

// The Hugging Face tensors a recipe reads, each as the recipe's dtype.
struct HfRead {
    const HfTensors& tensors;
    DType as;
    Tensor get(const std::string& name) const { return tensors.get(name, as); }
};

// One Megatron-core tensor of the folder: its name, shape, dtype (the file's for the tensors it
// is made of, float32 where they differ) and how to make it from the Hugging Face tensors (a
// rearrangement: any dtype).
struct Recipe {
    std::string name;
    Shape shape;
    DType dtype = DType::f32;
    std::function<Tensor(const HfRead&)> make;
};

// The recipes of every Megatron-core tensor, in state-dict order; shapes are checked against
// config.json here, from the files' headers, before any tensor is read.
class Converter {
  public:
    Converter(const HfTensors& tensors, const HfConfig& c) : tensors_(tensors), c_(c) {}

    std::vector<Recipe> run() {
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
        return std::move(recipes_);
    }

  private:
    using Make = std::function<Tensor(const HfRead&)>;
    // The HF tensor `name`, checked to have `shape`; returns the name.
    std::string hf(const std::string& name, const Shape& shape) {
        expect_shape(tensors_.shape(name), shape, name);
        return name;
    }
    // A recipe made of the HF tensors `sources`.
    void put(const std::string& name, Shape shape, const std::vector<std::string>& sources,
             Make make) {
        DType dtype = tensors_.dtype(sources.at(0));
        for (const std::string& s : sources)
            if (tensors_.dtype(s) != dtype) dtype = DType::f32;
        recipes_.push_back({name, std::move(shape), dtype, std::move(make)});
    }
    // A tensor taken as it is (a view of the file).
    void put(const std::string& name, const std::string& src) {
        put(name, tensors_.shape(src), {src}, [src](const HfRead& t) { return t.get(src); });
    }
    // A GPT-2 Conv1D weight ([in, out]) as a Linear one ([out, in]).
    void put_transposed(const std::string& name, const std::string& src) {
        const Shape& s = tensors_.shape(src);
        put(name, {s[1], s[0]}, {src}, [src](const HfRead& t) { return transposed(t.get(src)); });
    }

    void gpt2() {
        const int64_t h = c_.hidden_size, f = c_.ffn_hidden_size;
        // GPT2LMHeadModel prefixes "transformer."; a bare GPT2Model does not.
        const std::string p = tensors_.has("transformer.wte.weight") ? "transformer." : "";
        put("embedding.word_embeddings.weight", hf(p + "wte.weight", {c_.vocab_size, h}));
        put("embedding.position_embeddings.weight",
            hf(p + "wpe.weight", {c_.max_position_embeddings, h}));
        for (int64_t i = 0; i < c_.num_layers; ++i) {
            const std::string src = p + "h." + std::to_string(i) + ".";
            const std::string dst = "decoder.layers." + std::to_string(i) + ".";
            const std::string attn = dst + "self_attention.", mlp = dst + "mlp.";
            put_transposed(attn + "linear_proj.weight", hf(src + "attn.c_proj.weight", {h, h}));
            put(attn + "linear_proj.bias", hf(src + "attn.c_proj.bias", {h}));
            put(attn + "linear_qkv.layer_norm_weight", hf(src + "ln_1.weight", {h}));
            put(attn + "linear_qkv.layer_norm_bias", hf(src + "ln_1.bias", {h}));
            const std::string w = hf(src + "attn.c_attn.weight", {h, 3 * h});
            const std::string b = hf(src + "attn.c_attn.bias", {3 * h});
            const int64_t n = c_.num_heads, hd = c_.head_dim;
            put(attn + "linear_qkv.weight", {3 * h, h}, {w}, [w, h, n, hd](const HfRead& t) {
                const Tensor wt = transposed(t.get(w));
                return group_qkv(wt.slice(0, 0, h), wt.slice(0, h, 2 * h),
                                 wt.slice(0, 2 * h, 3 * h), n, n, hd);
            });
            put(attn + "linear_qkv.bias", {3 * h}, {b}, [b, h, n, hd](const HfRead& t) {
                const Tensor bt = t.get(b);
                return group_qkv(bt.slice(0, 0, h), bt.slice(0, h, 2 * h),
                                 bt.slice(0, 2 * h, 3 * h), n, n, hd);
            });
            put(mlp + "linear_fc1.layer_norm_weight", hf(src + "ln_2.weight", {h}));
            put(mlp + "linear_fc1.layer_norm_bias", hf(src + "ln_2.bias", {h}));
            put_transposed(mlp + "linear_fc1.weight", hf(src + "mlp.c_fc.weight", {h, f}));
            put(mlp + "linear_fc1.bias", hf(src + "mlp.c_fc.bias", {f}));
            put_transposed(mlp + "linear_fc2.weight", hf(src + "mlp.c_proj.weight", {f, h}));
            put(mlp + "linear_fc2.bias", hf(src + "mlp.c_proj.bias", {h}));
        }
        put("decoder.final_layernorm.weight", hf(p + "ln_f.weight", {h}));
        put("decoder.final_layernorm.bias", hf(p + "ln_f.bias", {h}));
    }

    void llama() {
        const int64_t h = c_.hidden_size, f = c_.ffn_hidden_size, hd = c_.head_dim;
        const int64_t nq = c_.num_heads, ng = c_.num_kv_heads;
        put("embedding.word_embeddings.weight",
            hf("model.embed_tokens.weight", {c_.vocab_size, h}));
        for (int64_t i = 0; i < c_.num_layers; ++i) {
            const std::string src = "model.layers." + std::to_string(i) + ".";
            const std::string dst = "decoder.layers." + std::to_string(i) + ".";
            const std::string attn = dst + "self_attention.", mlp = dst + "mlp.";
            put(attn + "linear_proj.weight", hf(src + "self_attn.o_proj.weight", {h, nq * hd}));
            put(attn + "linear_qkv.layer_norm_weight", hf(src + "input_layernorm.weight", {h}));
            const std::string q = hf(src + "self_attn.q_proj.weight", {nq * hd, h});
            const std::string k = hf(src + "self_attn.k_proj.weight", {ng * hd, h});
            const std::string v = hf(src + "self_attn.v_proj.weight", {ng * hd, h});
            put(attn + "linear_qkv.weight", {(nq + 2 * ng) * hd, h}, {q, k, v},
                [q, k, v, nq, ng, hd](const HfRead& t) {
                    return group_qkv(t.get(q), t.get(k), t.get(v), nq, ng, hd);
                });
            if (c_.qkv_bias) {  // Qwen2's
                const std::string qb = hf(src + "self_attn.q_proj.bias", {nq * hd});
                const std::string kb = hf(src + "self_attn.k_proj.bias", {ng * hd});
                const std::string vb = hf(src + "self_attn.v_proj.bias", {ng * hd});
                put(attn + "linear_qkv.bias", {(nq + 2 * ng) * hd}, {qb, kb, vb},
                    [qb, kb, vb, nq, ng, hd](const HfRead& t) {
                        return group_qkv(t.get(qb), t.get(kb), t.get(vb), nq, ng, hd);
                    });
            }
            if (c_.qk_norm) {  // Qwen3's
                put(attn + "q_layernorm.weight", hf(src + "self_attn.q_norm.weight", {hd}));
                put(attn + "k_layernorm.weight", hf(src + "self_attn.k_norm.weight", {hd}));
            }
            if (c_.num_experts > 0) {
                mixtral_experts(src, dst);
                continue;
            }
            put(mlp + "linear_fc1.layer_norm_weight",
                hf(src + "post_attention_layernorm.weight", {h}));
            put_swiglu(mlp, src + "mlp.", f);
        }
        put("decoder.final_layernorm.weight", hf("model.norm.weight", {h}));
        if (!c_.tied) put("output_layer.weight", hf("lm_head.weight", {c_.vocab_size, h}));
    }

    // Mamba2ForCausalLM or NemotronHForCausalLM (hf_hybrid_tensors.h); a bare *Model without
    // the "backbone." prefix too.
    void hybrid() {
        const std::string backbone = tensors_.has("backbone.embeddings.weight") ? "backbone." : "";
        for (const HybridTensor& t : hybrid_tensors(c_, backbone)) {
            if (t.kind != HybridTensor::Kind::qkv) {
                put(t.megatron, hf(t.hf, t.shape));
                continue;
            }
            const int64_t nq = c_.num_heads, ng = c_.num_kv_heads, hd = c_.head_dim;
            const int64_t h = c_.hidden_size;
            const std::string q = hf(t.hf + "q_proj.weight", {nq * hd, h});
            const std::string k = hf(t.hf + "k_proj.weight", {ng * hd, h});
            const std::string v = hf(t.hf + "v_proj.weight", {ng * hd, h});
            put(t.megatron, t.shape, {q, k, v}, [q, k, v, nq, ng, hd](const HfRead& f) {
                return group_qkv(f.get(q), f.get(k), f.get(v), nq, ng, hd);
            });
        }
    }

    // DeepseekV3ForCausalLM as Megatron's GPTModel with multi-latent attention (Transformer
    // Engine's names: the latents' norms fused into the up-projections), dense layers then MoE
    // layers (router with its expert bias, SequentialMLP experts, shared experts). Megatron
    // rotates q's and the rope key's rotary rows in DeepSeek's interleaved pairs; a folder
    // without rope_interleave has them in halves, put in pairs here.
    void deepseek() {
        const int64_t h = c_.hidden_size;
        put("embedding.word_embeddings.weight",
            hf("model.embed_tokens.weight", {c_.vocab_size, h}));
        for (int64_t i = 0; i < c_.num_layers; ++i)
            deepseek_layer("model.layers." + std::to_string(i) + ".",
                           "decoder.layers." + std::to_string(i) + ".",
                           i < c_.mla.first_dense_layers);
        put("decoder.final_layernorm.weight", hf("model.norm.weight", {h}));
        // The multi-token prediction layers after the decoder's, each on the spec of the
        // decoder's last layer; their embed_tokens and shared_head.head are DeepSeek's copies of
        // the weights Megatron shares (left out here).
        for (int64_t k = 0; k < c_.mtp_layers; ++k) {
            const std::string src = "model.layers." + std::to_string(c_.num_layers + k) + ".";
            const std::string dst = "mtp.layers." + std::to_string(k) + ".";
            put(dst + "enorm.weight", hf(src + "enorm.weight", {h}));
            put(dst + "hnorm.weight", hf(src + "hnorm.weight", {h}));
            put(dst + "eh_proj.weight", hf(src + "eh_proj.weight", {h, 2 * h}));
            deepseek_layer(src, dst + "transformer_layer.",
                           c_.num_layers <= c_.mla.first_dense_layers);
            put(dst + "final_layernorm.weight", hf(src + "shared_head.norm.weight", {h}));
        }
        if (!c_.tied) put("output_layer.weight", hf("lm_head.weight", {c_.vocab_size, h}));
    }

    // One DeepseekV3DecoderLayer (`src`, "model.layers.<i>.") as Megatron's layer `dst`
    // ("decoder.layers.<i>."): multi-latent attention, then a dense MLP or a MoE block.
    void deepseek_layer(const std::string& src, const std::string& dst, bool dense) {
        const int64_t h = c_.hidden_size, f = c_.ffn_hidden_size, n = c_.num_heads;
        const MlaParts& m = c_.mla;
        const int64_t dq = m.qk_nope_head_dim + m.qk_rope_head_dim, rope = m.qk_rope_head_dim;
        const bool halves = !m.rope_interleave;
        // `src` with its rotary rows at `offset` of each block of `block` rows in pairs.
        auto put_rope = [&](const std::string& name, const std::string& from, int64_t block,
                            int64_t offset) {
            put(name, tensors_.shape(from), {from},
                [from, block, offset, rope, halves](const HfRead& t) {
                    return halves ? interleaved_rope_rows(t.get(from), block, offset, rope)
                                  : t.get(from);
                });
        };
        const std::string in = src + "self_attn.", attn = dst + "self_attention.";
        put(dst + "input_layernorm.weight", hf(src + "input_layernorm.weight", {h}));
        put(attn + "linear_proj.weight", hf(in + "o_proj.weight", {h, n * m.v_head_dim}));
        if (m.q_lora_rank > 0) {
            put(attn + "linear_q_down_proj.weight", hf(in + "q_a_proj.weight", {m.q_lora_rank, h}));
            put(attn + "linear_q_up_proj.layer_norm_weight",
                hf(in + "q_a_layernorm.weight", {m.q_lora_rank}));
            put_rope(attn + "linear_q_up_proj.weight",
                     hf(in + "q_b_proj.weight", {n * dq, m.q_lora_rank}), dq, m.qk_nope_head_dim);
        } else {
            put_rope(attn + "linear_q_proj.weight", hf(in + "q_proj.weight", {n * dq, h}), dq,
                     m.qk_nope_head_dim);
        }
        put_rope(attn + "linear_kv_down_proj.weight",
                 hf(in + "kv_a_proj_with_mqa.weight", {m.kv_lora_rank + rope, h}),
                 m.kv_lora_rank + rope, m.kv_lora_rank);
        put(attn + "linear_kv_up_proj.layer_norm_weight",
            hf(in + "kv_a_layernorm.weight", {m.kv_lora_rank}));
        put(attn + "linear_kv_up_proj.weight",
            hf(in + "kv_b_proj.weight", {n * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank}));
        const std::string mlp = dst + "mlp.", norm = src + "post_attention_layernorm.weight";
        if (dense) {
            put(mlp + "linear_fc1.layer_norm_weight", hf(norm, {h}));
            put_swiglu(mlp, src + "mlp.", f);
            return;
        }
        const int64_t e = c_.moe.expert_ffn, s = c_.moe.shared_ffn;
        put(dst + "pre_mlp_layernorm.weight", hf(norm, {h}));
        put(mlp + "router.weight", hf(src + "mlp.gate.weight", {c_.num_experts, h}));
        if (!c_.moe.softmax)  // DeepSeek-V3's correction bias
            put(mlp + "router.expert_bias",
                hf(src + "mlp.gate.e_score_correction_bias", {c_.num_experts}));
        for (int64_t j = 0; j < c_.num_experts; ++j)
            put_swiglu(mlp + "experts.local_experts." + std::to_string(j) + ".",
                       src + "mlp.experts." + std::to_string(j) + ".", e);
        if (s > 0) put_swiglu(mlp + "shared_experts.", src + "mlp.shared_experts.", s);
    }

    // A SwiGLU MLP of `ffn` (`src`'s gate, up and down projections) as Megatron's under `dst`:
    // linear_fc1 = [gate; up], linear_fc2 = down.
    void put_swiglu(const std::string& dst, const std::string& src, int64_t ffn,
                    const SparseMoeNames& names = {"", "gate_proj", "up_proj", "down_proj"}) {
        const int64_t h = c_.hidden_size;
        const std::string gate = hf(src + names.gate + ".weight", {ffn, h}),
                          up = hf(src + names.up + ".weight", {ffn, h});
        put(dst + "linear_fc1.weight", {2 * ffn, h}, {gate, up},
            [gate, up](const HfRead& t) { return concat_rows(t.get(gate), t.get(up)); });
        put(dst + "linear_fc2.weight", hf(src + names.down + ".weight", {h, ffn}));
    }

    // A sparse MoE block (Mixtral's or Qwen3-MoE's, names from sparse_moe_names) as
    // Megatron-core's MoE layer (SequentialMLP): its own pre_mlp_layernorm, the router (gate),
    // and per expert fc1 = [gate; up], fc2 = down.
    void mixtral_experts(const std::string& src, const std::string& dst) {
        const int64_t h = c_.hidden_size, f = c_.ffn_hidden_size;
        const SparseMoeNames n = sparse_moe_names(c_);
        const std::string moe = src + n.block, mlp = dst + "mlp.";
        put(dst + "pre_mlp_layernorm.weight", hf(src + "post_attention_layernorm.weight", {h}));
        put(mlp + "router.weight", hf(moe + "gate.weight", {c_.num_experts, h}));
        for (int64_t j = 0; j < c_.num_experts; ++j)
            put_swiglu(mlp + "experts.local_experts." + std::to_string(j) + ".",
                       moe + "experts." + std::to_string(j) + ".", f, n);
    }

    // Linear rows q, k, v (weights or biases) grouped per head as linear_qkv holds them.
    void put_qkv(const std::string& name, const std::string& q, const std::string& k,
                 const std::string& v) {
        const int64_t n = c_.num_heads, hd = c_.head_dim;
        Shape shape = tensors_.shape(q);
        shape[0] *= 3;
        put(name, shape, {q, k, v}, [q, k, v, n, hd](const HfRead& t) {
            return group_qkv(t.get(q), t.get(k), t.get(v), n, n, hd);
        });
    }

    // MegatronBertForPreTraining or BertForPreTraining (*ForMaskedLM: no pooler, no
    // cls.seq_relationship) as BertModel in Megatron-core's order: embedding, encoder, lm_head,
    // output layer (the decoder's own weight only when untied; its bias is
    // cls.predictions.bias), binary head, pooler (tests/fixtures/bert/make_bert_fixtures.py maps
    // the same names). Pre-LayerNorm layers keep their norms in linear_qkv / linear_fc1 and end
    // in a final LayerNorm; post-LayerNorm ones have them after the residual adds, and one after
    // the embeddings.
    void bert() {
        const int64_t h = c_.hidden_size, f = c_.ffn_hidden_size, v = c_.vocab_size;
        const bool post = c_.bert.post_layer_norm;
        put("embedding.word_embeddings.weight",
            hf("bert.embeddings.word_embeddings.weight", {v, h}));
        put("embedding.position_embeddings.weight",
            hf("bert.embeddings.position_embeddings.weight", {c_.max_position_embeddings, h}));
        if (c_.bert.tokentypes > 0)
            put("embedding.tokentype_embeddings.weight",
                hf("bert.embeddings.token_type_embeddings.weight", {c_.bert.tokentypes, h}));
        if (post) {
            put("embedding.layernorm.weight", hf("bert.embeddings.LayerNorm.weight", {h}));
            put("embedding.layernorm.bias", hf("bert.embeddings.LayerNorm.bias", {h}));
        }
        for (int64_t i = 0; i < c_.num_layers; ++i) {
            const std::string src = "bert.encoder.layer." + std::to_string(i) + ".";
            const std::string dst = "encoder.layers." + std::to_string(i) + ".";
            const std::string attn = dst + "self_attention.", mlp = dst + "mlp.";
            put(attn + "linear_proj.weight", hf(src + "attention.output.dense.weight", {h, h}));
            put(attn + "linear_proj.bias", hf(src + "attention.output.dense.bias", {h}));
            for (const auto& [part, shape] :
                 {std::pair<std::string, Shape>{"weight", {h, h}}, {"bias", {h}}}) {
                const std::string self = src + "attention.self.";
                put_qkv(attn + "linear_qkv." + part, hf(self + "query." + part, shape),
                        hf(self + "key." + part, shape), hf(self + "value." + part, shape));
            }
            put(mlp + "linear_fc1.weight", hf(src + "intermediate.dense.weight", {f, h}));
            put(mlp + "linear_fc1.bias", hf(src + "intermediate.dense.bias", {f}));
            put(mlp + "linear_fc2.weight", hf(src + "output.dense.weight", {h, f}));
            put(mlp + "linear_fc2.bias", hf(src + "output.dense.bias", {h}));
            for (const char* p : {"weight", "bias"}) {
                const std::string part = p;
                if (post) {
                    put(dst + "post_self_attn_layernorm." + part,
                        hf(src + "attention.output.LayerNorm." + part, {h}));
                    put(dst + "post_mlp_layernorm." + part,
                        hf(src + "output.LayerNorm." + part, {h}));
                } else {
                    put(attn + "linear_qkv.layer_norm_" + part,
                        hf(src + "attention.ln." + part, {h}));
                    put(mlp + "linear_fc1.layer_norm_" + part, hf(src + "ln." + part, {h}));
                }
            }
        }
        if (!post) {
            put("encoder.final_layernorm.weight", hf("bert.encoder.ln.weight", {h}));
            put("encoder.final_layernorm.bias", hf("bert.encoder.ln.bias", {h}));
        }
        const std::string head = "cls.predictions.";
        put("lm_head.dense.weight", hf(head + "transform.dense.weight", {h, h}));
        put("lm_head.dense.bias", hf(head + "transform.dense.bias", {h}));
        put("lm_head.layer_norm.weight", hf(head + "transform.LayerNorm.weight", {h}));
        put("lm_head.layer_norm.bias", hf(head + "transform.LayerNorm.bias", {h}));
        if (!c_.tied) put("output_layer.weight", hf(head + "decoder.weight", {v, h}));
        // transformers saves the decoder's bias once, as the shared cls.predictions.bias.
        put("output_layer.bias",
            hf(tensors_.has(head + "bias") ? head + "bias" : head + "decoder.bias", {v}));
        if (!c_.bert.binary_head) return;
        put("binary_head.weight", hf("cls.seq_relationship.weight", {2, h}));
        put("binary_head.bias", hf("cls.seq_relationship.bias", {2}));
        put("pooler.dense.weight", hf("bert.pooler.dense.weight", {h, h}));
        put("pooler.dense.bias", hf("bert.pooler.dense.bias", {h}));
    }

    const HfTensors& tensors_;
    const HfConfig& c_;
    std::vector<Recipe> recipes_;
};

}  // namespace

bool HfCheckpoint::detect(const fs::path& dir) const {
    return fs::is_regular_file(dir / "config.json") &&
           (fs::is_regular_file(dir / "model.safetensors") ||
            fs::is_regular_file(dir / "model.safetensors.index.json"));
}

namespace {

// The names a Hugging Face export writes: an existing --save-dir holding anything else is not
// replaced (it would be lost).
bool export_file_name(const std::string& name) {
    static const std::set<std::string> kNames = {"config.json",
                                                 "generation_config.json",
                                                 "model.safetensors",
                                                 "model.safetensors.index.json",
                                                 "vocab.json",
                                                 "merges.txt",
                                                 "tokenizer.json",
                                                 "tokenizer_config.json",
                                                 "special_tokens_map.json",
                                                 "tokenizer.model",
                                                 "vocab.txt"};
    static const std::regex kShard(R"(model-\d{5}-of-\d{5}\.safetensors)");
    return kNames.count(name) != 0 || std::regex_match(name, kShard);
}

void check_replaceable(const fs::path& target) {
    if (!fs::exists(fs::symlink_status(target))) return;
    MT_CHECK(fs::is_directory(fs::symlink_status(target)), "--saver hf: ", target.string(),
             " exists and is not a directory");
    for (const auto& entry : fs::directory_iterator(target))
        MT_CHECK(entry.is_regular_file() && export_file_name(entry.path().filename().string()),
                 "--saver hf: ", target.string(), " holds ", entry.path().filename().string(),
                 ", which a Hugging Face export does not write; give a new or empty --save-dir "
                 "(nothing was changed)");
}

void write_text(const fs::path& path, const std::string& text) {
    io::AtomicFile file(path);
    file.stream() << text;
    file.commit();
}

// The vocabulary written: the args' vocab_size (the tokenizer's as convert's --true-vocab-size
// or --vocab-file set it, or as Megatron's NullTokenizer was given it, without its EOD), else
// the tokenizer's, else the whole padded table.
int64_t true_vocab_size(const CheckpointArgs& args, const HfTokenizerFiles& tokenizer,
                        int64_t rows) {
    int64_t vocab = rows;
    std::string from;
    if (const auto v = int_arg(args, "vocab_size"); v && *v > 0) {
        const ArgValue* type = find_arg(args, "tokenizer_type");
        const bool null_tokenizer = type && std::holds_alternative<std::string>(*type) &&
                                    std::get<std::string>(*type) == "NullTokenizer";
        vocab = null_tokenizer ? std::min(*v + 1, rows) : *v;
        from = "the checkpoint's vocab_size";
    } else if (tokenizer.vocab_size) {
        vocab = *tokenizer.vocab_size;
        from = "the tokenizer's";
    } else {
        log::info("--saver hf: the true vocabulary size is not known (no --true-vocab-size, ",
                  "--vocab-file or tokenizer): config.json's vocab_size is the padded table's ",
                  rows);
        return rows;
    }
    MT_CHECK(vocab > 0 && vocab <= rows, "--saver hf: the vocabulary of ", vocab, " tokens (", from,
             ") does not fit the table of ", rows, " rows");
    return vocab;
}

// A boolean of the folder's tokenizer_config.json; `fallback` where the file or the key is absent
// (BertTokenizer lower-cases unless it says do_lower_case false).
bool tokenizer_config_flag(const fs::path& dir, const char* key, bool fallback) {
    simdjson::padded_string text;
    if (simdjson::padded_string::load((dir / "tokenizer_config.json").string()).get(text))
        return fallback;
    simdjson::dom::parser parser;
    bool value = fallback;
    auto error = parser.parse(text)[key].get_bool().get(value);
    return error ? fallback : value;
}

// A BERT's parts (encoder.* names: the bert family's), which its args do not say; nullopt for
// a GPT. A finetuned task model has no Hugging Face counterpart here.
std::optional<BertParts> bert_parts(const CheckpointState& state) {
    const bool bert = std::any_of(state.model.begin(), state.model.end(),
                                  [](const auto& e) { return e.first.starts_with("encoder."); });
    if (!bert) return std::nullopt;
    BertParts parts;
    parts.tokentypes = 0;
    parts.binary_head = false;
    for (const auto& [name, t] : state.model) {
        MT_CHECK(
            !name.starts_with("classification_head.") && !name.starts_with("multichoice_head."),
            "not supported yet: a finetuned BERT task model ('", name,
            "') in --saver hf (a BERT pretraining model is written)");
        if (name == "embedding.tokentype_embeddings.weight") parts.tokentypes = t.global_shape[0];
        parts.binary_head = parts.binary_head || name == "binary_head.weight";
        parts.post_layer_norm = parts.post_layer_norm || name == "embedding.layernorm.weight";
    }
    if (parts.tokentypes == 0)
        log::info("--saver hf: the model has no token types; transformers' BERT always ",
                  "adds one, so type_vocab_size is 1 with a zero embedding (the same network)");
    return parts;
}

// HfCheckpoint::save with state.model's values made by `make` (placeholders in a streamed
// save) as each tensor is written.
void save_folder(const fs::path& dir, const CheckpointState& state,
                 const std::function<Tensor(size_t)>& make, uint64_t max_shard_bytes) {
    HfConfig config = hf_config_from_args(state.args, bert_parts(state));
    const bool bert = config.arch == HfArch::bert;
    auto embedding = std::find_if(state.model.begin(), state.model.end(), [](const auto& e) {
        return e.first == "embedding.word_embeddings.weight";
    });
    MT_CHECK(embedding != state.model.end(),
             "--saver hf: the checkpoint has no tensor 'embedding.word_embeddings.weight'");
    const Tensor& table = embedding->second.local;
    // The weights keep the checkpoint's dtype (convert's --bf16 / --fp16 cast them before).
    const DType dtype = table.dtype();
    MT_CHECK(dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16,
             "--saver hf: weights of dtype ", dtype_name(dtype), ": f32, bf16 or f16 only");
    const HfTokenizerFiles tokenizer =
        hf_tokenizer_files(state.args, config.max_position_embeddings);
    if (!tokenizer.note.empty()) log::info("--saver hf: ", tokenizer.note);
    config.vocab_size = true_vocab_size(state.args, tokenizer, embedding->second.global_shape[0]);
    const std::vector<TensorToWrite> tensors = hf_tensors(state, make, config, dtype);
    // BertTokenizer's models have no bos/eos ids (their [CLS] and [SEP] are not those).
    const HfConfigExtras extras{dtype, bert ? std::nullopt : tokenizer.bos_id,
                                bert ? std::nullopt : tokenizer.eos_id};

    // Written beside the target and swapped into place: a crash leaves the old folder (or none).
    fs::path target = fs::absolute(dir).lexically_normal();
    if (target.filename().empty()) target = target.parent_path();
    check_replaceable(target);
    const fs::path tmp = target.string() + ".tmp." + std::to_string(::getpid());
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    try {
        write_hf_weights(tmp, tensors, max_shard_bytes);
        write_text(tmp / "config.json", hf_config_json(config, extras));
        // transformers writes it for models that generate text, which BERT does not.
        if (!bert) write_text(tmp / "generation_config.json", hf_generation_config_json(extras));
        write_tokenizer_files(tokenizer, tmp);
        io::replace_directory(tmp, target);
    } catch (...) {
        std::error_code ignored;
        fs::remove_all(tmp, ignored);
        throw;
    }
    log::info("--saver hf: wrote a ", config.model_type, " model (", config.num_layers,
              " layers, hidden ", config.hidden_size, ", vocabulary ", config.vocab_size, ", ",
              dtype_name(dtype), ") to ", target.string());
}

}  // namespace

void HfCheckpoint::save(const fs::path& dir, const CheckpointState& state) {
    save_folder(
        dir, state, [&](size_t i) { return state.model.at(i).second.local; }, max_shard_bytes_);
}

void HfCheckpoint::save_streamed(const fs::path& dir, const CheckpointLayout& layout,
                                 const StreamedStateFn& rank_state) {
    MT_CHECK(layout.ranks() == 1 && layout.expert_parallel == 1,
             "--saver hf writes whole tensors: save the whole model (one rank)");
    const StreamedState s = rank_state(0, 0);
    save_folder(dir, s.state, s.make, max_shard_bytes_);
}

StreamedState HfCheckpoint::load_streamed(const fs::path& dir) {
    const HfConfig config = read_hf_config(dir);
    auto tensors = std::make_shared<const HfTensors>(dir);
    auto recipes = std::make_shared<const std::vector<Recipe>>(Converter(*tensors, config).run());
    StreamedState s;
    for (const Recipe& r : *recipes)
        s.state.model.emplace_back(r.name,
                                   ShardedTensor::whole(tensor_placeholder(r.shape, r.dtype)));
    s.make = [tensors, recipes](size_t i) {
        MT_CHECK(i < recipes->size(), "no tensor ", i, " in a Hugging Face checkpoint of ",
                 recipes->size());
        const Recipe& r = (*recipes)[i];
        return r.make(HfRead{*tensors, r.dtype});
    };
    s.state.args = hf_checkpoint_args(config);
    // The folder's tokenizer, as Megatron's Hugging Face loaders name it in their args
    // (infer::tokenizer_for takes it from there).
    if (fs::is_regular_file(dir / "tokenizer.json")) {
        set_arg(s.state.args, "tokenizer_type", std::string("HuggingFaceTokenizer"));
        set_arg(s.state.args, "tokenizer_model", fs::absolute(dir).string());
    } else if (fs::is_regular_file(dir / "vocab.json") && fs::is_regular_file(dir / "merges.txt")) {
        set_arg(s.state.args, "tokenizer_type", std::string("GPT2BPETokenizer"));
        set_arg(s.state.args, "vocab_file", fs::absolute(dir / "vocab.json").string());
        set_arg(s.state.args, "merge_file", fs::absolute(dir / "merges.txt").string());
    } else if (fs::is_regular_file(dir / "vocab.txt")) {
        set_arg(
            s.state.args, "tokenizer_type",
            std::string(tokenizer_config_flag(dir, "do_lower_case", true) ? "BertWordPieceLowerCase"
                                                                          : "BertWordPieceCase"));
        set_arg(s.state.args, "vocab_file", fs::absolute(dir / "vocab.txt").string());
    } else if (fs::is_regular_file(dir / "tokenizer.model")) {
        // A SentencePiece model alone, as Llama-2's folders hold it: Megatron's Llama-2 loader
        // names it Llama2Tokenizer (bos before each text, as transformers' LlamaTokenizer adds
        // it); a tokenizer_config.json that turns add_bos_token off leaves the bos out.
        const bool bos = tokenizer_config_flag(dir, "add_bos_token", true);
        set_arg(s.state.args, "tokenizer_type",
                std::string(bos ? "Llama2Tokenizer" : "GPTSentencePieceTokenizer"));
        set_arg(s.state.args, "tokenizer_model", fs::absolute(dir / "tokenizer.model").string());
    }
    return s;
}

CheckpointState HfCheckpoint::load(const fs::path& dir) {
    // This class's own streamed load (not a subclass's), every tensor made now, in float32.
    CheckpointState state = made_state(HfCheckpoint::load_streamed(dir));
    for (auto& [name, t] : state.model)
        if (t.local.dtype() != DType::f32)
            t = ShardedTensor::whole(cast_float(t.local, DType::f32));
    return state;
}

}  // namespace mt::plugins::hf
