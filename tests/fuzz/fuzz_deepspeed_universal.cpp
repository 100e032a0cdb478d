// A DeepSpeed universal checkpoint whose tied word embeddings' fp32.pt (a dict with the weights,
// cut to the tokenizer's vocabulary, and their vocab_tensor flag) is arbitrary bytes, the rest
// being the committed deepspeed_gpt_universal fixture's files, loaded by the deepspeed format.
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    mt::fuzz::load_deepspeed_with(
        mt::fuzz::as_text(data, size),
        "megatron_deepspeed/deepspeed_gpt_universal/global_step1_universal",
        "zero/tied_modules.embed.word_embeddings.weight/fp32.pt");
    return 0;
}
