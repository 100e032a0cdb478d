// A Megatron-DeepSpeed MoE checkpoint whose ZeRO stage 2 shard of rank 1
// (zero_pp_rank_1_mp_rank_00_optim_states.pt) is arbitrary bytes, the rest being the committed
// deepspeed_gpt_moe_zero fixture's files, loaded by the deepspeed format: the shards named by their
// param_slice_mappings, the dense groups joined over the ranks, each rank's "moe" groups
// renumbered over the model's experts, then paired with the model.
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    mt::fuzz::load_deepspeed_with(mt::fuzz::as_text(data, size),
                                  "megatron_deepspeed/deepspeed_gpt_moe_zero/global_step1",
                                  "zero_pp_rank_1_mp_rank_00_optim_states.pt");
    return 0;
}
