// A torch_dist checkpoint of Megatron core_v0.19's distributed optimizer in its dp_reshardable
// layout whose .metadata (the DCP index: keys, shapes, chunks and where their bytes lie) is
// arbitrary bytes, the rest being the committed fixture's files (tests/fixtures/distopt_v019/
// dpr_moe_ep2: a dense and an expert optimizer chained, two ranks' files), loaded by the
// torch_dist plugin: the buckets matched to the model's pieces and unpacked.
#include "fuzz_support.h"
#include "mt/checkpoint.h"
#include "mt/error.h"
#include "mt/registry.h"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const auto format = mt::Registry::global().create_checkpoint("torch_dist");
    static const fs::path dir = [] {
        const fs::path d =
            mt::fuzz::write_input("1", "/latest_checkpointed_iteration.txt").parent_path();
        mt::fuzz::copy_fixture_but("distopt_v019/dpr_moe_ep2/iter_0000001", d / "iter_0000001",
                                   ".metadata");
        return d;
    }();
    mt::fuzz::write_input(mt::fuzz::as_text(data, size), "/iter_0000001/.metadata");
    try {
        format->load(dir);
    } catch (const mt::Error&) {
    }
    return 0;
}
