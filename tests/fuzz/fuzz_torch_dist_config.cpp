// A torch_dist checkpoint whose metadata.json (Megatron's dist-checkpoint config: the sharded
// backend and its version, the common backend) is arbitrary bytes, the rest being the committed
// gpt2_tp1 fixture's files, loaded by the torch_dist plugin.
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    mt::fuzz::load_torch_dist_with(mt::fuzz::as_text(data, size),
                                   "torch_dist/gpt2_tp1/iter_0000007", "metadata.json");
    return 0;
}
