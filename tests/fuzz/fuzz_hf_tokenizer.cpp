// HuggingFaceTokenizer from an arbitrary tokenizer.json (models, pre-tokenizers with their
// regexes, normalizers, decoders, added tokens, post-processors): the first two bytes
// (little-endian) give the JSON's share of the input, the rest is text to encode and decode.
#include "fuzz_support.h"
#include "mt/error.h"
#include "mt/registry.h"
#include "mt/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto files = mt::fuzz::split_two(data, size);
    if (!files) return 0;
    mt::TokenizerOptions o;
    o.tokenizer_model = mt::fuzz::write_input(files->first, "/tokenizer.json").string();
    try {
        const auto tokenizer = mt::Registry::global().create_tokenizer("HuggingFaceTokenizer", o);
        const std::vector<int32_t> ids = tokenizer->encode(files->second);
        tokenizer->decode(ids);
    } catch (const mt::Error&) {
    }
    return 0;
}
