// HuggingFaceTokenizer from the committed Mixtral folder's tokenizer.json beside an arbitrary
// tokenizer_config.json (its added tokens, special tokens and their flags), then encode and
// decode of text: the first two bytes (little-endian) give the config's share of the input, the
// rest is the text.
#include "fuzz_support.h"
#include "mt/error.h"
#include "mt/registry.h"
#include "mt/tokenizer.h"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const fs::path tokenizer_json = [] {
        const fs::path fixture = mt::fuzz::source_dir() / "tests/fixtures/hf/mixtral";
        const fs::path to = mt::fuzz::write_input("", "/tokenizer.json");
        fs::copy_file(fixture / "tokenizer.json", to, fs::copy_options::overwrite_existing);
        return to;
    }();
    const auto files = mt::fuzz::split_two(data, size);
    if (!files) return 0;
    mt::fuzz::write_input(files->first, "/tokenizer_config.json");
    mt::TokenizerOptions o;
    o.tokenizer_model = tokenizer_json.string();
    try {
        const auto tokenizer = mt::Registry::global().create_tokenizer("HuggingFaceTokenizer", o);
        tokenizer->decode(tokenizer->encode(files->second));
    } catch (const mt::Error&) {
    }
    return 0;
}
