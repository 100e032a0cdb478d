// A Megatron-DeepSpeed checkpoint whose mp_rank_00_model_states.pt (the args, iteration,
// schedule and param_shapes DeepSpeed's engine saves beside the pipeline's layer files) is
// arbitrary bytes, the rest being the committed deepspeed_gpt_zero1_dp2 fixture's files (its
// layer files and ZeRO shards), loaded by the deepspeed format.
#include "fuzz_support.h"
#include "mt/checkpoint.h"
#include "mt/error.h"
#include "mt/registry.h"

namespace fs = std::filesystem;

namespace {

constexpr const char* kRankFile = "mp_rank_00_model_states.pt";

fs::path fixture_but_rank_file() {
    const fs::path d = mt::fuzz::write_input("global_step1", "/latest").parent_path();
    mt::fuzz::copy_fixture_but("megatron_deepspeed/deepspeed_gpt_zero1_dp2/global_step1",
                               d / "global_step1", kRankFile);
    return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const auto format = mt::Registry::global().create_checkpoint("deepspeed");
    static const fs::path dir = fixture_but_rank_file();
    mt::fuzz::write_input(mt::fuzz::as_text(data, size), std::string("/global_step1/") + kRankFile);
    try {
        format->load(dir);
    } catch (const mt::Error&) {
    }
    return 0;
}
