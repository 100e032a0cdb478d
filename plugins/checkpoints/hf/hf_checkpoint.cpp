#include "hf_checkpoint.h"

#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <regex>
#include <set>

#include "hf_architecture.h"
#include "hf_config.h"
#include "hf_config_writer.h"
#include "hf_export.h"
#include "hf_import.h"
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

// The recipes of every Megatron-core tensor of the folder, in state-dict order, as its family
// states them; shapes are checked against config.json from the files' headers, before any tensor
// is read.
std::vector<Recipe> import_recipes(const HfTensors& tensors, const HfConfig& config) {
    HfImport in(tensors, config);
    config.arch->import_tensors(in);
    return in.take();
}

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

// The folder's tokenizer_config.json, read once: its values, or the fallbacks where the file or
// the key is absent (BertTokenizer lower-cases unless it says do_lower_case false).
class FolderTokenizerConfig {
  public:
    explicit FolderTokenizerConfig(const fs::path& dir) {
        read_ =
            !simdjson::padded_string::load((dir / "tokenizer_config.json").string()).get(text_) &&
            !parser_.parse(text_).get(root_);
    }
    bool flag(const char* key, bool fallback) const {
        bool value = fallback;
        return read_ && !root_[key].get_bool().get(value) ? value : fallback;
    }
    std::vector<std::string> strings(const char* key) const {
        std::vector<std::string> out;
        simdjson::dom::array items;
        if (!read_ || root_[key].get_array().get(items)) return out;
        for (auto item : items) {
            std::string_view s;
            if (!item.get_string().get(s)) out.emplace_back(s);
        }
        return out;
    }

  private:
    simdjson::padded_string text_;
    simdjson::dom::parser parser_;
    simdjson::dom::element root_;
    bool read_ = false;
};

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
    const bool generates = config.arch->generates_text();
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
    const HfConfigExtras extras{dtype, generates ? tokenizer.bos_id : std::nullopt,
                                generates ? tokenizer.eos_id : std::nullopt};

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
        if (generates)
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
    auto recipes = std::make_shared<const std::vector<Recipe>>(import_recipes(*tensors, config));
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
        // transformers' GPT2Tokenizer, which finds <|endoftext|> and the config's additional
        // special tokens in the text: core_v0.19's GPT2BPETokenizer (its args' fields say so).
        set_arg(s.state.args, "tokenizer_type", std::string("GPT2BPETokenizer"));
        set_arg(s.state.args, "vocab_file", fs::absolute(dir / "vocab.json").string());
        set_arg(s.state.args, "merge_file", fs::absolute(dir / "merges.txt").string());
        set_arg(s.state.args, "tokenizer_sentencepiece_legacy", false);
        const std::vector<std::string> specials =
            FolderTokenizerConfig(dir).strings("additional_special_tokens");
        if (!specials.empty()) set_arg(s.state.args, "special_tokens", specials);
    } else if (fs::is_regular_file(dir / "vocab.txt")) {
        set_arg(s.state.args, "tokenizer_type",
                std::string(FolderTokenizerConfig(dir).flag("do_lower_case", true)
                                ? "BertWordPieceLowerCase"
                                : "BertWordPieceCase"));
        set_arg(s.state.args, "vocab_file", fs::absolute(dir / "vocab.txt").string());
    } else if (fs::is_regular_file(dir / "tokenizer.model")) {
        // A SentencePiece model alone, as Llama-2's folders hold it: Megatron's Llama-2 loader
        // names it Llama2Tokenizer (bos before each text, as transformers' LlamaTokenizer adds
        // it); a tokenizer_config.json that turns add_bos_token off leaves the bos out, and one
        // whose special tokens are Megatron's SentencePieceTokenizer's (<CLS>, ...; --saver hf
        // writes them) is that class, with its <extra_id_i> count.
        const FolderTokenizerConfig config(dir);
        const std::vector<std::string> specials = config.strings("additional_special_tokens");
        if (std::find(specials.begin(), specials.end(), "<CLS>") != specials.end()) {
            set_arg(s.state.args, "tokenizer_type", std::string("SentencePieceTokenizer"));
            set_arg(s.state.args, "vocab_extra_ids",
                    int64_t(std::count_if(specials.begin(), specials.end(), [](const auto& t) {
                        return t.starts_with("<extra_id_");
                    })));
        } else {
            set_arg(s.state.args, "tokenizer_type",
                    std::string(config.flag("add_bos_token", true) ? "Llama2Tokenizer"
                                                                   : "GPTSentencePieceTokenizer"));
        }
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
