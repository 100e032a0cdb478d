// The SentencePiece tokenizers from an arbitrary model file (the ModelProto our reader parses,
// and libsentencepiece for the models outside Llama-2's layout): GPTSentencePieceTokenizer and
// Llama2Tokenizer, Megatron 0.13's classes and 0.19's, then encode and decode of text. The
// first two bytes (little-endian) give the model's share of the input, the rest is the text;
// the third byte picks the flavour and classes.
#include "fuzz_support.h"
#include "mt/error.h"
#include "mt/registry.h"
#include "mt/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto files = mt::fuzz::split_two(data, size);
    if (!files) return 0;
    const uint8_t pick = size > 2 ? data[2] : 0;
    mt::TokenizerOptions o;
    o.tokenizer_model = mt::fuzz::write_input(files->first, ".model").string();
    if (pick & 2) o.classes = mt::TokenizerOptions::Classes::core_v0_19;
    try {
        const auto tokenizer = mt::Registry::global().create_tokenizer(
            pick & 1 ? "Llama2Tokenizer" : "GPTSentencePieceTokenizer", o);
        tokenizer->decode(tokenizer->encode(files->second));
    } catch (const mt::Error&) {
    }
    return 0;
}
