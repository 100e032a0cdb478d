// A torch_dist checkpoint whose common.pt (Megatron's non-sharded state: args, iteration, the
// optimizers' param groups and step, the scheduler) is arbitrary bytes, the rest being the
// committed Muon fixture's files (Megatron core_v0.19's run with Muon's and Adam's chained
// state), loaded by the torch_dist plugin: the common state paired with the sharded moments.
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    mt::fuzz::load_torch_dist_with(mt::fuzz::as_text(data, size), "muon/gpt_muon_fp32/iter_0000001",
                                   "common.pt");
    return 0;
}
