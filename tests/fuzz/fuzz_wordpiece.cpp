// BERT's WordPiece tokenizers (lower-cased and cased, core_v0.13's and core_v0.19's classes) from
// an arbitrary vocab.txt, then encode and decode of text: the first two bytes (little-endian) give the vocabulary's share of the
// input, the rest is the text.
#include "fuzz_support.h"
#include "mt/error.h"
#include "mt/registry.h"
#include "mt/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto files = mt::fuzz::split_two(data, size);
    if (!files) return 0;
    mt::TokenizerOptions o;
    o.vocab_file = mt::fuzz::write_input(files->first, "/vocab.txt").string();
    for (const auto classes :
         {mt::TokenizerOptions::Classes::core_v0_13, mt::TokenizerOptions::Classes::core_v0_19})
        for (const char* type : {"BertWordPieceLowerCase", "BertWordPieceCase"}) {
            o.classes = classes;
            try {
                const auto tokenizer = mt::Registry::global().create_tokenizer(type, o);
                tokenizer->decode(tokenizer->encode(files->second));
            } catch (const mt::Error&) {
            }
        }
    return 0;
}
