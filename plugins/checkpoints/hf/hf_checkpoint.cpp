#include "hf_checkpoint.h"

#include <simdjson.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "hf_config.h"
#include "mt/error.h"
#include "safetensors.h"

namespace mt::plugins::hf {

namespace fs = std::filesystem;

namespace {

// Every tensor of the folder by HF name, from one file or the shards of the index.
class HfTensors {
  public:
    explicit HfTensors(const fs::path& dir) : dir_(dir) {
        if (fs::exists(dir / "model.safetensors")) {
            open(dir / "model.safetensors");
            return;
        }
        const fs::path index = dir / "model.safetensors.index.json";
        simdjson::padded_string text;
        MT_CHECK(!simdjson::padded_string::load(index.string()).get(text), dir.string(),
                 ": neither model.safetensors nor model.safetensors.index.json");
        simdjson::dom::parser parser;
        simdjson::dom::object map;
        auto error = parser.parse(text)["weight_map"].get_object().get(map);
        MT_CHECK(!error, index.string(),
                 ": needs a 'weight_map' object: ", simdjson::error_message(error));
        std::set<std::string, std::less<>> opened;
        for (auto field : map) {
            std::string_view file;
            MT_CHECK(!field.value.get_string().get(file), index.string(), ": weight_map['",
                     field.key, "'] must be a file name");
            if (opened.insert(std::string(file)).second) open(dir / file);
        }
    }

    Tensor get(const std::string& name) const {
        auto it = where_.find(name);
        MT_CHECK(it != where_.end(), dir_.string(), ": the checkpoint has no tensor '", name, "'");
        return files_[it->second]->read_f32(name);
    }
    bool has(const std::string& name) const { return where_.count(name) != 0; }

  private:
    void open(const fs::path& path) {
        files_.push_back(std::make_unique<SafetensorsFile>(path));
        for (const auto& e : files_.back()->entries()) where_[e.name] = files_.size() - 1;
    }

    fs::path dir_;
    std::vector<std::unique_ptr<SafetensorsFile>> files_;
    std::map<std::string, size_t> where_;
};

void expect_shape(const Tensor& t, const Shape& shape, const std::string& name) {
    MT_CHECK(t.shape() == shape, "Hugging Face tensor '", name, "' has shape ",
             shape_str(t.shape()), ", config.json implies ", shape_str(shape));
}

// [in, out] (GPT-2's Conv1D) -> [out, in], in 32 x 32 tiles so both sides stay in cache.
Tensor transposed(const Tensor& t) {
    const Tensor c = t.contiguous();
    const int64_t rows = c.shape()[0], cols = c.shape()[1], tile = 32;
    Tensor out = Tensor::empty({cols, rows}, DType::f32);
    const float* src = c.data<float>();
    float* dst = out.data<float>();
    for (int64_t i0 = 0; i0 < rows; i0 += tile)
        for (int64_t j0 = 0; j0 < cols; j0 += tile)
            for (int64_t i = i0; i < std::min(rows, i0 + tile); ++i)
                for (int64_t j = j0; j < std::min(cols, j0 + tile); ++j)
                    dst[j * rows + i] = src[i * cols + j];
    return out;
}

// Megatron's linear_qkv rows: for each query group g, its (nq/ng) query heads, then its key
// head, then its value head. q, k, v are [heads·hd, ...] row blocks (weights or biases).
Tensor group_qkv(const Tensor& q, const Tensor& k, const Tensor& v, int64_t nq, int64_t ng,
                 int64_t hd) {
    const Tensor cq = q.contiguous(), ck = k.contiguous(), cv = v.contiguous();
    const int64_t width = cq.numel() / (nq * hd);  // h for weights, 1 for biases
    Shape shape = cq.shape();
    shape[0] = (nq + 2 * ng) * hd;
    Tensor out = Tensor::empty(shape, DType::f32);
    float* dst = out.data<float>();
    const int64_t q_rows = nq / ng * hd;
    for (int64_t g = 0; g < ng; ++g) {
        dst = std::copy_n(cq.data<float>() + g * q_rows * width, q_rows * width, dst);
        dst = std::copy_n(ck.data<float>() + g * hd * width, hd * width, dst);
        dst = std::copy_n(cv.data<float>() + g * hd * width, hd * width, dst);
    }
    return out;
}

Tensor concat_rows(const Tensor& a, const Tensor& b) {
    const Tensor ca = a.contiguous(), cb = b.contiguous();
    Shape shape = ca.shape();
    shape[0] += cb.shape()[0];
    Tensor out = Tensor::empty(shape, DType::f32);
    float* end = std::copy_n(ca.data<float>(), ca.numel(), out.data<float>());
    std::copy_n(cb.data<float>(), cb.numel(), end);
    return out;
}

class Converter {
  public:
    Converter(const fs::path& dir, const HfConfig& c) : tensors_(dir), c_(c) {}

    CheckpointState run() {
        if (c_.arch == HfArch::gpt2)
            gpt2();
        else
            llama();
        state_.args = hf_checkpoint_args(c_);
        return std::move(state_);
    }

  private:
    Tensor hf(const std::string& name, const Shape& shape) {
        Tensor t = tensors_.get(name);
        expect_shape(t, shape, name);
        return t;
    }
    void put(const std::string& name, Tensor t) {
        const Shape shape = t.shape();
        state_.model.push_back({name, ShardedTensor{std::move(t), shape, Shape(shape.size(), 0)}});
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
            put(attn + "linear_proj.weight", transposed(hf(src + "attn.c_proj.weight", {h, h})));
            put(attn + "linear_proj.bias", hf(src + "attn.c_proj.bias", {h}));
            put(attn + "linear_qkv.layer_norm_weight", hf(src + "ln_1.weight", {h}));
            put(attn + "linear_qkv.layer_norm_bias", hf(src + "ln_1.bias", {h}));
            const Tensor w = transposed(hf(src + "attn.c_attn.weight", {h, 3 * h}));
            const Tensor b = hf(src + "attn.c_attn.bias", {3 * h});
            const int64_t n = c_.num_heads, hd = c_.head_dim;
            put(attn + "linear_qkv.weight",
                group_qkv(w.slice(0, 0, h), w.slice(0, h, 2 * h), w.slice(0, 2 * h, 3 * h), n, n, hd));
            put(attn + "linear_qkv.bias",
                group_qkv(b.slice(0, 0, h), b.slice(0, h, 2 * h), b.slice(0, 2 * h, 3 * h), n, n, hd));
            put(mlp + "linear_fc1.layer_norm_weight", hf(src + "ln_2.weight", {h}));
            put(mlp + "linear_fc1.layer_norm_bias", hf(src + "ln_2.bias", {h}));
            put(mlp + "linear_fc1.weight", transposed(hf(src + "mlp.c_fc.weight", {h, f})));
            put(mlp + "linear_fc1.bias", hf(src + "mlp.c_fc.bias", {f}));
            put(mlp + "linear_fc2.weight", transposed(hf(src + "mlp.c_proj.weight", {f, h})));
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
            put(attn + "linear_qkv.weight",
                group_qkv(hf(src + "self_attn.q_proj.weight", {nq * hd, h}),
                          hf(src + "self_attn.k_proj.weight", {ng * hd, h}),
                          hf(src + "self_attn.v_proj.weight", {ng * hd, h}), nq, ng, hd));
            put(mlp + "linear_fc1.layer_norm_weight",
                hf(src + "post_attention_layernorm.weight", {h}));
            put(mlp + "linear_fc1.weight", concat_rows(hf(src + "mlp.gate_proj.weight", {f, h}),
                                                       hf(src + "mlp.up_proj.weight", {f, h})));
            put(mlp + "linear_fc2.weight", hf(src + "mlp.down_proj.weight", {h, f}));
        }
        put("decoder.final_layernorm.weight", hf("model.norm.weight", {h}));
        if (!c_.tied) put("output_layer.weight", hf("lm_head.weight", {c_.vocab_size, h}));
    }

    HfTensors tensors_;
    const HfConfig& c_;
    CheckpointState state_;
};

}  // namespace

bool HfCheckpoint::detect(const fs::path& dir) const {
    return fs::is_regular_file(dir / "config.json") &&
           (fs::is_regular_file(dir / "model.safetensors") ||
            fs::is_regular_file(dir / "model.safetensors.index.json"));
}

void HfCheckpoint::save(const fs::path& dir, const CheckpointState&) {
    MT_FAIL(dir.string(),
            ": not supported yet: saving Hugging Face folders (megatron-convert --saver hf)");
}

CheckpointState HfCheckpoint::load(const fs::path& dir) {
    const HfConfig config = read_hf_config(dir);
    return Converter(dir, config).run();
}

}  // namespace mt::plugins::hf
