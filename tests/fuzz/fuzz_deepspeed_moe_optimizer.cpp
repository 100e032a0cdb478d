// A Megatron-DeepSpeed MoE checkpoint whose optimizer file of expert-parallel rank 1
// (expp_rank_1_mp_rank_00_optim_states.pt) is arbitrary bytes, the rest being the committed
// deepspeed_gpt_moe_ep fixture's files, loaded by the deepspeed format: the ranks' "moe" param
// groups joined and renumbered, then paired with the model.
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    mt::fuzz::load_deepspeed_with(mt::fuzz::as_text(data, size),
                                  "megatron_deepspeed/deepspeed_gpt_moe_ep/global_step1",
                                  "expp_rank_1_mp_rank_00_optim_states.pt");
    return 0;
}
