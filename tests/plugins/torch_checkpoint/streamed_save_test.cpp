// Streaming saves (CheckpointFormat::save_streamed, megatron-convert's path): the `torch` format
// writes every rank's file at once with each model tensor made only when its record is reached,
// in step across the ranks (each tensor's pieces one after another), and the files are the very
// bytes save_ranks writes from whole states; the default save_streamed (formats that do not
// stream) makes each rank's tensors and gives save_ranks the same.
#include <gtest/gtest.h>

#include <filesystem>
#include <utility>
#include <vector>

#include "mt/checkpoint/checkpoint_args.h"
#include "mt/checkpoint/reshard.h"
#include "mt/registry.h"
#include "test_support.h"
#include "torch_checkpoint.h"
#include "torch_layout.h"

namespace mt::plugins::torch_ckpt {
namespace {

namespace fs = std::filesystem;
using mt::test::TempDir;

// The megatron-core-written TP1 fixture: its args and iteration, and its model split for
// `layout` (rank_tensors of its whole tensors).
struct Source {
    CheckpointState head;
    std::vector<ParameterInfo> params;
    std::vector<Tensor> whole;
};

Source source() {
    TorchCheckpoint format;
    CheckpointState s = format.load_rank(mt::test::fixtures_dir() / "convert" / "tp1", 0, 0);
    ModelArgs args =
        model_args_from_checkpoint(s.args, Registry::global().create_model("gpt")->flags());
    args["tensor-model-parallel-size"] = "1";
    Source out;
    out.params = Registry::global().create_model("gpt")->parameters(args);
    const NamedTensors named = model_tensors(s);
    out.whole = whole_tensors(out.params, {1, 1},
                              [&](int64_t, int64_t) -> const NamedTensors& { return named; });
    s.model.clear();
    s.optimizer.reset();
    s.scheduler.reset();
    s.rng.reset();
    out.head = std::move(s);
    return out;
}

// TorchCheckpoint with the base class's save_streamed (make everything, then save_ranks) at hand.
class TrackingFormat : public TorchCheckpoint {
  public:
    void save_streamed_by_default(const fs::path& dir, const CheckpointLayout& layout,
                                  const StreamedStateFn& fn) {
        CheckpointFormat::save_streamed(dir, layout, fn);
    }
};

TEST(StreamedSave, TorchWritesTheRanksInStepAndTheBytesOfSaveRanks) {
    const Source src = source();
    for (const CheckpointLayout layout : {CheckpointLayout{1, 1}, CheckpointLayout{2, 1},
                                          CheckpointLayout{1, 2}, CheckpointLayout{2, 2}}) {
        TempDir dir;
        TrackingFormat format;
        auto state_of = [&](int64_t tp, int64_t pp) {
            CheckpointState s = src.head;
            set_arg(s.args, "tensor_model_parallel_size", layout.tensor_parallel);
            set_arg(s.args, "pipeline_model_parallel_size", layout.pipeline_parallel);
            for (auto& [name, t] : rank_tensors(src.params, src.whole, layout, tp, pp))
                s.model.emplace_back(name, ShardedTensor::whole(in_own_storage(t)));
            return s;
        };
        format.save_ranks(dir / "ranks", layout, state_of);

        // Made as written: (rank, index) in the order the writer asked.
        std::vector<std::pair<int64_t, size_t>> made;
        auto streamed = [&](int64_t tp, int64_t pp) {
            const CheckpointState whole = state_of(tp, pp);
            StreamedState s{whole, {}};
            for (auto& [name, t] : s.state.model)
                t.local = tensor_placeholder(t.local.shape(), t.local.dtype());
            const int64_t rank = pp * layout.tensor_parallel + tp;
            s.make = [&made, whole, rank](size_t i) {
                made.emplace_back(rank, i);
                return whole.model[i].second.local;
            };
            return s;
        };
        format.save_streamed(dir / "streamed", layout, streamed);
        format.save_streamed_by_default(dir / "default", layout, streamed);

        const std::string iter = "iter_" +
                                 std::string(7 - std::to_string(src.head.iteration).size(), '0') +
                                 std::to_string(src.head.iteration);
        for (int64_t pp = 0; pp < layout.pipeline_parallel; ++pp)
            for (int64_t tp = 0; tp < layout.tensor_parallel; ++tp) {
                const fs::path file = fs::path(iter) / rank_dir_name(layout, tp, pp) / kFileName;
                const std::string want = mt::test::read_file(dir / "ranks" / file);
                EXPECT_TRUE(mt::test::read_file(dir / "streamed" / file) == want) << file;
                EXPECT_TRUE(mt::test::read_file(dir / "default" / file) == want) << file;
            }
        // The streamed save asked for record k of every rank before record k + 1 of any (the
        // first half of `made`; the default's follow).
        std::vector<std::pair<int64_t, size_t>> streamed_order(made.begin(),
                                                               made.end() - made.size() / 2);
        size_t last_index = 0;
        for (size_t c = 0; c < streamed_order.size(); ++c) {
            EXPECT_GE(streamed_order[c].second, last_index) << "call " << c;
            last_index = streamed_order[c].second;
        }
    }
}

}  // namespace
}  // namespace mt::plugins::torch_ckpt
