// TikTokenizer from an arbitrary vocabulary in Megatron's JSON form (rank, base64 token_bytes,
// token_str), with the flags of the committed handmade fixture (pattern v2, vocabulary 289, 3
// special tokens), then encode and decode of text: the first two bytes (little-endian) give the
// JSON's share of the input, the rest is the text.
#include "fuzz_support.h"
#include "mt/error.h"
#include "mt/registry.h"
#include "mt/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2) return 0;
    const size_t json_size = std::min<size_t>(size - 2, size_t(data[0]) | size_t(data[1]) << 8);
    const std::string_view rest = mt::fuzz::as_text(data + 2, size - 2);
    mt::TokenizerOptions o;
    o.tokenizer_model = mt::fuzz::write_input(rest.substr(0, json_size), ".tiktoken.json").string();
    o.tiktoken_pattern = "v2";
    o.vocab_size = 289;
    o.tiktoken_num_special_tokens = 3;
    try {
        const auto tokenizer = mt::Registry::global().create_tokenizer("TikTokenizer", o);
        tokenizer->decode(tokenizer->encode(rest.substr(json_size)));
    } catch (const mt::Error&) {
    }
    return 0;
}
