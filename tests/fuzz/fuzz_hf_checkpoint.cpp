// A Hugging Face model folder from arbitrary bytes, loaded by the hf checkpoint plugin: the first
// two bytes (little-endian) give config.json's share of the input, the rest is
// model.safetensors (its header length, JSON header, offsets and dtypes).
#include "fuzz_support.h"
#include "mt/checkpoint.h"
#include "mt/error.h"
#include "mt/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const auto format = mt::Registry::global().create_checkpoint("hf");
    const auto files = mt::fuzz::split_two(data, size);
    if (!files) return 0;
    const auto config = mt::fuzz::write_input(files->first, "/config.json");
    mt::fuzz::write_input(files->second, "/model.safetensors");
    try {
        format->load(config.parent_path());
    } catch (const mt::Error&) {
    }
    return 0;
}
