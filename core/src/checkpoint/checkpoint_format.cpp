// The defaults of CheckpointFormat's rank-aware calls, for formats whose checkpoints hold whole
// tensors: one rank, which is the whole checkpoint.
#include <memory>

#include "mt/checkpoint.h"
#include "mt/checkpoint/reshard.h"
#include "mt/error.h"

namespace mt {

CheckpointState CheckpointFormat::load_rank(const std::filesystem::path& dir, int64_t tp_rank,
                                            int64_t pp_rank) {
    MT_CHECK(tp_rank == 0 && pp_rank == 0, "the ", name(),
             " format keeps whole tensors, not per-rank files: there is no rank (tp ", tp_rank,
             ", pp ", pp_rank, ") in ", dir.string());
    return load(dir);
}

StreamedState CheckpointFormat::load_streamed(const std::filesystem::path& dir) {
    StreamedState s{load(dir), {}};
    auto tensors = std::make_shared<std::vector<Tensor>>();
    for (const auto& [name, t] : s.state.model) tensors->push_back(t.local);
    s.make = [tensors](size_t i) {
        MT_CHECK(i < tensors->size(), "no tensor ", i, " in a checkpoint of ", tensors->size());
        return (*tensors)[i];
    };
    return s;
}

CheckpointArgs CheckpointFormat::load_args(const std::filesystem::path& dir) {
    return load_streamed(dir).state.args;
}

CheckpointState made_state(StreamedState s) {
    for (size_t i = 0; i < s.state.model.size(); ++i) s.state.model[i].second.local = s.make(i);
    return std::move(s.state);
}

void CheckpointFormat::save_ranks(const std::filesystem::path& dir, const CheckpointLayout& layout,
                                  const RankStateFn& rank_state) {
    MT_CHECK(layout.ranks() == 1, "the ", name(),
             " format keeps whole tensors, not per-rank files: save the whole model (layout 1x1) "
             "rather than tensor parallel ",
             layout.tensor_parallel, " x pipeline parallel ", layout.pipeline_parallel);
    save(dir, rank_state(0, 0));
}

void CheckpointFormat::save_streamed(const std::filesystem::path& dir,
                                     const CheckpointLayout& layout,
                                     const StreamedStateFn& rank_state) {
    save_ranks(dir, layout, [&](int64_t tp, int64_t pp) {
        CheckpointState state = made_state(rank_state(tp, pp));
        // A saved tensor writes its whole storage: a view of a larger one is copied.
        for (auto& [name, t] : state.model) t.local = in_own_storage(t.local);
        return state;
    });
}

void CheckpointFormat::save_stage(const std::filesystem::path& dir, const CheckpointLayout&,
                                  int64_t, bool, const std::function<CheckpointState(int64_t)>&,
                                  Communicator&) {
    MT_FAIL("the ", name(), " checkpoint format cannot save ", dir.string(),
            " from pipeline stages");
}

void CheckpointFormat::save_collective(const std::filesystem::path& dir, const CheckpointState&,
                                       Communicator&) {
    MT_FAIL("the ", name(), " checkpoint format cannot save ", dir.string(),
            " from several ranks at once");
}

}  // namespace mt
