// Megatron core_v0.19's Muon (--optimizer muon) in megatron-train against runs of Megatron
// itself (tests/fixtures/muon/make_fixture.py: pretrain_gpt.py, iteration 1's torch_dist
// checkpoint with Muon's momentum buffers and Adam's moments): resumed, megatron-train logs
// Megatron's next losses, grad norms and evaluations; what it saves holds Megatron's keys and
// resumes to its own uninterrupted run, also from Megatron's layer-wise distributed optimizer
// (--use-distributed-optimizer) at two data-parallel ranks. (That Megatron resumes ours:
// tests/fixtures/muon/check_megatron_resumes_our_muon.sh, run by hand with Megatron.)
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <optional>

#include "mpiexec_launch.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using mt::test::TempDir;

std::string q(const fs::path& p) {
    return mt::test::shell_quote(p);
}

struct MuonResume : ::testing::Test {
    std::optional<fs::path> data;
    const fs::path root = mt::test::fixtures_dir() / "muon";
    simdjson::dom::parser parser;
    simdjson::dom::element expected;
    TempDir work;

    void SetUp() override {
        data = mt::test::test_data("megatron_indexed");
        if (!data) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: no data of Megatron's Muon runs";
        expected = parser.load((root / "expected.json").string());
    }
    // megatron-train with the flags of Megatron's run `key`, saving to `save`.
    std::string command(const char* key, const fs::path& save) const {
        std::string command = mt::test::tool_path("megatron-train").string();
        for (auto word : expected["variants"][key]["flags"].get_array()) {
            std::string w{std::string_view(word)};
            for (const auto& [from, to] :
                 {std::pair<std::string, std::string>{"<data>", data->string()},
                  {"<cache>", (work / "cache").string()},
                  {"<save>", save.string()},
                  {"tests/fixtures", mt::test::fixtures_dir().string()}})
                if (w.rfind(from, 0) == 0) w = to + w.substr(from.size());
            command += " " + q(w);
        }
        return command;
    }
    std::vector<double> run_values(const char* key, const char* field) const {
        std::vector<double> out;
        for (auto it : expected["variants"][key]["iterations"].get_array())
            out.push_back(double(it[field]));
        return out;
    }
    std::vector<double> evaluations(const char* key) const {
        std::vector<double> out;
        for (auto e : expected["variants"][key]["evaluations"].get_array())
            out.push_back(double(e["lm loss"]));
        return out;
    }
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
        const auto losses = mt::test::logged_values(r.output, "lm loss");
        const auto norms = mt::test::logged_values(r.output, "grad norm");
        const auto theirs = run_values(c.key, "lm_loss");
        const auto their_norms = run_values(c.key, "grad_norm");
        ASSERT_EQ(losses.size(), 2u) << r.output;
        ASSERT_EQ(norms.size(), 2u) << r.output;
        for (size_t i = 0; i < 2; ++i) {
            EXPECT_NEAR(losses[i], theirs[i + 1], c.tolerance * theirs[i + 1])
                << c.key << " iteration " << i + 2;
            EXPECT_NEAR(norms[i], their_norms[i + 1], 2e-3) << c.key << " iteration " << i + 2;
        }
        // Evaluations after iterations 2 and 3, then on the validation and test sets.
        const auto ours = mt::test::logged_values(r.output, "lm loss value");
        const auto want = evaluations(c.key);
        ASSERT_EQ(ours.size(), 4u) << r.output;
        ASSERT_EQ(want.size(), 5u);
        for (size_t i = 0; i < 4; ++i)
            EXPECT_NEAR(ours[i], want[i + 1], c.tolerance * want[i + 1])
                << c.key << " evaluation " << i + 1;
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
