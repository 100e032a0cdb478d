// A DeepSpeed universal checkpoint whose tied word embeddings' fp32.pt (a dict with the weights,
// cut to the tokenizer's vocabulary, and their vocab_tensor flag) is arbitrary bytes, the rest
// being the committed deepspeed_gpt_universal fixture's files, loaded by the deepspeed format.
#include "fuzz_support.h"
#include "mt/checkpoint.h"
#include "mt/error.h"
#include "mt/registry.h"

namespace fs = std::filesystem;

namespace {

constexpr const char* kFuzzed = "zero/tied_modules.embed.word_embeddings.weight/fp32.pt";

// The fixture's universal folder copied once into this process's input folder, but for the
// fuzzed file.
fs::path universal_fixture() {
    const fs::path d = mt::fuzz::input_root() / "input" / "universal";
    mt::fuzz::copy_fixture_but("megatron_deepspeed/deepspeed_gpt_universal/global_step1_universal",
                               d, kFuzzed);
    return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const auto format = mt::Registry::global().create_checkpoint("deepspeed");
    static const fs::path dir = universal_fixture();
    mt::fuzz::write_input(mt::fuzz::as_text(data, size), std::string("/universal/") + kFuzzed);
    try {
        format->load(dir);
    } catch (const mt::Error&) {
    }
    return 0;
}
