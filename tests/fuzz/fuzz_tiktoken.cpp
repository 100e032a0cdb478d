// TikTokenizer from an arbitrary vocabulary in Megatron's JSON form (rank, base64 token_bytes,
// token_str), with the flags of the committed handmade fixture (pattern v2, vocabulary 289, 3
// special tokens), then encode and decode of text: the first two bytes (little-endian) give the
// JSON's share of the input, the rest is the text.
#include "fuzz_support.h"
#include "mt/error.h"
#include "mt/registry.h"
#include "mt/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto files = mt::fuzz::split_two(data, size);
    if (!files) return 0;
    mt::TokenizerOptions o;
    o.tokenizer_model = mt::fuzz::write_input(files->first, ".tiktoken.json").string();
    o.tiktoken_pattern = "v2";
    o.vocab_size = 289;
    o.tiktoken_num_special_tokens = 3;
    try {
        const auto tokenizer = mt::Registry::global().create_tokenizer("TikTokenizer", o);
        tokenizer->decode(tokenizer->encode(files->second));
    } catch (const mt::Error&) {
    }
    return 0;
}
