// A Megatron-DeepSpeed checkpoint whose ZeRO optimizer shard of data-parallel rank 0
// (zero_pp_rank_0_mp_rank_00_optim_states.pt) is arbitrary bytes, the rest being the committed
// deepspeed_gpt_zero1_dp2 fixture's files (its model, param_shapes and rank 1's shard), loaded by
// the deepspeed format: the shards joined over the ranks and cut into the model's parameters.
#include "fuzz_support.h"
#include "mt/checkpoint.h"
#include "mt/error.h"
#include "mt/registry.h"

namespace fs = std::filesystem;

namespace {

constexpr const char* kShard = "zero_pp_rank_0_mp_rank_00_optim_states.pt";

// The fixture copied once into this process's input folder, but for the fuzzed shard.
fs::path fixture_but_shard() {
    const fs::path d = mt::fuzz::write_input("global_step1", "/latest").parent_path();
    mt::fuzz::copy_fixture_but("megatron_deepspeed/deepspeed_gpt_zero1_dp2/global_step1",
                               d / "global_step1", kShard);
    return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const auto format = mt::Registry::global().create_checkpoint("deepspeed");
    static const fs::path dir = fixture_but_shard();
    mt::fuzz::write_input(mt::fuzz::as_text(data, size), std::string("/global_step1/") + kShard);
    try {
        format->load(dir);
    } catch (const mt::Error&) {
    }
    return 0;
}
