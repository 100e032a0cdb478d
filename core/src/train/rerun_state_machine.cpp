#include "mt/train/rerun_state_machine.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

#include "mt/data/dataset_description.h"
#include "mt/error.h"
#include "mt/parallel/collectives.h"

namespace mt::train {

namespace {

constexpr const char* kLogger = "megatron.core.rerun_state_machine";

std::string host_name() {
    char name[256] = {};
    if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
    return name;
}

// The process's device: its local rank on the node (Megatron's torch.cuda.current_device()).
int local_device() {
    for (const char* var : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"})
        if (const char* v = std::getenv(var)) return std::atoi(v);
    return 0;
}

// Megatron's _compare_floats: 0 for equal values (NaN equal to NaN), inf when one is NaN or Inf
// and the other is not, else the relative difference.
double compare_floats(double a, double b) {
    if (a == b || (std::isnan(a) && std::isnan(b))) return 0.0;
    if (std::isnan(a) != std::isnan(b) || std::isinf(a) != std::isinf(b))
        return std::numeric_limits<double>::infinity();
    return std::fabs((a - b) / (a + b) * 2);
}

const char* error_name(RerunDiagnostic d) {
    switch (d) {
        case RerunDiagnostic::correct_result:
            return "Expected result";
        case RerunDiagnostic::transient_error:
            return "Transient error";
        case RerunDiagnostic::persistent_error:
            return "Persistent error";
    }
    return "";
}

// A result as Python's repr prints a float ("nan", "inf", "2.5").
std::string number(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return data::python_float_repr(v);
}

}  // namespace

RerunMode rerun_mode_from(const std::string& value) {
    if (value == "disabled") return RerunMode::disabled;
    if (value == "validate_results") return RerunMode::validate_results;
    MT_CHECK(value != "report_stats",
             "--rerun-mode report_stats: not supported yet: the re-run engine's determinism "
             "statistics (Megatron's own RerunMode('report_stats') is refused too)");
    MT_FAIL("--rerun-mode ", value.substr(0, 100),
            ": Megatron's choices are disabled, validate_results and report_stats");
}

RerunDiagnostic rerun_diagnostic_from(const std::string& value) {
    if (value == "correct_result") return RerunDiagnostic::correct_result;
    if (value == "transient_error") return RerunDiagnostic::transient_error;
    if (value == "persistent_error") return RerunDiagnostic::persistent_error;
    MT_FAIL("--error-injection-type ", value.substr(0, 100),
            ": Megatron's choices are correct_result, transient_error and persistent_error");
}

RerunStateMachine::RerunStateMachine(RerunConfig config, Communicator* world, int rank,
                                     uint64_t seed, std::function<void(const std::string&)> log)
    : config_(config),
      world_(world),
      rank_(rank),
      node_(host_name()),
      log_(std::move(log)),
      injection_rng_(seed),
      injection_rng_at_step_(seed) {
    MT_CHECK(config.error_injection_rate >= 0, "--error-injection-rate must be >= 0, got ",
             config.error_injection_rate);
}

std::pair<bool, bool> RerunStateMachine::any_rank(bool a, bool b) const {
    if (!world_) return {a, b};
    std::vector<double> v{a ? 1.0 : 0.0, b ? 1.0 : 0.0};
    parallel::all_reduce_values(*world_, v, ReduceOp::sum);
    return {v[0] > 0, v[1] > 0};
}

void RerunStateMachine::log_here(const std::string& level, const std::string& message) const {
    log_(level + ":" + kLogger + ":" + message);
}

void RerunStateMachine::log_rank0(const std::string& level, const std::string& message) const {
    if (rank_ == 0) log_here(level, message);
}

std::string RerunStateMachine::place(const char* iteration) const {
    return "Rank " + std::to_string(rank_) + ", node " + node_ + ", device " +
           std::to_string(local_device()) + ", " + iteration + std::to_string(iteration_);
}

void RerunStateMachine::log_failure(const std::string& message, bool fatal) const {
    log_here(fatal ? "ERROR" : "WARNING", place("iteration #") + ": " + message + "!");
}

RerunStateMachine::Pass RerunStateMachine::next_pass(int64_t step) {
    call_counts_.clear();
    switch (state_) {
        case State::not_running_yet:
            iteration_ = step;
            injection_rng_at_step_ = injection_rng_;
            rerun_requested_ = checkpoint_requested_ = continue_requested_ = false;
            // (Megatron keeps an older step's failed call here; a new step starts clean.)
            failed_call_.reset();
            state_ = State::initial_run;
            return Pass::initial;
        case State::initial_run:
            if (config_.mode == RerunMode::disabled || !any_rank(rerun_requested_, false).first) {
                state_ = State::not_running_yet;
                return Pass::done;
            }
            log_rank0("WARNING", "Need to rerun step to check reproducibility of initial result");
            injection_rng_ = injection_rng_at_step_;
            state_ = State::rerunning_in_place;
            return Pass::again;
        case State::rerunning_in_place: {
            const auto [go_on, checkpoint] = any_rank(continue_requested_, checkpoint_requested_);
            if (go_on) {  // the re-run's gradients are the step's
                log_rank0("WARNING",
                          "Continuing normal execution because failed validation was not fatal");
                state_ = State::not_running_yet;
                return Pass::done;
            }
            if (checkpoint) state_ = State::will_rerun_from_checkpoint;
            injection_rng_ = injection_rng_at_step_;
            return Pass::done;
        }
        case State::will_rerun_from_checkpoint:
            break;
    }
    MT_FAIL("the re-run engine: a pass after the step asked to stop");
}

RerunStateMachine::Verdict RerunStateMachine::verdict() {
    first_step_done_ = true;
    if (state_ == State::rerunning_in_place) {
        log_rank0("WARNING", "Exiting now. The job can be resumed from a previous checkpoint");
        return {false, true, kExitFailedOnResultValidation};
    }
    if (state_ == State::will_rerun_from_checkpoint) {
        log_rank0("WARNING",
                  "Saving a checkpoint and exiting now. Please resume the job from the checkpoint "
                  "to rerun the last iteration and establish a diagnostic");
        return {true, true, kExitResumeToDisambiguate};
    }
    return {};
}

bool RerunStateMachine::maybe_inject() {
    const int64_t rate = config_.error_injection_rate;
    if (rate <= 0 || injected_) return false;
    const int64_t draw = std::uniform_int_distribution<int64_t>(0, rate - 1)(injection_rng_);
    if ((draw + rank_) % rate != 0) return false;
    injected_ = config_.error_injection_type;
    log_here("WARNING", std::string("Injecting error type ") + error_name(*injected_));
    return true;
}

double RerunStateMachine::maybe_miscompare(double initial, double result) {
    if (!injected_) return compare_floats(initial, result);
    if (*injected_ == RerunDiagnostic::transient_error) {
        injected_.reset();
        return std::numeric_limits<double>::infinity();
    }
    // Persistent errors and correct results reproduce on the same device; Megatron keeps the
    // injection for the re-run on another one.
    return 0.0;
}

void RerunStateMachine::validate(double result, const std::function<bool(double)>& reject,
                                 const std::string& message, double tolerance, bool fatal) {
    if (config_.mode == RerunMode::disabled) {
        if (!reject(result)) return;
        const std::string line = place("iteration ") + ": Unexpected result " + number(result) +
                                 " (message='" + message + "')";
        MT_CHECK(!fatal, line);
        log_here("WARNING", line);
        return;
    }
    MT_CHECK(state_ == State::initial_run || state_ == State::rerunning_in_place,
             "validate_result should not be called outside of the forward-backward pass");
    const Call call{message, ++call_counts_[message]};
    if (!logged_enabled_) {
        logged_enabled_ = true;
        log_rank0("WARNING", "Result validation enabled");
    }
    if (state_ == State::initial_run) {
        // One failed validation per rank and step; the process's first step is not validated.
        if (rerun_requested_ || !first_step_done_) return;
        if (!maybe_inject() && !reject(result)) return;
        failed_call_ = call;
        initial_result_ = result;
        rerun_requested_ = true;
        log_here("ERROR", "Unexpected result " + number(result) + " on rank " +
                              std::to_string(rank_) + " at iteration #" +
                              std::to_string(iteration_) + " invocation #" +
                              std::to_string(call.sequence) + " (message='" + message + "')");
        return;
    }
    if (!failed_call_ || !(call == *failed_call_)) return;
    const double comparison = maybe_miscompare(initial_result_, result);
    if (comparison > tolerance) {
        if (!fatal) continue_requested_ = true;
        log_failure("First rerun: unexpected result is not reproducible within the tolerance (" +
                        number(result) + " != " + number(initial_result_) + ")",
                    fatal);
        log_failure("Possible transient error!", fatal);
        return;
    }
    if (fatal)
        checkpoint_requested_ = true;
    else
        continue_requested_ = true;
    log_failure("First rerun: unexpected result is reproducible within the tolerance (" +
                    number(result) + " = " + number(initial_result_) +
                    "). Need to rerun on a different GPU to verify correctness.",
                fatal);
}

bool RerunStateMachine::is_unexpectedly_large(double value, double threshold,
                                              const std::string& context) {
    constexpr int64_t kSamples = 100;
    value = std::fabs(value);
    if (!std::isfinite(value)) return false;
    auto& [count, max] = large_values_[context];
    if (count < kSamples) {
        ++count;
        max = std::max(max, value);
        if (count == kSamples) log_here("WARNING", "Max value for " + context + ": " + number(max));
        return false;
    }
    return value >= max * threshold;
}

}  // namespace mt::train
