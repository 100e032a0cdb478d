// core_v0.19's muP (--use-mup) against runs of Megatron itself (tests/fixtures/mup/make_fixture.py:
// pretrain_gpt.py with --use-mup --mup-base-hidden-size 8 (width multiplier 2)
// --mup-embedding-mult 2 --mup-base-head-dim 2, iteration 1's checkpoint in torch_dist):
// resumed, megatron-train logs Megatron's next losses, grad norms and evaluations, which follow
// from the embeddings' and logits' multipliers, the attention scale sqrt(2) / kv_channels and
// the optimizer's muP groups (Adam: the hidden matrices at lr / 2 and eps / 2; SGD: the embeddings,
// norms and biases at lr x 2; with --decoupled-lr the word embedding keeps its own).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "megatron_run_fixture.h"
#include "mpiexec_launch.h"
#include "mt/io/torch_file.h"
#include "test_support.h"
#include "torch_dist_checkpoint.h"

namespace {

struct MupResume : mt::test::MegatronRunFixture {
    MupResume() : MegatronRunFixture("mup") {}
};

TEST_F(MupResume, ContinuesMegatronsRuns) {
    for (const char* key :
         {"mup_adam", "mup_adam_untied", "mup_sgd", "mup_adam_decoupled", "adam_decoupled"}) {
        const auto r = mt::test::run_command(command(key, work / key) + " --load " +
                                             mt::test::shell_quote(root / key) + " 2>&1");
        ASSERT_EQ(r.exit_code, 0) << key << "\n" << r.output;
        expect_continues(key, r.output, 2e-6);
    }
}

// A plain core_v0.19 run (no muP) with --decoupled-lr, resumed from Megatron 0.19's checkpoint,
// saves its param groups as core_v0.19 keeps them (which pairs saved groups with its own by
// their overrides, is_decoupled_lr among them): Megatron's order (no override first, then by
// override), the decoupled group keyed by its max and min lr alone (is_decoupled_lr False,
// default_config False).
TEST_F(MupResume, PlainCoreV019RunSavesCoreV019ParamGroups) {
    const auto r = mt::test::run_command(command("adam_decoupled", work / "groups") + " --load " +
                                         mt::test::shell_quote(root / "adam_decoupled") +
                                         " --exit-interval 2 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const mt::io::PyValue common =
        mt::io::load_torch_file(work / "groups" / "iter_0000002" / "common.pt");
    const auto& saved = common["optimizer"]["param_groups"].items();
    const simdjson::dom::array want = expected["variants"]["adam_decoupled"]["param_groups"];
    ASSERT_EQ(saved.size(), want.size());
    size_t k = 0;
    for (auto g : want) {
        const mt::io::PyValue& s = saved[k++];
        EXPECT_EQ(s["is_decoupled_lr"].as_bool(), bool(g["is_decoupled_lr"])) << k;
        EXPECT_EQ(s["default_config"].as_bool(), bool(g["default_config"])) << k;
        EXPECT_EQ(s["wd_mult"].as_double(), double(g["wd_mult"])) << k;
        EXPECT_EQ(s["max_lr"].as_double(), double(g["max_lr"])) << k;
        EXPECT_EQ(s["min_lr"].as_double(), double(g["min_lr"])) << k;
    }
}

// The muP groups under the distributed optimizer (its flat pieces keep their parameter's class):
// two data-parallel ranks train as one process does.
TEST_F(MupResume, DistributedOptimizerGivesTheOneProcessLosses) {
    if (!mt::test::mpiexec_available()) GTEST_SKIP() << "no mpiexec";
    const auto one = mt::test::run_command(command("mup_adam", work / "one") + " 2>&1");
    ASSERT_EQ(one.exit_code, 0) << one.output;
    const auto two =
        mt::test::run_command(mt::test::mpiexec_prefix(2) + command("mup_adam", work / "two") +
                              " --use-distributed-optimizer 2>&1");
    ASSERT_EQ(two.exit_code, 0) << two.output;
    const auto want = mt::test::logged_values(one.output, "lm loss");
    ASSERT_EQ(want.size(), 3u) << one.output;
    EXPECT_EQ(mt::test::logged_values(two.output, "lm loss"), want) << two.output;
}

// A fresh model's weights (saved after iteration 1, whose step runs at lr 0 in the warmup) are
// drawn at the std Megatron's muP init gives each (mup_init_std: embeddings 0.2, hidden matrices
// 0.2 / sqrt(2), output projections 0.2 / (sqrt(4) sqrt(2))), to sampling error.
TEST_F(MupResume, InitialisesAtMegatronsStds) {
    const auto r =
        mt::test::run_command(command("mup_adam", work / "init") + " --exit-interval 1" + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    mt::plugins::torch_dist::TorchDistCheckpoint format;
    const mt::CheckpointState state = format.load(work / "init");
    size_t checked = 0;
    for (auto p : expected["mup_init_std"]["params"].get_array()) {
        const double want = double(p["expected_std"]);
        if (want == 0) continue;
        const std::string name{std::string_view(p["name"])};
        for (const auto& [key, t] : state.model) {
            if (key != name) continue;
            const mt::Tensor v = t.local.contiguous();
            const float* x = v.data<float>();
            double sum = 0, squares = 0;
            for (int64_t i = 0; i < v.numel(); ++i) {
                sum += x[i];
                squares += double(x[i]) * x[i];
            }
            const double n = double(v.numel()), mean = sum / n;
            const double std = std::sqrt(squares / n - mean * mean);
            EXPECT_NEAR(std, want, 0.15 * want) << name;
            ++checked;
        }
    }
    EXPECT_EQ(checked, 10u);
}

}  // namespace
