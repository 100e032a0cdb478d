// A torch_dist checkpoint of Megatron core_v0.19's distributed optimizer in its dp_reshardable
// layout whose .metadata (the DCP index: keys, shapes, chunks and where their bytes lie) is
// arbitrary bytes, the rest being the committed fixture's files (tests/fixtures/distopt_v019/
// dpr_moe_ep2: a dense and an expert optimizer chained, two ranks' files), loaded by the
// torch_dist plugin: the buckets matched to the model's pieces and unpacked.
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    mt::fuzz::load_torch_dist_with(mt::fuzz::as_text(data, size),
                                   "distopt_v019/dpr_moe_ep2/iter_0000001", ".metadata");
    return 0;
}
