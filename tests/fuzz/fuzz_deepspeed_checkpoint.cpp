// A Megatron-DeepSpeed checkpoint whose mp_rank_00_model_states.pt (the args, iteration,
// schedule and param_shapes DeepSpeed's engine saves beside the pipeline's layer files) is
// arbitrary bytes, the rest being the committed deepspeed_gpt_zero1_dp2 fixture's files (its
// layer files and ZeRO shards), loaded by the deepspeed format.
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    mt::fuzz::load_deepspeed_with(mt::fuzz::as_text(data, size),
                                  "megatron_deepspeed/deepspeed_gpt_zero1_dp2/global_step1",
                                  "mp_rank_00_model_states.pt");
    return 0;
}
