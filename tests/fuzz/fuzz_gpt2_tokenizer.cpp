// GPT2BPETokenizer (the committed 5000-entry vocabulary), core_v0.13's class and core_v0.19's
// with added special tokens, on arbitrary bytes: encoding is lossless (byte-level BPE, special
// tokens decoded as their text), so decode(encode(text)) must give the bytes back; and the
// input's bytes read as ids decode without fault.
#include <cstdlib>

#include "fuzz_support.h"
#include "mt/error.h"
#include "mt/registry.h"
#include "mt/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text = mt::fuzz::as_text(data, size);
    for (const bool core_v0_19 : {false, true}) {
        const mt::Tokenizer& tokenizer = mt::fuzz::tiny_gpt2_tokenizer(core_v0_19);
        try {
            const std::vector<int32_t> ids = tokenizer.encode(text);
            if (tokenizer.decode(ids) != text) std::abort();  // lossless, or a finding
        } catch (const mt::Error&) {
        }
        std::vector<int32_t> ids;
        for (size_t i = 0; i + 1 < size; i += 2)
            ids.push_back(int32_t((data[i] | data[i + 1] << 8) % tokenizer.vocab_size()));
        tokenizer.decode(ids);
    }
    return 0;
}
