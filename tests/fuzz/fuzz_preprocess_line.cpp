// One JSON line through megatron-preprocess's document encoder (GPT-2's committed tiny
// vocabulary; keys "text" and "title", sentence splitting on): a bad line is a BadLine, never a
// crash.
#include <simdjson.h>

#include "document_encoder.h"
#include "fuzz_support.h"
#include "mt/error.h"
#include "mt/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const mt::preprocess::EncoderOptions options = [] {
        mt::preprocess::EncoderOptions o;
        o.json_keys = {"text", "title"};
        o.split_sentences = true;
        o.append_eod = true;
        return o;
    }();
    static mt::preprocess::DocumentEncoder encoder(mt::fuzz::tiny_gpt2_tokenizer(), options);
    std::string line(mt::fuzz::as_text(data, size));
    line.append(simdjson::SIMDJSON_PADDING, '\0');
    std::vector<mt::preprocess::KeyTokens> out(2);
    try {
        encoder.encode(std::string_view(line.data(), size), out);
    } catch (const mt::preprocess::BadLine&) {
    } catch (const mt::Error&) {
    }
    return 0;
}
