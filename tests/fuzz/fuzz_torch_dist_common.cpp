// A torch_dist checkpoint whose common.pt (Megatron's non-sharded state: args, iteration, the
// optimizers' param groups and step, the scheduler) is arbitrary bytes, the rest being the
// committed Muon fixture's files (Megatron core_v0.19's run with Muon's and Adam's chained
// state), loaded by the torch_dist plugin: the common state paired with the sharded moments.
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
        mt::fuzz::copy_fixture_but("muon/gpt_muon_fp32/iter_0000001", d / "iter_0000001",
                                   "common.pt");
        return d;
    }();
    mt::fuzz::write_input(mt::fuzz::as_text(data, size), "/iter_0000001/common.pt");
    try {
        format->load(dir);
    } catch (const mt::Error&) {
    }
    return 0;
}
