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
#include "hf_layout.h"
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

// Every tensor of the folder by HF name, from one file or the shards of the index (each file
// memory-mapped once; tensors are read from the maps when asked for).
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

    // The tensor in float32 (a view of the map when it is F32 there).
    Tensor get(const std::string& name) const { return files_[file_of(name)]->read_f32(name); }
    // Its shape as the file's header gives it (nothing read).
    const Shape& shape(const std::string& name) const {
        return files_[file_of(name)]->find(name)->shape;
    }
    bool has(const std::string& name) const { return where_.count(name) != 0; }

  private:
    size_t file_of(const std::string& name) const {
        auto it = where_.find(name);
        MT_CHECK(it != where_.end(), dir_.string(), ": the checkpoint has no tensor '", name, "'");
        return it->second;
    }
    void open(const fs::path& path) {
        files_.push_back(std::make_unique<SafetensorsFile>(path));
        for (const auto& e : files_.back()->entries()) where_[e.name] = files_.size() - 1;
    }

    fs::path dir_;
    std::vector<std::unique_ptr<SafetensorsFile>> files_;
    std::map<std::string, size_t> where_;
};

void expect_shape(const Shape& found, const Shape& shape, const std::string& name) {
    MT_CHECK(found == shape, "Hugging Face tensor '", name, "' has shape ", shape_str(found),
             ", config.json implies ", shape_str(shape));
}

// One Megatron-core tensor of the folder: its name, shape (float32) and how to make it from the
// Hugging Face tensors.
struct Recipe {
    std::string name;
    Shape shape;
    std::function<Tensor(const HfTensors&)> make;
};

// The recipes of every Megatron-core tensor, in state-dict order; shapes are checked against
// config.json here, from the files' headers, before any tensor is read.
class Converter {
  public:
    Converter(const HfTensors& tensors, const HfConfig& c) : tensors_(tensors), c_(c) {}

    std::vector<Recipe> run() {
        if (c_.arch == HfArch::gpt2)
            gpt2();
        else
            llama();
        return std::move(recipes_);
    }

  private:
    using Make = std::function<Tensor(const HfTensors&)>;
    // The HF tensor `name`, checked to have `shape`; returns the name.
    std::string hf(const std::string& name, const Shape& shape) {
        expect_shape(tensors_.shape(name), shape, name);
        return name;
    }
    void put(const std::string& name, Shape shape, Make make) {
        recipes_.push_back({name, std::move(shape), std::move(make)});
    }
    // A tensor taken as it is (a view of the file when it is F32 there).
    void put(const std::string& name, const std::string& src) {
        put(name, tensors_.shape(src), [src](const HfTensors& t) { return t.get(src); });
    }
    // A GPT-2 Conv1D weight ([in, out]) as a Linear one ([out, in]).
    void put_transposed(const std::string& name, const std::string& src) {
        const Shape& s = tensors_.shape(src);
        put(name, {s[1], s[0]}, [src](const HfTensors& t) { return transposed(t.get(src)); });
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
            put(attn + "linear_qkv.weight", {3 * h, h}, [w, h, n, hd](const HfTensors& t) {
                const Tensor wt = transposed(t.get(w));
                return group_qkv(wt.slice(0, 0, h), wt.slice(0, h, 2 * h),
                                 wt.slice(0, 2 * h, 3 * h), n, n, hd);
            });
            put(attn + "linear_qkv.bias", {3 * h}, [b, h, n, hd](const HfTensors& t) {
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
            put(attn + "linear_qkv.weight", {(nq + 2 * ng) * hd, h},
                [q, k, v, nq, ng, hd](const HfTensors& t) {
                    return group_qkv(t.get(q), t.get(k), t.get(v), nq, ng, hd);
                });
            put(mlp + "linear_fc1.layer_norm_weight",
                hf(src + "post_attention_layernorm.weight", {h}));
            const std::string gate = hf(src + "mlp.gate_proj.weight", {f, h});
            const std::string up = hf(src + "mlp.up_proj.weight", {f, h});
            put(mlp + "linear_fc1.weight", {2 * f, h},
                [gate, up](const HfTensors& t) { return concat_rows(t.get(gate), t.get(up)); });
            put(mlp + "linear_fc2.weight", hf(src + "mlp.down_proj.weight", {h, f}));
        }
        put("decoder.final_layernorm.weight", hf("model.norm.weight", {h}));
        if (!c_.tied) put("output_layer.weight", hf("lm_head.weight", {c_.vocab_size, h}));
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
                                                 "tokenizer.model"};
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

}  // namespace

void HfCheckpoint::save(const fs::path& dir, const CheckpointState& state) {
    HfConfig config = hf_config_from_args(state.args);
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
    const std::vector<NamedTensor> tensors = hf_tensors(state, config, dtype);
    const HfConfigExtras extras{dtype, tokenizer.bos_id, tokenizer.eos_id};

    // Written beside the target and swapped into place: a crash leaves the old folder (or none).
    fs::path target = fs::absolute(dir).lexically_normal();
    if (target.filename().empty()) target = target.parent_path();
    check_replaceable(target);
    const fs::path tmp = target.string() + ".tmp." + std::to_string(::getpid());
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    try {
        write_hf_weights(tmp, tensors, max_shard_bytes_);
        write_text(tmp / "config.json", hf_config_json(config, extras));
        write_text(tmp / "generation_config.json", hf_generation_config_json(extras));
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

StreamedState HfCheckpoint::load_streamed(const fs::path& dir) {
    const HfConfig config = read_hf_config(dir);
    auto tensors = std::make_shared<const HfTensors>(dir);
    auto recipes = std::make_shared<const std::vector<Recipe>>(Converter(*tensors, config).run());
    StreamedState s;
    for (const Recipe& r : *recipes)
        s.state.model.emplace_back(r.name,
                                   ShardedTensor::whole(tensor_placeholder(r.shape, DType::f32)));
    s.make = [tensors, recipes](size_t i) {
        MT_CHECK(i < recipes->size(), "no tensor ", i, " in a Hugging Face checkpoint of ",
                 recipes->size());
        return (*recipes)[i].make(*tensors);
    };
    s.state.args = hf_checkpoint_args(config);
    // The folder's tokenizer, as Megatron's Hugging Face loaders name it in their args (the
    // order infer::tokenizer_for looks for it in a folder).
    if (fs::is_regular_file(dir / "tokenizer.json")) {
        set_arg(s.state.args, "tokenizer_type", std::string("HuggingFaceTokenizer"));
        set_arg(s.state.args, "tokenizer_model", fs::absolute(dir).string());
    } else if (fs::is_regular_file(dir / "vocab.json") && fs::is_regular_file(dir / "merges.txt")) {
        set_arg(s.state.args, "tokenizer_type", std::string("GPT2BPETokenizer"));
        set_arg(s.state.args, "vocab_file", fs::absolute(dir / "vocab.json").string());
        set_arg(s.state.args, "merge_file", fs::absolute(dir / "merges.txt").string());
    }
    return s;
}

CheckpointState HfCheckpoint::load(const fs::path& dir) {
    // This class's own streamed load (not a subclass's), every tensor made now.
    return made_state(HfCheckpoint::load_streamed(dir));
}

}  // namespace mt::plugins::hf
