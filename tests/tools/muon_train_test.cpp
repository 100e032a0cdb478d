// Megatron core_v0.19's Muon (--optimizer muon) in megatron-train against runs of Megatron
// itself (tests/fixtures/muon/make_fixture.py: pretrain_gpt.py, iteration 1's torch_dist
// checkpoint with Muon's momentum buffers and Adam's moments): resumed, megatron-train logs
// Megatron's next losses, grad norms and evaluations; what it saves holds Megatron's keys and
// resumes to its own uninterrupted run, also from Megatron's layer-wise distributed optimizer
// (--use-distributed-optimizer) at two data-parallel ranks. (That Megatron resumes ours:
// tests/fixtures/muon/check_megatron_resumes_our_muon.sh, run by hand with Megatron.)
#include <gtest/gtest.h>

#include <filesystem>

#include "megatron_run_fixture.h"
#include "mpiexec_launch.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;

std::string q(const fs::path& p) {
    return mt::test::shell_quote(p);
}

struct MuonResume : mt::test::MegatronRunFixture {
    MuonResume() : MegatronRunFixture("muon") {}
};

// Iteration 1's checkpoint of Megatron's fp32 run (plain keys) and of its bf16 run with the
// layer-wise distributed optimizer (keys behind "chained_0." and "chained_1."): iterations 2
// and 3 and their evaluations are Megatron's (fp32 to its printed digits; bf16 to what
// torch's and our bf16 roundings leave).
TEST_F(MuonResume, ContinuesMegatronsRuns) {
    struct Case {
        const char* key;
        double tolerance;
    };
    for (const Case c : {Case{"gpt_muon_fp32", 2e-6}, Case{"gpt_muon_distopt_bf16", 3e-4}}) {
        const auto r = mt::test::run_command(command(c.key, work / c.key) + " --load " +
                                             q(root / c.key) + " 2>&1");
        ASSERT_EQ(r.exit_code, 0) << c.key << "\n" << r.output;
        expect_continues(c.key, r.output, c.tolerance);
    }
}

// megatron-train's own Muon checkpoints: the fp32 run stopped and saved at iteration 2 resumes
// to the iteration-3 loss of the uninterrupted run; the layer-wise run on two data-parallel
// ranks (gradients all-reduced, each parameter updated by one rank) logs the one-process
// losses and its checkpoint resumes in one process. Resuming with Adam is refused, naming both.
TEST_F(MuonResume, OwnCheckpointsResume) {
    if (!mt::test::mpiexec_available()) GTEST_SKIP() << "no mpiexec";
    auto losses = [](const std::string& cmd, size_t n) {
        const auto r = mt::test::run_command(cmd + " 2>&1");
        EXPECT_EQ(r.exit_code, 0) << r.output;
        const auto out = mt::test::logged_values(r.output, "lm loss");
        EXPECT_EQ(out.size(), n) << r.output;
        return out.size() == n ? out : std::vector<double>(n, 0.0);
    };
    const std::string megatrons = " --load " + q(root / "gpt_muon_fp32");
    const auto whole = losses(command("gpt_muon_fp32", work / "whole") + megatrons, 2);
    losses(command("gpt_muon_fp32", work / "stopped") + megatrons + " --exit-interval 2", 1);
    const auto resumed =
        losses(command("gpt_muon_fp32", work / "resumed") + " --load " + q(work / "stopped"), 1);
    EXPECT_NEAR(resumed[0], whole[1], 1e-6 * whole[1]);

    // From scratch, 8 samples a step (dropout is off in these flags).
    const std::string layer_wise = " --global-batch-size 8 --train-iters 3";
    const auto single = losses(command("gpt_muon_distopt_bf16", work / "single") + layer_wise, 3);
    const auto dp2 =
        losses(mt::test::mpiexec_prefix(2) + command("gpt_muon_distopt_bf16", work / "dp2") +
                   layer_wise + " --exit-interval 2",
               2);
    for (size_t i = 0; i < 2; ++i)
        EXPECT_NEAR(dp2[i], single[i], 1e-5 * single[i]) << "iteration " << i + 1;
    const auto continued = losses(command("gpt_muon_distopt_bf16", work / "continued") +
                                      layer_wise + " --load " + q(work / "dp2"),
                                  1);
    EXPECT_NEAR(continued[0], single[2], 1e-5 * single[2]);

    const auto adam = mt::test::run_command(command("gpt_muon_fp32", work / "adam") + megatrons +
                                            " --optimizer adam 2>&1");
    EXPECT_NE(adam.exit_code, 0);
    EXPECT_NE(adam.output.find("the checkpoint's optimizer state is for muon but this run uses "
                               "--optimizer adam"),
              std::string::npos)
        << adam.output;
}

}  // namespace
