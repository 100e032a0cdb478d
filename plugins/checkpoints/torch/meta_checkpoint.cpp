#include "meta_checkpoint.h"

#include <simdjson.h>

#include <cstdio>
#include <functional>
#include <map>
#include <memory>

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

// The shape of `parts` joined along `d`.
Shape cat_shape(const std::vector<Tensor>& parts, int d) {
    Shape shape = parts[0].shape();
    MT_CHECK(d < int(shape.size()), "cannot join dimension ", d, " of ", shape_str(shape));
    for (size_t i = 1; i < parts.size(); ++i) shape[size_t(d)] += parts[i].shape()[size_t(d)];
    return shape;
}

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

StreamedState MetaCheckpoint::load_streamed(const fs::path& dir) {
    const MetaParams p = read_params(dir / "params.json");
    // The shards' tensors view their files; each model tensor is joined and permuted from them
    // only when made.
    const auto shards = std::make_shared<const Shards>(dir);
    using Make = std::function<Tensor(const Shards&)>;
    auto makes = std::make_shared<std::vector<Make>>();
    StreamedState s;
    auto add = [&](std::string name, const Shape& shape, DType dtype, Make make) {
        s.state.model.emplace_back(std::move(name),
                                   ShardedTensor::whole(tensor_placeholder(shape, dtype)));
        makes->push_back(std::move(make));
    };
    // A tensor joined from every shard's along `d` (the files' own when there is one shard).
    auto add_cat = [&](std::string name, const std::string& key, int d) {
        const std::vector<Tensor> parts = shards->get(key);
        add(std::move(name), cat_shape(parts, d), parts[0].dtype(),
            [key, d](const Shards& sh) { return cat(sh.get(key), d); });
    };
    auto add_first = [&](std::string name, const std::string& key) {
        const Tensor t = shards->get(key)[0];
        add(std::move(name), t.shape(), t.dtype(),
            [key](const Shards& sh) { return sh.get(key)[0]; });
    };
    // Llama 2 splits the embedding's columns across shards, Llama 3 its rows.
    const std::vector<Tensor> embedding = shards->get("tok_embeddings.weight");
    const int words_dim = embedding[0].shape()[1] == p.dim ? 0 : 1;
    const Shape words = cat_shape(embedding, words_dim);
    const DType dtype = embedding[0].dtype();
    MT_CHECK(words.size() == 2 && words[1] == p.dim, dir.string(), ": tok_embeddings.weight is ",
             shape_str(words), " for dim ", p.dim);
    add_cat("embedding.word_embeddings.weight", "tok_embeddings.weight", words_dim);
    int64_t ffn = 0;
    const int64_t hd = p.dim / p.n_heads;
    for (int64_t i = 0; i < p.n_layers; ++i) {
        const std::string meta = "layers." + std::to_string(i) + ".";
        const std::string core = "decoder.layers." + std::to_string(i) + ".";
        add_cat(core + "self_attention.linear_proj.weight", meta + "attention.wo.weight", 1);
        add_first(core + "self_attention.linear_qkv.layer_norm_weight",
                  meta + "attention_norm.weight");
        const std::string wq = meta + "attention.wq.weight", wk = meta + "attention.wk.weight",
                          wv = meta + "attention.wv.weight";
        const std::vector<Tensor> q = shards->get(wq), k = shards->get(wk), v = shards->get(wv);
        const Shape qs = cat_shape(q, 0), ks = cat_shape(k, 0), vs = cat_shape(v, 0);
        MT_CHECK(qs == (Shape{p.n_heads * hd, p.dim}) && ks == (Shape{p.n_kv_heads * hd, p.dim}) &&
                     vs == ks,
                 dir.string(), ": layer ", i, "'s wq/wk/wv are ", q[0].describe(), ", ",
                 k[0].describe(), ", ", v[0].describe(), " (", q.size(),
                 " shards), not what params.json describes");
        add(core + "self_attention.linear_qkv.weight", {qs[0] + 2 * ks[0], p.dim}, q[0].dtype(),
            [wq, wk, wv, p](const Shards& sh) {
                return grouped_qkv(halves_from_pairs(cat(sh.get(wq), 0), p.n_heads),
                                   halves_from_pairs(cat(sh.get(wk), 0), p.n_kv_heads),
                                   cat(sh.get(wv), 0), p.n_kv_heads);
            });
        add_first(core + "mlp.linear_fc1.layer_norm_weight", meta + "ffn_norm.weight");
        const std::string w1 = meta + "feed_forward.w1.weight",
                          w3 = meta + "feed_forward.w3.weight";
        const std::vector<Tensor> w1s = shards->get(w1), w3s = shards->get(w3);
        const Shape s1 = cat_shape(w1s, 0), s3 = cat_shape(w3s, 0);
        MT_CHECK(s1 == s3 && s1[1] == p.dim, dir.string(), ": layer ", i, "'s w1/w3 are ",
                 shape_str(s1), " and ", shape_str(s3));
        ffn = s1[0];
        add(core + "mlp.linear_fc1.weight", {2 * s1[0], s1[1]}, w1s[0].dtype(),
            [w1, w3](const Shards& sh) {
                return cat({cat(sh.get(w1), 0), cat(sh.get(w3), 0)}, 0);
            });
        add_cat(core + "mlp.linear_fc2.weight", meta + "feed_forward.w2.weight", 1);
    }
    add_first("decoder.final_layernorm.weight", "norm.weight");
    add_cat("output_layer.weight", "output.weight", 0);
    s.make = [shards, makes](size_t i) {
        MT_CHECK(i < makes->size(), "no tensor ", i, " in a Meta checkpoint of ", makes->size());
        return (*makes)[i](*shards);
    };

    const int64_t vocab = words[0];
    s.state.args = {{"num_layers", p.n_layers},
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
                    {"params_dtype", std::string(dtype_arg(dtype))}};
    return s;
}

CheckpointState MetaCheckpoint::load(const fs::path& dir) {
    // This class's own streamed load (not a subclass's), every tensor made now.
    return made_state(MetaCheckpoint::load_streamed(dir));
}

}  // namespace mt::plugins::torch_ckpt
