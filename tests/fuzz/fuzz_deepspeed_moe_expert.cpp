// A Megatron-DeepSpeed MoE checkpoint whose expert file layer_0_expert_1_mp_rank_00_model_states.pt
// is arbitrary bytes, the rest being the committed deepspeed_gpt_moe_ep fixture's files (the
// model without its experts, the other experts, an optimizer file per expert-parallel rank),
// loaded by the deepspeed format: each expert placed after its layer's gate, the optimizer files
// joined.
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    mt::fuzz::load_deepspeed_with(mt::fuzz::as_text(data, size),
                                  "megatron_deepspeed/deepspeed_gpt_moe_ep/global_step1",
                                  "layer_0_expert_1_mp_rank_00_model_states.pt");
    return 0;
}
