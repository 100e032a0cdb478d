#include "torch_checkpoint.h"

#include "mt/error.h"
#include "mt/io/torch_file.h"
#include "torch_layout.h"
#include "torch_state.h"

namespace mt::plugins::torch_ckpt {

bool TorchCheckpoint::detect(const std::filesystem::path& dir) const {
    auto latest = read_tracker(dir);
    if (!latest) return false;
    // An iteration directory without mp_rank_00 is another format's (torch_dist); a missing
    // one is a broken torch checkpoint, which load() reports.
    const fs::path iter = iteration_dir(dir, *latest);
    return !fs::exists(iter) || fs::exists(checkpoint_file(dir, *latest));
}

void TorchCheckpoint::save(const std::filesystem::path& dir, const CheckpointState& state) {
    MT_CHECK(state.iteration > 0, "cannot save a checkpoint at iteration ", state.iteration,
             " (Megatron's tracker holds an iteration > 0)");
    const io::PyValue root = to_py(state);
    write_checkpoint(dir, state.iteration,
                     [&](const fs::path& file) { io::save_torch_file(file, root); });
}

CheckpointState TorchCheckpoint::load(const std::filesystem::path& dir) {
    auto latest = read_tracker(dir);
    MT_CHECK(latest.has_value(), "no checkpoint in ", dir.string(), ": ", kTrackerName,
             " is missing");
    const fs::path file = checkpoint_file(dir, *latest);
    MT_CHECK(fs::exists(file), dir.string(), "/", kTrackerName, " names ",
             latest->release ? std::string("release") : std::to_string(latest->iteration), " but ",
             file.string(), " does not exist");
    io::PyValue root;
    try {
        root = io::load_torch_file(file);
    } catch (const Error& e) {
        MT_FAIL("cannot read checkpoint ", file.string(), ": ", e.what());
    }
    CheckpointState state = from_py(root, file.string());
    if (latest->release) state.iteration = 0;
    return state;
}

}  // namespace mt::plugins::torch_ckpt
