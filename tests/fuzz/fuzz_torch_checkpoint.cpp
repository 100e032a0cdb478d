// A Megatron torch-format checkpoint (iter_0000001/mp_rank_00/model_optim_rng.pt) from arbitrary
// bytes, loaded by the torch checkpoint plugin (its args Namespace read and translated to
// core_v0.13's names), then the GPT family's model flags read from its args, as the tools build
// their models from a checkpoint.
#include "fuzz_support.h"
#include "mt/checkpoint.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/error.h"
#include "mt/model.h"
#include "mt/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const auto format = mt::Registry::global().create_checkpoint("torch");
    static const auto gpt = mt::Registry::global().create_model("gpt");
    static const auto dir =
        mt::fuzz::write_input("1", "/latest_checkpointed_iteration.txt").parent_path();
    mt::fuzz::write_input(mt::fuzz::as_text(data, size),
                          "/iter_0000001/mp_rank_00/model_optim_rng.pt");
    try {
        const mt::CheckpointState state = format->load(dir);
        mt::model_args_from_checkpoint(state.args, gpt->flags());
    } catch (const mt::Error&) {
    }
    return 0;
}
