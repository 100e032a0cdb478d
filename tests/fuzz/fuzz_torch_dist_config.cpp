// A torch_dist checkpoint whose metadata.json (Megatron's dist-checkpoint config: the sharded
// backend and its version, the common backend) is arbitrary bytes, the rest being the committed
// gpt2_tp1 fixture's files, loaded by the torch_dist plugin.
#include "fuzz_support.h"
#include "mt/checkpoint.h"
#include "mt/error.h"
#include "mt/registry.h"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const auto format = mt::Registry::global().create_checkpoint("torch_dist");
    static const fs::path dir = mt::fuzz::torch_dist_fixture_but("metadata.json");
    mt::fuzz::write_input(mt::fuzz::as_text(data, size), "/iter_0000007/metadata.json");
    try {
        format->load(dir);
    } catch (const mt::Error&) {
    }
    return 0;
}
