// A Hugging Face model folder from arbitrary bytes, loaded by the hf checkpoint plugin: the first
// two bytes (little-endian) give config.json's share of the input, the rest is
// model.safetensors (its header length, JSON header, offsets and dtypes).
#include "fuzz_support.h"
#include "mt/checkpoint.h"
#include "mt/error.h"
#include "mt/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const auto format = mt::Registry::global().create_checkpoint("hf");
    if (size < 2) return 0;
    const size_t config_size = std::min<size_t>(size - 2, size_t(data[0]) | size_t(data[1]) << 8);
    const std::string_view rest = mt::fuzz::as_text(data + 2, size - 2);
    const auto config = mt::fuzz::write_input(rest.substr(0, config_size), "/config.json");
    mt::fuzz::write_input(rest.substr(config_size), "/model.safetensors");
    try {
        format->load(config.parent_path());
    } catch (const mt::Error&) {
    }
    return 0;
}
