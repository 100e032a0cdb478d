#include "mt/data/tokenizer_identity.h"

#include "mt/error.h"

namespace mt::data {

TokenizerIdentity tokenizer_identity(const std::string& type, const TokenizerOptions& o) {
    if (type == "GPT2BPETokenizer") return {"_GPT2BPETokenizer", {o.vocab_file, o.merge_file}, {}};
    if (type == "BertWordPieceLowerCase" || type == "BertWordPieceCase")
        return {"_BertWordPieceTokenizer",
                {o.vocab_file},
                {{"lower_case", type == "BertWordPieceLowerCase" ? "True" : "False"},
                 {"vocab_extra_ids", std::to_string(o.vocab_extra_ids)}}};
    if (type == "NullTokenizer") {
        MT_CHECK(o.vocab_size, "NullTokenizer needs --vocab-size");
        return {"_NullTokenizer", {std::nullopt}, {{"vocab_size", std::to_string(*o.vocab_size)}}};
    }
    // Megatron's build_tokenizer: _HuggingFaceTokenizer(args.tokenizer_model), no options.
    if (type == "HuggingFaceTokenizer") {
        MT_CHECK(!o.tokenizer_model.empty(), "HuggingFaceTokenizer needs --tokenizer-model");
        return {"_HuggingFaceTokenizer", {o.tokenizer_model}, {}};
    }
    MT_FAIL("--tokenizer-type ", type, ": not supported yet: training data read with the ", type,
            " tokenizer (its dataset cache identity)");
}

}  // namespace mt::data
