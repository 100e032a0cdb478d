// HuggingFaceTokenizer from an arbitrary tokenizer.json (models, pre-tokenizers with their
// regexes, normalizers, decoders, added tokens, post-processors): the first two bytes
// (little-endian) give the JSON's share of the input, the rest is text to encode and decode.
#include "fuzz_support.h"
#include "mt/error.h"
#include "mt/registry.h"
#include "mt/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2) return 0;
    const size_t json_size = std::min<size_t>(size - 2, size_t(data[0]) | size_t(data[1]) << 8);
    const std::string_view rest = mt::fuzz::as_text(data + 2, size - 2);
    mt::TokenizerOptions o;
    o.tokenizer_model =
        mt::fuzz::write_input(rest.substr(0, json_size), "/tokenizer.json").string();
    try {
        const auto tokenizer = mt::Registry::global().create_tokenizer("HuggingFaceTokenizer", o);
        const std::vector<int32_t> ids = tokenizer->encode(rest.substr(json_size));
        tokenizer->decode(ids);
    } catch (const mt::Error&) {
    }
    return 0;
}
