// Megatron core_v0.19's distributed optimizer in torch_dist against runs of Megatron itself
// (tests/fixtures/distopt_v019/make_fixture.py: pretrain_gpt.py with --use-distributed-optimizer,
// iteration 1's checkpoint in both of core_v0.19's layouts: dp_reshardable, its default, the
// gradient buffers' buckets; fully_reshardable, with --dist-ckpt-optim-fully-reshardable, each
// parameter's state in its shape): resumed, megatron-train logs Megatron's next losses, grad
// norms and evaluations, in one process and on the ranks a run saved from.
// (That Megatron resumes ours: tests/fixtures/distopt_v019/check_megatron_resumes_our_distopt.sh,
// run by hand with Megatron.)
#include <gtest/gtest.h>

#include <filesystem>

#include "megatron_run_fixture.h"
#include "mpiexec_launch.h"
#include "test_support.h"

namespace {

std::string q(const std::filesystem::path& p) {
    return mt::test::shell_quote(p);
}

struct DistributedOptimizerResume : mt::test::MegatronRunFixture {
    DistributedOptimizerResume() : MegatronRunFixture("distopt_v019") {}
};

// fp32 to Megatron's printed digits; bf16 to what torch's and our bf16 roundings leave.
TEST_F(DistributedOptimizerResume, ContinuesMegatronsRunsInOneProcess) {
    struct Case {
        const char* key;
        double tolerance;
    };
    for (const Case c : {Case{"dpr_bf16", 3e-4}, Case{"dpr_fp32_dp2", 2e-6}, Case{"fr_fp32", 2e-6},
                         Case{"fr_bf16", 3e-4}}) {
        const auto r = mt::test::run_command(command(c.key, work / c.key) + " --load " +
                                             q(root / c.key) + " 2>&1");
        ASSERT_EQ(r.exit_code, 0) << c.key << "\n" << r.output;
        expect_continues(c.key, r.output, c.tolerance);
    }
}

// Megatron's runs on two ranks, continued on two: each rank takes its share of the buckets as
// the run's layout places them: at DP2 (the cut inside the word embeddings), TP2, PP2 (tied
// embeddings in buckets of their own) and EP2 (the experts' chained optimizer), and MoE's
// experts in the dense buffer at EP1 in one process; the tiny runs' NullTokenizer and mock data
// are core_v0.19's, as the checkpoints' args say.
TEST_F(DistributedOptimizerResume, ContinuesMegatronsParallelRunsThere) {
    if (!mt::test::mpiexec_available()) GTEST_SKIP() << "no mpiexec";
    for (const char* key : {"dpr_fp32_dp2", "dpr_tp2", "fr_tp2", "dpr_pp2", "fr_pp2", "dpr_moe",
                            "dpr_moe_ep2", "fr_moe_ep2"}) {
        const std::string name = key;
        const std::string launcher = name == "dpr_moe" ? "" : mt::test::mpiexec_prefix(2);
        const auto r = mt::test::run_command(launcher + command(key, work / key) + " --load " +
                                             q(root / key) + " 2>&1");
        ASSERT_EQ(r.exit_code, 0) << key << "\n" << r.output;
        expect_continues(key, r.output, 2e-6);
    }
}

}  // namespace
