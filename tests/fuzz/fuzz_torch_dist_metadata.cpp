// A torch_dist checkpoint whose .metadata (the pickled DCP metadata: tensor chunks, storage
// offsets, shapes) is arbitrary bytes, the rest being the committed gpt2_tp1 fixture's files
// (metadata.json, common.pt, the .distcp files), loaded by the torch_dist plugin.
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    mt::fuzz::load_torch_dist_with(mt::fuzz::as_text(data, size),
                                   "torch_dist/gpt2_tp1/iter_0000007", ".metadata");
    return 0;
}
