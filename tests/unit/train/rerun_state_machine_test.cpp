// The re-run engine's state machine on its own, one process: the passes of a step and the
// verdict for a result that fails validation and is (not) reproduced, fatal or not; the first
// step left unvalidated; error injection; disabled mode; the spiky-value rule; and Megatron's
// log lines (megatron/core/rerun_state_machine.py, core_v0.19).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "mt/train/rerun_state_machine.h"
#include "test_support.h"

namespace mt::train {
namespace {

using Pass = RerunStateMachine::Pass;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const char* kLossNaN = "found NaN in local forward loss calculation";

struct Machine {
    std::vector<std::string> lines;
    RerunStateMachine m;
    explicit Machine(RerunConfig c)
        : m(c, nullptr, 0, 1234, [this](const std::string& l) { lines.push_back(l); }) {}
    bool logged(const std::string& text) const {
        for (const auto& l : lines)
            if (l.find(text) != std::string::npos) return true;
        return false;
    }
    std::string all() const {
        std::string out;
        for (const auto& l : lines) out += l + "\n";
        return out;
    }
    void check_nan(double loss) {
        m.validate(
            loss, [](double v) { return std::isnan(v); }, kLossNaN, 0.0, true);
    }
    // One step whose passes validate `results` in turn (one value per pass); the passes run.
    int step(int64_t number, const std::vector<double>& results) {
        int passes = 0;
        for (Pass p = m.next_pass(number); p != Pass::done; p = m.next_pass(number)) {
            EXPECT_EQ(p, passes == 0 ? Pass::initial : Pass::again);
            check_nan(results.at(size_t(passes)));
            ++passes;
        }
        return passes;
    }
};

RerunConfig validating(int64_t rate = 0, RerunDiagnostic type = RerunDiagnostic::transient_error) {
    return RerunConfig{RerunMode::validate_results, rate, type};
}

TEST(RerunStateMachine, GoodResultsRunEachStepOnce) {
    Machine s(validating());
    for (int64_t i = 1; i <= 3; ++i) {
        EXPECT_EQ(s.step(i, {1.5}), 1);
        EXPECT_FALSE(s.m.verdict().exit);
    }
    EXPECT_TRUE(s.logged("WARNING:megatron.core.rerun_state_machine:Result validation enabled"))
        << s.all();
    EXPECT_EQ(s.lines.size(), 1u) << s.all();
}

// A NaN the re-run repeats: a checkpoint of the state before the step, then exit 16 (Megatron
// re-runs it on another GPU from there). The process's first step is not validated.
TEST(RerunStateMachine, AReproducedFatalResultAsksForACheckpointAndExit16) {
    Machine s(validating());
    EXPECT_EQ(s.step(1, {kNaN}), 1);
    EXPECT_FALSE(s.m.verdict().exit);
    EXPECT_EQ(s.step(2, {kNaN, kNaN}), 2);
    const auto v = s.m.verdict();
    EXPECT_TRUE(v.checkpoint);
    EXPECT_TRUE(v.exit);
    EXPECT_EQ(v.exit_code, kExitResumeToDisambiguate);
    for (const char* line :
         {"ERROR:megatron.core.rerun_state_machine:Unexpected result nan on rank 0 at iteration "
          "#2 invocation #1 (message='found NaN in local forward loss calculation')",
          "WARNING:megatron.core.rerun_state_machine:Need to rerun step to check reproducibility "
          "of initial result",
          ", device 0, iteration #2: First rerun: unexpected result is reproducible within the "
          "tolerance (nan = nan). Need to rerun on a different GPU to verify correctness.!",
          "WARNING:megatron.core.rerun_state_machine:Saving a checkpoint and exiting now. Please "
          "resume the job from the checkpoint to rerun the last iteration and establish a "
          "diagnostic"})
        EXPECT_TRUE(s.logged(line)) << line << "\n" << s.all();
}

TEST(RerunStateMachine, AResultTheRerunDoesNotRepeatIsATransientErrorExit17) {
    Machine s(validating());
    s.step(1, {1.0});
    s.m.verdict();
    EXPECT_EQ(s.step(2, {kNaN, 2.5}), 2);
    const auto v = s.m.verdict();
    EXPECT_FALSE(v.checkpoint);
    EXPECT_TRUE(v.exit);
    EXPECT_EQ(v.exit_code, kExitFailedOnResultValidation);
    EXPECT_TRUE(
        s.logged("iteration #2: First rerun: unexpected result is not reproducible within "
                 "the tolerance (2.5 != nan)!"))
        << s.all();
    EXPECT_TRUE(s.logged("ERROR:megatron.core.rerun_state_machine:Rank 0, node ")) << s.all();
    EXPECT_TRUE(s.logged("iteration #2: Possible transient error!!")) << s.all();
    EXPECT_TRUE(s.logged("Exiting now. The job can be resumed from a previous checkpoint"))
        << s.all();
}

// Non-fatal checks (spiky loss, large grads) re-run and go on with the re-run's results.
TEST(RerunStateMachine, ANonFatalFailureReRunsAndGoesOn) {
    Machine s(validating());
    auto spiky = [&](double loss) {
        s.m.validate(
            loss, [&](double v) { return s.m.is_unexpectedly_large(v, 10, "loss"); }, "Spiky loss",
            0.0, false);
    };
    int64_t step = 0;
    for (; step < 101; ++step) {  // 100 losses set the scale (the first step is not checked)
        for (Pass p = s.m.next_pass(step + 1); p != Pass::done; p = s.m.next_pass(step + 1))
            spiky(2.0 + double(step % 3));
        EXPECT_FALSE(s.m.verdict().exit);
    }
    EXPECT_TRUE(s.logged("WARNING:megatron.core.rerun_state_machine:Max value for loss: 4.0"))
        << s.all();
    int passes = 0;
    for (Pass p = s.m.next_pass(step + 1); p != Pass::done; p = s.m.next_pass(step + 1), ++passes)
        spiky(100.0);  // >= 10 x 4.0, and again in the re-run
    EXPECT_EQ(passes, 2);
    EXPECT_FALSE(s.m.verdict().exit);
    EXPECT_TRUE(s.logged("WARNING:megatron.core.rerun_state_machine:Rank 0, node ")) << s.all();
    EXPECT_TRUE(s.logged("Continuing normal execution because failed validation was not fatal"))
        << s.all();
}

// --error-injection-rate 1: the first validation of the second step fails on purpose; its type
// decides what the re-run shows.
TEST(RerunStateMachine, InjectedErrorsFollowTheirType) {
    for (auto [type, name, code] : {std::tuple{RerunDiagnostic::transient_error, "Transient error",
                                               kExitFailedOnResultValidation},
                                    std::tuple{RerunDiagnostic::persistent_error,
                                               "Persistent error", kExitResumeToDisambiguate},
                                    std::tuple{RerunDiagnostic::correct_result, "Expected result",
                                               kExitResumeToDisambiguate}}) {
        Machine s(validating(1, type));
        s.step(1, {1.0});
        EXPECT_FALSE(s.m.verdict().exit);
        EXPECT_EQ(s.step(2, {1.0, 1.0}), 2) << name;
        EXPECT_EQ(s.m.verdict().exit_code, code) << name;
        EXPECT_TRUE(s.logged(std::string("Injecting error type ") + name)) << s.all();
        EXPECT_TRUE(s.logged("Unexpected result 1.0 on rank 0 at iteration #2")) << s.all();
    }
}

TEST(RerunStateMachine, DisabledModeStopsOnFatalAndWarnsOnOtherFailures) {
    Machine s(RerunConfig{});
    EXPECT_EQ(s.step(1, {1.0}), 1);
    s.m.verdict();
    ASSERT_EQ(s.m.next_pass(2), Pass::initial);
    const std::string e = mt::test::error_of([&] { s.check_nan(kNaN); });
    EXPECT_NE(e.find("iteration 2: Unexpected result nan (message='found NaN in local forward "
                     "loss calculation')"),
              std::string::npos)
        << e;
    s.m.validate(
        7.0, [](double) { return true; }, "Spiky loss", 0.0, false);
    EXPECT_TRUE(s.logged("WARNING:megatron.core.rerun_state_machine:Rank 0, node ")) << s.all();
    EXPECT_TRUE(s.logged("Unexpected result 7.0 (message='Spiky loss')")) << s.all();
    EXPECT_FALSE(s.logged("Result validation enabled")) << s.all();
}

TEST(RerunStateMachine, FlagValuesAreMegatrons) {
    EXPECT_EQ(rerun_mode_from("validate_results"), RerunMode::validate_results);
    EXPECT_EQ(rerun_mode_from("disabled"), RerunMode::disabled);
    EXPECT_EQ(rerun_diagnostic_from("persistent_error"), RerunDiagnostic::persistent_error);
    EXPECT_NE(mt::test::error_of([] {
                  rerun_mode_from("report_stats");
              }).find("--rerun-mode report_stats: not supported yet"),
              std::string::npos);
    EXPECT_NE(mt::test::error_of([] {
                  rerun_mode_from("sometimes");
              }).find("Megatron's choices are disabled, validate_results and report_stats"),
              std::string::npos);
    EXPECT_NE(mt::test::error_of([] {
                  rerun_diagnostic_from("flaky");
              }).find("--error-injection-type flaky"),
              std::string::npos);
}

}  // namespace
}  // namespace mt::train
