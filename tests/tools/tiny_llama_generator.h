// The tiny Hugging Face Llama of tests/fixtures/hf with a NullTokenizer (text = ids, vocabulary
// 127) as a TextGenerator: the request handling of megatron-generate driven without its binary.
#pragma once

#include <memory>

#include "mt/infer/model_loader.h"
#include "mt/model.h"
#include "mt/registry.h"
#include "test_support.h"
#include "text_generation.h"

namespace mt::test {

struct TinyLlamaGenerator {
    std::unique_ptr<ModelFamily> family = Registry::global().create_model("gpt");
    infer::LoadedModel loaded =
        infer::load_for_inference(Registry::global(), *family, fixtures_dir() / "hf" / "llama", {});
    std::unique_ptr<Tokenizer> tokenizer = [] {
        TokenizerOptions o;
        o.vocab_size = 127;
        return Registry::global().create_tokenizer("NullTokenizer", o);
    }();
    generate_tool::TextGenerator generator{*loaded.model, *tokenizer, 1};
};

}  // namespace mt::test
