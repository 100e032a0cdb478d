#include "hf_tokenizer_export.h"

#include "byte_level_bpe_json.h"
#include "hf_json.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/error.h"
#include "mt/infer/model_loader.h"
#include "mt/io/atomic_file.h"
#include "mt/registry.h"
#include "mt/tokenizer.h"

#include <memory>

namespace mt::plugins::hf {

namespace fs = std::filesystem;

namespace {

std::string text_arg(const CheckpointArgs& args, const char* name) {
    const ArgValue* v = find_arg(args, name);
    return v && std::holds_alternative<std::string>(*v) ? std::get<std::string>(*v) : "";
}

// transformers' GPT2Tokenizer over vocab.json + merges.txt, with GPT-2's special token.
// `added`: members for tokens added to it (added_tokens_decoder, ...).
std::string gpt2_tokenizer_config(int64_t max_positions, json::Members added = {}) {
    const std::string special = json::text("<|endoftext|>");
    added.insert({{"add_prefix_space", json::boolean(false)},
                  {"bos_token", special},
                  {"eos_token", special},
                  {"errors", json::text("replace")},
                  {"model_max_length", json::integer(max_positions)},
                  {"tokenizer_class", json::text("GPT2Tokenizer")},
                  {"unk_token", special}});
    return json::object(added, 0) + "\n";
}

// transformers' BertTokenizer over vocab.txt, with BERT's special tokens (and `added`).
std::string bert_tokenizer_config(bool lower_case, int64_t max_positions,
                                  json::Members added = {}) {
    added.insert({{"cls_token", json::text("[CLS]")},
                  {"do_lower_case", json::boolean(lower_case)},
                  {"mask_token", json::text("[MASK]")},
                  {"model_max_length", json::integer(max_positions)},
                  {"pad_token", json::text("[PAD]")},
                  {"sep_token", json::text("[SEP]")},
                  {"tokenizer_class", json::text("BertTokenizer")},
                  {"unk_token", json::text("[UNK]")}});
    return json::object(added, 0) + "\n";
}

// transformers' LlamaTokenizer over tokenizer.model, as Llama-2's and Mistral's folders have it:
// `legacy` SentencePiece encoding, a BOS before each text when Megatron's tokenizer adds one
// (core_v0.13's Llama2Tokenizer; GPTSentencePieceTokenizer and core_v0.19's classes add none).
// `added`: members for tokens beyond the model's pieces (added_tokens_decoder, ...).
std::string llama_tokenizer_config(bool add_bos, const std::string& bos, const std::string& eos,
                                   int64_t max_positions, json::Members added = {}) {
    added.insert({{"add_bos_token", json::boolean(add_bos)},
                  {"add_eos_token", json::boolean(false)},
                  {"bos_token", json::text(bos)},
                  {"eos_token", json::text(eos)},
                  {"legacy", json::boolean(true)},
                  {"model_max_length", json::integer(max_positions)},
                  {"tokenizer_class", json::text("LlamaTokenizer")},
                  {"unk_token", json::text("<unk>")}});
    return json::object(added, 0) + "\n";
}

// transformers' added special tokens: `tokens` (text, id) in added_tokens_decoder, found in the
// raw text, and `additional` named additional_special_tokens.
json::Members added_special_tokens(const std::vector<std::pair<std::string, int32_t>>& tokens,
                                   const std::vector<std::string>& additional) {
    json::Members decoder;
    for (const auto& [content, id] : tokens)
        decoder[std::to_string(id)] = json::object({{"content", json::text(content)},
                                                    {"lstrip", json::boolean(false)},
                                                    {"normalized", json::boolean(false)},
                                                    {"rstrip", json::boolean(false)},
                                                    {"single_word", json::boolean(false)},
                                                    {"special", json::boolean(true)}},
                                                   2);
    return {{"added_tokens_decoder", json::object(decoder, 1)},
            {"additional_special_tokens", json::strings(additional, 1)}};
}

// core_v0.13's SentencePieceTokenizer: the special tokens Megatron finds in the text (<CLS>,
// <SEP>, <EOD>, <MASK>, the pad, bos and eos pieces, --vocab-extra-ids' <extra_id_i>), those the
// model lacks at the ids after its pieces, as transformers' added tokens, which it splits from the
// text as Megatron does; each named by its role where it has one.
json::Members sentencepiece_special_tokens(const Tokenizer& trained, int64_t model_pieces,
                                           int64_t extra_ids) {
    const std::vector<std::string> pieces = trained.vocabulary();
    const SpecialIds& ids = trained.special_ids();
    std::vector<std::string> specials;
    for (const std::optional<int32_t>& id :
         {ids.cls, ids.sep, ids.eod, ids.mask, ids.pad, ids.bos, ids.eos})
        if (id) specials.push_back(pieces.at(size_t(*id)));
    for (int64_t i = 0; i < extra_ids; ++i)
        specials.push_back("<extra_id_" + std::to_string(i) + ">");
    std::vector<std::pair<std::string, int32_t>> added;
    for (size_t id = size_t(model_pieces); id < pieces.size(); ++id)
        added.emplace_back(pieces[id], int32_t(id));
    std::vector<std::string> additional;
    for (const std::string& s : specials)
        if (s != "<s>" && s != "</s>" && s != "<unk>") additional.push_back(s);
    json::Members out = added_special_tokens(added, additional);
    for (auto [name, id] : {std::pair{"cls_token", ids.cls},
                            {"sep_token", ids.sep},
                            {"mask_token", ids.mask},
                            {"pad_token", ids.pad}})
        if (id) out[name] = json::text(pieces.at(size_t(*id)));
    return out;
}

// The vocabulary size and bos/eos ids of a tokenizer.
void take_ids(HfTokenizerFiles& out, const Tokenizer& tokenizer) {
    const SpecialIds& ids = tokenizer.special_ids();
    out.vocab_size = tokenizer.vocab_size();
    // GPT-2 has one special token: <|endoftext|> begins and ends texts.
    const std::optional<int32_t> bos = ids.bos ? ids.bos : ids.eod;
    const std::optional<int32_t> eos = ids.eos ? ids.eos : ids.eod;
    if (bos) out.bos_id = *bos;
    if (eos) out.eos_id = *eos;
}

// Vocabulary size and special ids from the tokenizer plugin; a tokenizer it cannot build
// (a feature our reader lacks) still has its files copied for transformers. Returns the
// tokenizer when it loads.
std::unique_ptr<Tokenizer> read_ids(HfTokenizerFiles& out, const std::string& type,
                                    const TokenizerOptions& options) {
    try {
        auto tokenizer = Registry::global().create_tokenizer(type, options);
        take_ids(out, *tokenizer);
        return tokenizer;
    } catch (const std::exception& e) {
        out.note = str("the tokenizer's files are copied, but reading them failed (", e.what(),
                       "): config.json has no bos/eos ids");
    }
    return nullptr;
}

// The tokenizer as generation rebuilds it from the args; nullptr, with the reason in
// `out.note` and no files to write, where it cannot be built here.
std::unique_ptr<Tokenizer> trained_tokenizer(const CheckpointArgs& args, const std::string& type,
                                             HfTokenizerFiles& out) {
    try {
        return infer::tokenizer_for(Registry::global(), "", {}, ".", args, "");
    } catch (const std::exception& e) {
        out.copies.clear();
        out.note = str("no tokenizer files written: the args' ", type, " cannot be built here (",
                       std::string(e.what()).substr(0, 300), ")");
        return nullptr;
    }
}

// core_v0.19's transformers-backed tokenizers: the tokens their add_special_tokens added.
json::Members additional_special_tokens(const Tokenizer& trained) {
    const std::vector<std::pair<std::string, int32_t>> tokens = trained.additional_special_tokens();
    if (tokens.empty()) return {};
    std::vector<std::string> names;
    for (const auto& [content, id] : tokens) names.push_back(content);
    return added_special_tokens(tokens, names);
}

}  // namespace

HfTokenizerFiles hf_tokenizer_files(const CheckpointArgs& args, int64_t max_positions) {
    HfTokenizerFiles out;
    const std::string type = text_arg(args, "tokenizer_type");
    TokenizerOptions options;
    options.vocab_file = text_arg(args, "vocab_file");
    options.merge_file = text_arg(args, "merge_file");
    options.tokenizer_model = text_arg(args, "tokenizer_model");
    if (type == "GPT2BPETokenizer") {
        if (!fs::is_regular_file(options.vocab_file) || !fs::is_regular_file(options.merge_file)) {
            out.note = str("no tokenizer files written: the args' vocab_file '", options.vocab_file,
                           "' and merge_file '", options.merge_file, "' are not both here");
            return out;
        }
        out.copies = {{options.vocab_file, "vocab.json"}, {options.merge_file, "merges.txt"}};
        if (!core_v0_19_tokenizer_args(args)) {
            out.tokenizer_config = gpt2_tokenizer_config(max_positions);
            read_ids(out, type, options);
            return out;
        }
        const std::unique_ptr<Tokenizer> trained = trained_tokenizer(args, type, out);
        if (!trained) return out;
        out.tokenizer_config =
            gpt2_tokenizer_config(max_positions, additional_special_tokens(*trained));
        take_ids(out, *trained);
        return out;
    }
    if (type == "BertWordPieceLowerCase" || type == "BertWordPieceCase") {
        if (!fs::is_regular_file(options.vocab_file)) {
            out.note = str("no tokenizer files written: the args' vocab_file '", options.vocab_file,
                           "' is not here");
            return out;
        }
        out.copies = {{options.vocab_file, "vocab.txt"}};
        const bool lower_case = type == "BertWordPieceLowerCase";
        if (!core_v0_19_tokenizer_args(args)) {
            out.tokenizer_config = bert_tokenizer_config(lower_case, max_positions);
            read_ids(out, type, options);
            return out;
        }
        if (bool_arg(args, "tokenizer_hf_no_include_special_tokens")) {
            out.copies.clear();
            out.note = str("no tokenizer files written: not supported yet: ", type,
                           " trained without [CLS] ... [SEP] (tokenizer_hf_no_include_special_"
                           "tokens) in a Hugging Face config");
            return out;
        }
        const std::unique_ptr<Tokenizer> trained = trained_tokenizer(args, type, out);
        if (!trained) return out;
        out.tokenizer_config =
            bert_tokenizer_config(lower_case, max_positions, additional_special_tokens(*trained));
        take_ids(out, *trained);
        return out;
    }
    if (type == "Llama2Tokenizer" || type == "GPTSentencePieceTokenizer" ||
        type == "SentencePieceTokenizer") {
        if (!fs::is_regular_file(options.tokenizer_model)) {
            out.note = str("no tokenizer files written: the args' tokenizer_model '",
                           options.tokenizer_model, "' is not here");
            return out;
        }
        // core_v0.19's legacy mode's --tokenizer-special-tokens, found in the text, have no
        // LlamaTokenizer config (core_v0.13's SentencePieceTokenizer's do): its wrapper drops a
        // lone "▁" between two of them and decodes them between spaces, which transformers'
        // added tokens cannot say.
        const bool core_v0_19 = core_v0_19_tokenizer_args(args);
        const ArgValue* specials = find_arg(args, "special_tokens");
        const bool listed = specials &&
                            std::holds_alternative<std::vector<std::string>>(*specials) &&
                            !std::get<std::vector<std::string>>(*specials).empty();
        if (core_v0_19 && bool_arg(args, "tokenizer_sentencepiece_legacy") && listed) {
            out.note = str("no tokenizer files written: not supported yet: ", type,
                           "'s special tokens found in the text as core_v0.19's legacy wrapper "
                           "finds them (a lone \"\xE2\x96\x81\" dropped between two of them), "
                           "in a Hugging Face config");
            return out;
        }
        // The classes that built it decide whether a bos goes first (core_v0.13's
        // Llama2Tokenizer only).
        const std::unique_ptr<Tokenizer> trained = trained_tokenizer(args, type, out);
        if (!trained) return out;
        // GPTSentencePieceTokenizer answers the model's own bos and eos (Megatron's
        // Llama2Tokenizer does not).
        const auto tokenizer = read_ids(out, "GPTSentencePieceTokenizer", options);
        out.copies = {{options.tokenizer_model, "tokenizer.model"}};
        std::string bos = "<s>", eos = "</s>";
        if (tokenizer && out.bos_id && out.eos_id) {
            const std::vector<std::string> pieces = tokenizer->vocabulary();
            bos = pieces.at(size_t(*out.bos_id));
            eos = pieces.at(size_t(*out.eos_id));
        }
        const bool add_bos = !trained->encode("").empty();
        json::Members added;
        if (type == "SentencePieceTokenizer" && !core_v0_19) {
            if (!out.vocab_size) {
                out.copies.clear();
                out.note = str("no tokenizer files written: ", out.note);
                return out;
            }
            added = sentencepiece_special_tokens(*trained, *out.vocab_size,
                                                 int_arg(args, "vocab_extra_ids").value_or(0));
            out.vocab_size = trained->vocab_size();  // the added tokens' ids too
        }
        out.tokenizer_config =
            llama_tokenizer_config(add_bos, bos, eos, max_positions, std::move(added));
        return out;
    }
    if (type == "TikTokenizer") {
        // Its --tiktoken-* flags and classes from the args, written as transformers' converters
        // write one.
        const std::unique_ptr<Tokenizer> tokenizer = trained_tokenizer(args, type, out);
        if (!tokenizer) return out;
        const std::optional<ByteLevelBpeModel> model = tokenizer->byte_level_bpe();
        MT_CHECK(model, "TikTokenizer gave no byte-level BPE model");
        out.written = {{"tokenizer.json", byte_level_bpe_tokenizer_json(*model)}};
        const SpecialIds& ids = tokenizer->special_ids();
        json::Members config = {{"model_max_length", json::integer(max_positions)},
                                {"tokenizer_class", json::text("PreTrainedTokenizerFast")},
                                {"unk_token", json::text("<unk>")}};
        for (auto [name, id] : {std::pair{"bos_token", ids.bos},
                                {"eos_token", ids.eos},
                                {"pad_token", ids.pad},
                                {"mask_token", ids.mask},
                                {"cls_token", ids.cls},
                                {"sep_token", ids.sep}})
            if (id) config[name] = json::text(model->special_tokens.at(size_t(*id)));
        out.tokenizer_config = json::object(config, 0) + "\n";
        take_ids(out, *tokenizer);
        return out;
    }
    if (type == "HuggingFaceTokenizer") {
        const fs::path model = options.tokenizer_model;
        if (fs::is_regular_file(model) && model.filename() == "tokenizer.json") {
            out.copies = {{model, "tokenizer.json"}};
        } else if (fs::is_regular_file(model / "tokenizer.json")) {
            for (const char* name : {"tokenizer.json", "tokenizer_config.json",
                                     "special_tokens_map.json", "tokenizer.model"})
                if (fs::is_regular_file(model / name)) out.copies.emplace_back(model / name, name);
        } else {
            // A hub name, or a folder that is elsewhere now.
            out.note = str("no tokenizer files written: the args' tokenizer_model '",
                           options.tokenizer_model, "' is no folder with tokenizer.json here");
            return out;
        }
        if (core_v0_19_tokenizer_args(args)) {
            // The folder's files as they are lack what core_v0.19's class changed.
            const std::unique_ptr<Tokenizer> trained = trained_tokenizer(args, type, out);
            if (!trained) return out;
            if (!trained->additional_special_tokens().empty() ||
                bool_arg(args, "tokenizer_hf_no_include_special_tokens")) {
                out.copies.clear();
                out.note = str("no tokenizer files written: not supported yet: ", type,
                               "'s --tokenizer-special-tokens or "
                               "--tokenizer-hf-no-include-special-tokens in a Hugging Face "
                               "config");
                return out;
            }
            take_ids(out, *trained);
            return out;
        }
        read_ids(out, type, options);
        return out;
    }
    out.note = type.empty() ? std::string("no tokenizer files written: the args name no tokenizer")
                            : str("no tokenizer files written: not supported yet for ", type);
    return out;
}

void write_tokenizer_files(const HfTokenizerFiles& files, const fs::path& dir) {
    for (const auto& [source, name] : files.copies) {
        std::error_code error;
        fs::copy_file(source, dir / name, fs::copy_options::overwrite_existing, error);
        MT_CHECK(!error, "--saver hf: cannot copy ", source.string(), " to ", (dir / name).string(),
                 ": ", error.message());
    }
    for (const auto& [name, content] : files.written) {
        io::AtomicFile file(dir / name);
        file.stream() << content;
        file.commit();
    }
    if (!files.tokenizer_config.empty() && !fs::exists(dir / "tokenizer_config.json")) {
        io::AtomicFile config(dir / "tokenizer_config.json");
        config.stream() << files.tokenizer_config;
        config.commit();
    }
}

}  // namespace mt::plugins::hf
