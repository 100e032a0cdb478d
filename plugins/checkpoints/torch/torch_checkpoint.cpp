#include "torch_checkpoint.h"

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "distrib_optim.h"
#include "expert_files.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/communicator.h"
#include "mt/error.h"
#include "mt/io/torch_file.h"
#include "mt/parallel/collectives.h"
#include "torch_layout.h"
#include "torch_state.h"

namespace mt::plugins::torch_ckpt {

namespace {

std::string latest_name(const LatestCheckpoint& latest) {
    return latest.release ? std::string("release") : std::to_string(latest.iteration);
}

LatestCheckpoint need_tracker(const fs::path& dir) {
    auto latest = read_tracker(dir);
    MT_CHECK(latest.has_value(), "no checkpoint in ", dir.string(), ": ", kCheckpointTrackerName,
             " is missing");
    return *latest;
}

// The layout of the latest checkpoint; an iteration directory without rank directories is an
// error naming the file a one-rank checkpoint would have.
CheckpointLayout need_layout(const fs::path& dir, const LatestCheckpoint& latest) {
    auto layout = read_layout(iteration_dir(dir, latest));
    MT_CHECK(layout.has_value(), dir.string(), "/", kCheckpointTrackerName, " names ",
             latest_name(latest), " but ", checkpoint_file(dir, latest, {}, 0, 0).string(),
             " does not exist");
    // mp_rank_TT_NNN: pipeline stages, or the expert ranks of a run without stages (its args
    // say which).
    if (layout->pipeline_parallel > 1 && layout->expert_parallel == 1) {
        // The pickle alone: no tensor is read.
        const fs::path file = checkpoint_file(dir, latest, *layout, 0, 0);
        const CheckpointArgs args = args_from_py(io::load_torch_structure(file), file.string());
        if (int_arg(args, "expert_model_parallel_size").value_or(1) > 1 &&
            int_arg(args, "pipeline_model_parallel_size").value_or(1) == 1) {
            layout->expert_parallel = layout->pipeline_parallel;
            layout->pipeline_parallel = 1;
        }
    }
    return *layout;
}

// The distributed optimizer's moments from distrib_optim.pt; without the file (or with one not
// read yet) the model still loads, and resuming with the optimizer reports why.
void read_parameter_state(const fs::path& file, CheckpointState& state) {
    try {
        MT_CHECK(fs::exists(file), "the checkpoint was saved with the distributed optimizer but ",
                 file.string(), " does not exist");
        parameter_state_from_py(io::load_torch_file(file), state, file.string());
    } catch (const Error& e) {
        state.optimizer.reset();
        state.optimizer_not_loaded = e.what();
    }
}

}  // namespace

bool TorchCheckpoint::detect(const std::filesystem::path& dir) const {
    auto latest = read_tracker(dir);
    if (!latest) return false;
    // An iteration directory without mp_rank_* is another format's (torch_dist); a missing one
    // is a broken torch checkpoint, which load() reports.
    const fs::path iter = iteration_dir(dir, *latest);
    if (!fs::exists(iter)) return true;
    for (const auto& entry : fs::directory_iterator(iter))
        if (entry.path().filename().string().rfind("mp_rank_", 0) == 0) return true;
    return false;
}

void TorchCheckpoint::save(const std::filesystem::path& dir, const CheckpointState& state) {
    save_ranks(dir, {}, [&](int64_t, int64_t) { return state; });
}

CheckpointState load_single_rank(CheckpointFormat& format, const std::filesystem::path& dir,
                                 const char* kind) {
    const CheckpointLayout l = format.layout(dir);
    MT_CHECK(l.ranks() == 1, dir.string(), " holds a tensor-parallel ", l.tensor_parallel,
             " x pipeline-parallel ", l.pipeline_parallel, " ", kind,
             "checkpoint, and this run has one rank: make a one-rank copy with megatron-convert "
             "--target-tensor-parallel-size 1 --target-pipeline-parallel-size 1");
    return format.load_rank(dir, 0, 0);
}

CheckpointState TorchCheckpoint::load(const std::filesystem::path& dir) {
    return load_single_rank(*this, dir, "");
}

CheckpointArgs TorchCheckpoint::load_args(const std::filesystem::path& dir) {
    const LatestCheckpoint latest = need_tracker(dir);
    const CheckpointLayout l = need_layout(dir, latest);
    const fs::path file = checkpoint_file(dir, latest, l, 0, 0, 0);
    return args_from_py(io::load_torch_structure(file), file.string());
}

CheckpointLayout TorchCheckpoint::layout(const std::filesystem::path& dir) {
    const LatestCheckpoint latest = need_tracker(dir);
    return need_layout(dir, latest);
}

CheckpointState TorchCheckpoint::load_rank(const std::filesystem::path& dir, int64_t tp_rank,
                                           int64_t pp_rank) {
    const LatestCheckpoint latest = need_tracker(dir);
    const CheckpointLayout l = need_layout(dir, latest);
    MT_CHECK(tp_rank >= 0 && tp_rank < l.tensor_parallel && pp_rank >= 0 &&
                 pp_rank < l.pipeline_parallel,
             "no rank (tensor ", tp_rank, ", pipeline ", pp_rank, ") in the tensor-parallel ",
             l.tensor_parallel, " x pipeline-parallel ", l.pipeline_parallel, " checkpoint ",
             dir.string());
    std::vector<CheckpointState> experts;  // one per expert-parallel rank's file
    for (int64_t ep = 0; ep < l.expert_parallel; ++ep) {
        const fs::path file = checkpoint_file(dir, latest, l, tp_rank, pp_rank, ep);
        MT_CHECK(fs::exists(file), dir.string(), "/", kCheckpointTrackerName, " names ",
                 latest_name(latest), " but ", file.string(), " does not exist");
        io::PyValue root;
        try {
            root = io::load_torch_file(file);
        } catch (const Error& e) {
            MT_FAIL("cannot read checkpoint ", file.string(), ": ", e.what());
        }
        CheckpointState state = from_py(root, file.string());
        if (state.optimizer && saved_by_distributed_optimizer(state.args))
            read_parameter_state(file.parent_path() / kDistribOptimName, state);
        experts.push_back(std::move(state));
    }
    CheckpointState state =
        experts.size() == 1 ? std::move(experts[0]) : join_expert_ranks(std::move(experts));
    if (latest.release) state.iteration = 0;
    return state;
}

namespace {

// The rank whose Megatron RNG states file (tp, pp, ep) keeps: the one of data-parallel rank 0
// that writes it.
MegatronRngRank file_rng_rank(const CheckpointArgs& args, int64_t tp, int64_t pp, int64_t ep) {
    const int64_t etp = int_arg(args, "expert_tensor_parallel_size")
                            .value_or(int_arg(args, "tensor_model_parallel_size").value_or(1));
    MegatronRngRank r;
    r.pipeline = pp;
    r.tensor = tp;
    r.expert = ep;
    r.expert_tensor = etp > 0 ? tp % etp : 0;
    return r;
}

// Rank (tp, pp)'s files of `layout` in the iteration directory being written: one per
// expert-parallel rank, each with its experts.
void write_rank(const fs::path& iter_dir, const CheckpointLayout& layout, int64_t tp, int64_t pp,
                const CheckpointState& state) {
    for (int64_t ep = 0; ep < layout.expert_parallel; ++ep) {
        const CheckpointState part = layout.expert_parallel > 1
                                         ? expert_rank_state(state, layout.expert_parallel, ep)
                                         : state;
        const fs::path rank_dir = iter_dir / rank_dir_name(layout, tp, pp, ep);
        fs::create_directories(rank_dir);
        const MegatronRngRank rng_rank = file_rng_rank(part.args, tp, pp, ep);
        io::save_torch_file(rank_dir / kFileName, to_py(part, &rng_rank));
        if (part.optimizer && saved_by_distributed_optimizer(part.args))
            io::save_torch_file(rank_dir / kDistribOptimName, parameter_state_to_py(part, ep == 0));
    }
}

}  // namespace

void TorchCheckpoint::save_ranks(const std::filesystem::path& dir, const CheckpointLayout& layout,
                                 const RankStateFn& rank_state) {
    MT_CHECK(layout.tensor_parallel > 0 && layout.pipeline_parallel > 0,
             "invalid checkpoint layout ", layout.tensor_parallel, " x ", layout.pipeline_parallel);
    // Iteration 0 (a converted release checkpoint) is saved as Megatron's release directory.
    CheckpointState first = rank_state(0, 0);
    const int64_t iteration = first.iteration;
    write_checkpoint(dir, iteration, [&](const fs::path& iter_dir) {
        for (int64_t pp = 0; pp < layout.pipeline_parallel; ++pp)
            for (int64_t tp = 0; tp < layout.tensor_parallel; ++tp) {
                CheckpointState state = tp == 0 && pp == 0 ? std::move(first) : rank_state(tp, pp);
                MT_CHECK(state.iteration == iteration, "rank (tensor ", tp, ", pipeline ", pp,
                         ") is at iteration ", state.iteration, ", rank (0, 0) at ", iteration);
                write_rank(iter_dir, layout, tp, pp, state);
            }
    });
}

void TorchCheckpoint::save_stage(const std::filesystem::path& dir, const CheckpointLayout& layout,
                                 int64_t stage, bool writer,
                                 const std::function<CheckpointState(int64_t)>& rank_state,
                                 Communicator& world) {
    const bool root = world.rank() == 0;
    MT_CHECK(!root || (writer && stage == 0), "rank 0 writes pipeline stage 0's files");
    // Rank 0 makes the temporary iteration directory; each stage's writer fills in its ranks.
    std::optional<CheckpointState> first;
    if (root) first = rank_state(0);
    const fs::path tmp = parallel::broadcast_bytes(
        world, root ? begin_write(dir, first->iteration).string() : std::string(), 0);
    int64_t iteration = 0;
    if (writer)
        for (int64_t tp = 0; tp < layout.tensor_parallel; ++tp) {
            CheckpointState state = tp == 0 && first ? std::move(*first) : rank_state(tp);
            iteration = state.iteration;
            write_rank(tmp, layout, tp, stage, state);
        }
    world.barrier();
    if (root) finish_write(dir, iteration);
    world.barrier();  // nobody loads before the checkpoint is in place
}

void TorchCheckpoint::save_streamed(const std::filesystem::path& dir,
                                    const CheckpointLayout& layout,
                                    const StreamedStateFn& rank_state) {
    MT_CHECK(layout.tensor_parallel > 0 && layout.pipeline_parallel > 0,
             "invalid checkpoint layout ", layout.tensor_parallel, " x ", layout.pipeline_parallel);
    // One rank's file being written: its pickle (placeholders for the model tensors) is out,
    // its storage records follow, each model tensor made as its record comes.
    struct Rank {
        StreamedState streamed;
        std::unique_ptr<io::TorchArchiveWriter> archive;
        std::map<const Storage*, size_t> model_index;  // placeholder storage -> model entry
    };
    std::vector<StreamedState> states;  // (pp, tp, ep) in order
    for (int64_t pp = 0; pp < layout.pipeline_parallel; ++pp)
        for (int64_t tp = 0; tp < layout.tensor_parallel; ++tp) {
            StreamedState whole = rank_state(tp, pp);
            for (int64_t ep = 0; ep < layout.expert_parallel; ++ep)
                states.push_back(layout.expert_parallel > 1
                                     ? expert_rank_state(whole, layout.expert_parallel, ep)
                                     : std::move(whole));
            const CheckpointState& state = states.back().state;
            MT_CHECK(state.iteration == states.front().state.iteration, "rank (tensor ", tp,
                     ", pipeline ", pp, ") is at iteration ", state.iteration, ", rank (0, 0) at ",
                     states.front().state.iteration);
            MT_CHECK(!state.optimizer, "a streamed save carries no optimizer state (rank (tensor ",
                     tp, ", pipeline ", pp, ") has one)");
        }
    const int64_t iteration = states.front().state.iteration;
    write_checkpoint(dir, iteration, [&](const fs::path& iter_dir) {
        std::vector<Rank> ranks;
        size_t records = 0;
        const int64_t ep_size = layout.expert_parallel;
        for (int64_t pp = 0; pp < layout.pipeline_parallel; ++pp)
            for (int64_t tp = 0; tp < layout.tensor_parallel; ++tp)
                for (int64_t ep = 0; ep < ep_size; ++ep) {
                    Rank r;
                    r.streamed = std::move(
                        states[size_t((pp * layout.tensor_parallel + tp) * ep_size + ep)]);
                    const fs::path rank_dir = iter_dir / rank_dir_name(layout, tp, pp, ep);
                    fs::create_directories(rank_dir);
                    const CheckpointState& state = r.streamed.state;
                    for (size_t i = 0; i < state.model.size(); ++i)
                        r.model_index.emplace(state.model[i].second.local.storage().get(), i);
                    const MegatronRngRank rng_rank = file_rng_rank(state.args, tp, pp, ep);
                    r.archive = std::make_unique<io::TorchArchiveWriter>(
                        rank_dir / kFileName, to_py(state, &rng_rank));
                    records = std::max(records, r.archive->storages().size());
                    ranks.push_back(std::move(r));
                }
        // Record k of every rank, then k + 1: the ranks' pieces of one tensor come together.
        for (size_t k = 0; k < records; ++k)
            for (Rank& r : ranks) {
                if (k >= r.archive->storages().size()) continue;
                const io::PickledStorage& s = r.archive->storages()[k];
                auto it = r.model_index.find(s.storage.get());
                if (it == r.model_index.end()) {  // not a model tensor: its own bytes
                    r.archive->write_storage(s.storage->data, size_t(s.bytes));
                    continue;
                }
                const Tensor& placeholder = r.streamed.state.model[it->second].second.local;
                const Tensor t = r.streamed.make(it->second);
                MT_CHECK(t.shape() == placeholder.shape() && t.dtype() == placeholder.dtype() &&
                             t.is_contiguous() && t.nbytes() == s.bytes,
                         "'", r.streamed.state.model[it->second].first, "' was declared ",
                         placeholder.describe(), " but made ", t.describe());
                r.archive->write_storage(t.raw_data(), size_t(t.nbytes()));
            }
        for (Rank& r : ranks) r.archive->finish();
    });
}

}  // namespace mt::plugins::torch_ckpt
