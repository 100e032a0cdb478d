#include "mt/tokenizer_metadata.h"

#include <simdjson.h>

#include <map>
#include <string_view>

#include "mt/error.h"

namespace mt {

namespace {

// build_tokenizer's library of each --tokenizer-type.
std::string library_of(const std::string& type) {
    if (type == "GPT2BPETokenizer" || type == "BertWordPieceLowerCase" ||
        type == "BertWordPieceCase")
        return "megatron";
    if (type == "SentencePieceTokenizer" || type == "GPTSentencePieceTokenizer" ||
        type == "Llama2Tokenizer")
        return "sentencepiece";
    if (type == "TikTokenizer") return "tiktoken";
    if (type == "HuggingFaceTokenizer") return "huggingface";
    return "";
}

// megatron/core/tokenizers/megatron_tokenizer.py's TOKENIZER_MAPPING_NAMES (text models).
const std::map<std::string_view, std::string_view> kTextClasses = {
    {"default-text", "default_tokenizer.DefaultTokenizerText"},
    {"gpt", "gpt_tokenizer.GPTTokenizer"},
    {"mamba", "mamba_tokenizer.MambaTokenizer"},
    {"bert", "bert_tokenizer.BertTokenizer"},
    {"t5", "t5_tokenizer.T5Tokenizer"},
};

}  // namespace

void read_tokenizer_metadata(const std::string& path, const std::string& tokenizer_type,
                             TokenizerOptions& options) {
    if (tokenizer_type == "NullTokenizer") return;
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    auto error = parser.load(path).get(root);
    MT_CHECK(!error, "--tokenizer-metadata ", path, ": not a JSON file (",
             simdjson::error_message(error), ")");
    simdjson::dom::object metadata;
    MT_CHECK(!root.get_object().get(metadata), "--tokenizer-metadata ", path,
             ": not a JSON object");
    auto text = [&](const char* key) -> std::optional<std::string> {
        simdjson::dom::element e;
        if (metadata[key].get(e) || e.is_null()) return std::nullopt;
        std::string_view s;
        MT_CHECK(!e.get_string().get(s), "--tokenizer-metadata ", path, ": \"", key,
                 "\" must be a string or null");
        return std::string(s);
    };
    const std::string expected = library_of(tokenizer_type);
    MT_CHECK(!expected.empty(), "--tokenizer-metadata with --tokenizer-type ", tokenizer_type,
             ": not supported yet: tokenizer metadata for this type");
    const std::string library = text("library").value_or("None");
    // build_tokenizer passes the type's arguments to the file's library, which refuses them.
    MT_CHECK(library == expected, "--tokenizer-metadata ", path, ": library '",
             library.substr(0, 100), "' is not --tokenizer-type ", tokenizer_type, "'s (", expected,
             "): Megatron's build_tokenizer then fails too (the ", expected,
             " arguments go to the other library)");
    simdjson::dom::element custom;
    MT_CHECK(metadata["tokenizer_class"].get(custom) || custom.is_null(), "--tokenizer-metadata ",
             path, ": \"tokenizer_class\": not supported yet: a tokenizer class of its own");
    const std::string model_type = text("model_type").value_or("default-text");
    const auto cls = kTextClasses.find(model_type);
    MT_CHECK(cls != kTextClasses.end(), "--tokenizer-metadata ", path, ": model_type '",
             model_type.substr(0, 100),
             "' is not one of Megatron's text tokenizer models (default-text, gpt, mamba, bert, "
             "t5)");
    options.metadata_path = path;
    options.core_class = "megatron.core.tokenizers.text.models." + std::string(cls->second);
    options.metadata_chat_template = text("chat_template");
    options.classes = TokenizerOptions::Classes::core_v0_19;
}

}  // namespace mt
