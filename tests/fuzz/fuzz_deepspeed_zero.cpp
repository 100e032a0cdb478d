// A Megatron-DeepSpeed checkpoint whose ZeRO optimizer shard of data-parallel rank 0
// (zero_pp_rank_0_mp_rank_00_optim_states.pt) is arbitrary bytes, the rest being the committed
// deepspeed_gpt_zero1_dp2 fixture's files (its model, param_shapes and rank 1's shard), loaded by
// the deepspeed format: the shards joined over the ranks and cut into the model's parameters.
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    mt::fuzz::load_deepspeed_with(mt::fuzz::as_text(data, size),
                                  "megatron_deepspeed/deepspeed_gpt_zero1_dp2/global_step1",
                                  "zero_pp_rank_0_mp_rank_00_optim_states.pt");
    return 0;
}
