#include "meta_checkpoint.h"

#include <simdjson.h>

#include <cstdio>
#include <map>

#include "mt/error.h"
#include "mt/io/torch_file.h"

namespace mt::plugins::torch_ckpt {

namespace {

namespace fs = std::filesystem;

struct MetaParams {
    int64_t dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0;
    double norm_eps = 1e-5, rope_theta = 10000;
    // Llama 3.x's "use_scaled_rope": Megatron's --use-rope-scaling; the factor is params.json's
    // "rope_scaling_factor" where it has one, else Llama 3.1's 8 (--rope-scaling-factor given to
    // the tools overrides it, e.g. 32 for Llama 3.2).
    bool use_scaled_rope = false;
    double rope_scaling_factor = 8.0;
};

MetaParams read_params(const fs::path& file) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    MT_CHECK(!parser.load(file.string()).get(doc), "cannot read ", file.string(),
             " (missing or not JSON)");
    auto integer = [&](const char* key) {
        int64_t v = 0;
        MT_CHECK(!doc[key].get_int64().get(v) && v > 0, file.string(), ": '", key,
                 "' is missing or not a positive integer");
        return v;
    };
    auto real = [&](const char* key, double fallback) {
        double v = fallback;
        if (doc[key].error()) return fallback;
        MT_CHECK(!doc[key].get_double().get(v), file.string(), ": '", key, "' is not a number");
        return v;
    };
    MetaParams p;
    p.dim = integer("dim");
    p.n_layers = integer("n_layers");
    p.n_heads = integer("n_heads");
    p.n_kv_heads = doc["n_kv_heads"].error() ? p.n_heads : integer("n_kv_heads");
    p.norm_eps = real("norm_eps", 1e-5);
    p.rope_theta = real("rope_theta", 10000);
    bool scaled = false;
    if (!doc["use_scaled_rope"].error())
        MT_CHECK(!doc["use_scaled_rope"].get_bool().get(scaled), file.string(),
                 ": 'use_scaled_rope' is not a boolean");
    p.use_scaled_rope = scaled;
    p.rope_scaling_factor = real("rope_scaling_factor", 8.0);
    MT_CHECK(
        p.dim % p.n_heads == 0 && p.n_heads % p.n_kv_heads == 0 && (p.dim / p.n_heads) % 2 == 0,
        file.string(), ": dim ", p.dim, ", n_heads ", p.n_heads, " and n_kv_heads ", p.n_kv_heads,
        " do not describe whole, even-sized heads in whole groups");
    return p;
}

std::vector<fs::path> shard_files(const fs::path& dir) {
    std::vector<fs::path> out;
    for (int i = 0;; ++i) {
        char name[40];
        std::snprintf(name, sizeof name, "consolidated.%02d.pth", i);
        if (!fs::exists(dir / name)) break;
        out.push_back(dir / name);
    }
    return out;
}

// One tensor of every shard.
class Shards {
  public:
    explicit Shards(const fs::path& dir) {
        for (const fs::path& file : shard_files(dir)) {
            try {
                roots_.push_back(io::load_torch_file(file));
            } catch (const Error& e) {
                MT_FAIL("cannot read checkpoint ", file.string(), ": ", e.what());
            }
            MT_CHECK(roots_.back().kind() == io::PyKind::dict, file.string(), ": not a state dict");
            files_.push_back(file.string());
        }
        MT_CHECK(!roots_.empty(), "no consolidated.00.pth in ", dir.string());
    }
    std::vector<Tensor> get(const std::string& key) const {
        std::vector<Tensor> out;
        for (size_t i = 0; i < roots_.size(); ++i) {
            const io::PyValue* v = roots_[i].find(key);
            MT_CHECK(v && v->kind() == io::PyKind::tensor, files_[i], ": no tensor '", key, "'");
            out.push_back(v->as_tensor());
        }
        return out;
    }

  private:
    std::vector<io::PyValue> roots_;
    std::vector<std::string> files_;
};

Tensor cat(const std::vector<Tensor>& parts, int d) {
    if (parts.size() == 1) return parts[0];
    Shape shape = parts[0].shape();
    shape[d] = 0;
    for (const Tensor& p : parts) shape[d] += p.shape()[d];
    Tensor out = Tensor::empty(shape, parts[0].dtype());
    int64_t at = 0;
    for (const Tensor& p : parts) {
        out.slice(d, at, at + p.shape()[d]).copy_from(p);
        at += p.shape()[d];
    }
    return out;
}

// Meta's rotary pairs are interleaved (2j, 2j+1) within each head; Megatron and Hugging Face
// pair (j, j + hd/2): rows of each head go from [hd/2, 2] to [2, hd/2] order.
Tensor halves_from_pairs(const Tensor& w, int64_t heads) {
    const int64_t rows = w.shape()[0], cols = w.shape()[1], hd = rows / heads;
    return w.contiguous()
        .view({heads, hd / 2, 2, cols})
        .transpose(1, 2)
        .contiguous()
        .view({rows, cols});
}

// Megatron's QKV: per query group, its query heads, then its key head, then its value head.
Tensor grouped_qkv(const Tensor& q, const Tensor& k, const Tensor& v, int64_t groups) {
    const int64_t cols = q.shape()[1];
    const int64_t qg = q.shape()[0] / groups, kg = k.shape()[0] / groups;
    Tensor out = Tensor::empty({groups, qg + 2 * kg, cols}, q.dtype());
    out.slice(1, 0, qg).copy_from(q.contiguous().view({groups, qg, cols}));
    out.slice(1, qg, qg + kg).copy_from(k.contiguous().view({groups, kg, cols}));
    out.slice(1, qg + kg, qg + 2 * kg).copy_from(v.contiguous().view({groups, kg, cols}));
    return out.view({groups * (qg + 2 * kg), cols});
}

const char* dtype_arg(DType d) {
    switch (d) {
        case DType::bf16:
            return "bfloat16";
        case DType::f16:
            return "float16";
        default:
            return "float32";
    }
}

}  // namespace

bool MetaCheckpoint::detect(const fs::path& dir) const {
    return fs::exists(dir / "params.json") && fs::exists(dir / "consolidated.00.pth");
}

void MetaCheckpoint::save(const fs::path& dir, const CheckpointState&) {
    MT_FAIL(dir.string(), ": not supported yet: saving Meta's consolidated.NN.pth layout");
}

CheckpointState MetaCheckpoint::load(const fs::path& dir) {
    const MetaParams p = read_params(dir / "params.json");
    const Shards shards(dir);
    CheckpointState s;
    auto add = [&](std::string name, Tensor t) {
        s.model.emplace_back(std::move(name), ShardedTensor{t, t.shape(), Shape(t.dim(), 0)});
    };
    // Llama 2 splits the embedding's columns across shards, Llama 3 its rows.
    const std::vector<Tensor> embedding = shards.get("tok_embeddings.weight");
    const Tensor words = cat(embedding, embedding[0].shape()[1] == p.dim ? 0 : 1);
    MT_CHECK(words.dim() == 2 && words.shape()[1] == p.dim, dir.string(),
             ": tok_embeddings.weight is ", words.describe(), " for dim ", p.dim);
    add("embedding.word_embeddings.weight", words);
    int64_t ffn = 0;
    for (int64_t i = 0; i < p.n_layers; ++i) {
        const std::string meta = "layers." + std::to_string(i) + ".";
        const std::string core = "decoder.layers." + std::to_string(i) + ".";
        add(core + "self_attention.linear_proj.weight",
            cat(shards.get(meta + "attention.wo.weight"), 1));
        add(core + "self_attention.linear_qkv.layer_norm_weight",
            shards.get(meta + "attention_norm.weight")[0]);
        const Tensor q =
            halves_from_pairs(cat(shards.get(meta + "attention.wq.weight"), 0), p.n_heads);
        const Tensor k =
            halves_from_pairs(cat(shards.get(meta + "attention.wk.weight"), 0), p.n_kv_heads);
        const Tensor v = cat(shards.get(meta + "attention.wv.weight"), 0);
        const int64_t hd = p.dim / p.n_heads;
        MT_CHECK(q.shape() == (Shape{p.n_heads * hd, p.dim}) &&
                     k.shape() == (Shape{p.n_kv_heads * hd, p.dim}) && v.shape() == k.shape(),
                 dir.string(), ": layer ", i, "'s wq/wk/wv are ", q.describe(), ", ", k.describe(),
                 ", ", v.describe(), ", not what params.json describes");
        add(core + "self_attention.linear_qkv.weight", grouped_qkv(q, k, v, p.n_kv_heads));
        add(core + "mlp.linear_fc1.layer_norm_weight", shards.get(meta + "ffn_norm.weight")[0]);
        const Tensor w1 = cat(shards.get(meta + "feed_forward.w1.weight"), 0);
        const Tensor w3 = cat(shards.get(meta + "feed_forward.w3.weight"), 0);
        MT_CHECK(w1.shape() == w3.shape() && w1.shape()[1] == p.dim, dir.string(), ": layer ", i,
                 "'s w1/w3 are ", w1.describe(), " and ", w3.describe());
        ffn = w1.shape()[0];
        add(core + "mlp.linear_fc1.weight", cat({w1, w3}, 0));
        add(core + "mlp.linear_fc2.weight", cat(shards.get(meta + "feed_forward.w2.weight"), 1));
    }
    add("decoder.final_layernorm.weight", shards.get("norm.weight")[0]);
    add("output_layer.weight", cat(shards.get("output.weight"), 0));

    const int64_t vocab = words.shape()[0];
    s.args = {{"num_layers", p.n_layers},
              {"hidden_size", p.dim},
              {"ffn_hidden_size", ffn},
              {"num_attention_heads", p.n_heads},
              {"kv_channels", p.dim / p.n_heads},
              {"group_query_attention", p.n_kv_heads != p.n_heads},
              {"num_query_groups", p.n_kv_heads},
              {"seq_length", int64_t(4096)},  // as Megatron's loader sets it
              {"max_position_embeddings", int64_t(4096)},
              {"position_embedding_type", std::string("rope")},
              {"rotary_base", p.rope_theta},
              {"use_rope_scaling", p.use_scaled_rope},
              {"rope_scaling_factor", p.rope_scaling_factor},
              {"normalization", std::string("RMSNorm")},
              {"norm_epsilon", p.norm_eps},
              {"swiglu", true},
              {"add_bias_linear", false},
              {"add_qkv_bias", false},
              {"untie_embeddings_and_output_weights", true},
              {"vocab_size", vocab},
              {"padded_vocab_size", vocab},
              {"params_dtype", std::string(dtype_arg(words.dtype()))}};
    return s;
}

}  // namespace mt::plugins::torch_ckpt
