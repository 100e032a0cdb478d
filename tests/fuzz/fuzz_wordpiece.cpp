// BERT's WordPiece tokenizers (lower-cased and cased) from an arbitrary vocab.txt, then encode
// and decode of text: the first two bytes (little-endian) give the vocabulary's share of the
// input, the rest is the text.
#include "fuzz_support.h"
#include "mt/error.h"
#include "mt/registry.h"
#include "mt/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2) return 0;
    const size_t vocab_size = std::min<size_t>(size - 2, size_t(data[0]) | size_t(data[1]) << 8);
    const std::string_view rest = mt::fuzz::as_text(data + 2, size - 2);
    mt::TokenizerOptions o;
    o.vocab_file = mt::fuzz::write_input(rest.substr(0, vocab_size), "/vocab.txt").string();
    for (const char* type : {"BertWordPieceLowerCase", "BertWordPieceCase"}) {
        try {
            const auto tokenizer = mt::Registry::global().create_tokenizer(type, o);
            tokenizer->decode(tokenizer->encode(rest.substr(vocab_size)));
        } catch (const mt::Error&) {
        }
    }
    return 0;
}
