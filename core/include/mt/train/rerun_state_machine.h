// Megatron's re-run engine (megatron/core/rerun_state_machine.py, core_v0.19) for
// --rerun-mode validate_results: each training step's results (the micro-batches' losses, each
// gradient bucket's local norm) are validated; a rejected one (NaN, Inf, a spiky loss, or an
// injected error: --error-injection-rate / --error-injection-type) makes every rank run the
// step again from the same state. A result the re-run does not reproduce is a transient error
// (exit 17); a reproduced one asks for a checkpoint and exit 16, so that the step is re-run
// elsewhere (a non-fatal check goes on instead). In --rerun-mode disabled, rejected non-fatal
// results are only reported. The log lines are Megatron's, on the ranks that print them there.
//
// What is not here: the machine's own state in checkpoints (Megatron writes it in torch_dist
// checkpoints for the resumed job's second re-run; a job resumed from our exit-16 checkpoint runs
// the step as a normal step, as Megatron does for its other formats), the tracker file
// (--result-rejected-tracker-filename) and report_determinism_stats.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>

#include "mt/api.h"

namespace mt {
class Communicator;
}

namespace mt::train {

enum class RerunMode : uint8_t { disabled, validate_results };
// What --error-injection-type makes of an injected error: a re-run that does not reproduce it
// (transient), or one that does (persistent, correct_result: both ask for a checkpoint here).
enum class RerunDiagnostic : uint8_t { correct_result, transient_error, persistent_error };

inline constexpr int kExitResumeToDisambiguate = 16;      // EXIT_CODE_RESUME_TO_DISAMBIGUATE
inline constexpr int kExitFailedOnResultValidation = 17;  // EXIT_CODE_FAILED_ON_RESULT_VALIDATION

// Megatron's values; mt::Error naming the flag for others (report_stats: Megatron's own
// RerunMode("report_stats") fails, and its statistics mode is not here).
MT_API RerunMode rerun_mode_from(const std::string& value);
MT_API RerunDiagnostic rerun_diagnostic_from(const std::string& value);

struct RerunConfig {
    RerunMode mode = RerunMode::disabled;
    int64_t error_injection_rate = 0;  // about one in this many validations is rejected; 0: none
    RerunDiagnostic error_injection_type = RerunDiagnostic::transient_error;
};

class MT_API RerunStateMachine {
  public:
    // `world`: every rank of the run (null: one process), which agree on re-runs; `rank` its
    // rank; `seed` the injection's random stream (Megatron's Python random: --seed + 100 x the
    // pipeline rank); `log` prints a line on this rank.
    RerunStateMachine(RerunConfig config, Communicator* world, int rank, uint64_t seed,
                      std::function<void(const std::string&)> log);

    enum class Pass { initial, again, done };
    // Called before each pass of training step `step` (from 1; Megatron's
    // should_run_forward_backward):
    // initial starts a new step (the caller keeps what a re-run restores: the dropout stream,
    // its data position); again re-runs it (the caller restores that and zeroes the grads);
    // done ends the step's passes. Collective over the world in validate_results mode.
    Pass next_pass(int64_t step);

    struct Verdict {
        bool checkpoint = false;  // save a checkpoint of the state before the step
        bool exit = false;        // then stop with exit_code
        int exit_code = 0;
    };
    // After the passes (should_checkpoint_and_exit): exit 17 after a transient error, a
    // checkpoint and exit 16 after a reproduced fatal one; else go on to the optimizer step.
    Verdict verdict();

    // Megatron's validate_result: `reject(result)` true is a failed validation (or an injected
    // one). Within a pass, calls are told apart by their message and order.
    void validate(double result, const std::function<bool(double)>& reject,
                  const std::string& message, double tolerance, bool fatal);
    // Megatron's is_unexpectedly_large: false for the first 100 finite samples of `context`
    // (their largest |value| kept), then |value| >= threshold x that largest.
    bool is_unexpectedly_large(double value, double threshold, const std::string& context);

    RerunMode mode() const { return config_.mode; }

  private:
    enum class State : uint8_t {
        not_running_yet,
        initial_run,
        rerunning_in_place,          // after it: the result was not reproduced (exit 17)
        will_rerun_from_checkpoint,  // reproduced by a fatal check: checkpoint, exit 16
    };
    struct Call {
        std::string message;
        int64_t sequence = 0;
        bool operator==(const Call& o) const {
            return message == o.message && sequence == o.sequence;
        }
    };

    // (a, b) each true on any rank of the world (one all-reduce).
    std::pair<bool, bool> any_rank(bool a, bool b) const;
    bool maybe_inject();
    double maybe_miscompare(double initial, double result);
    // "Rank R, node H, device D, <iteration>N" for this rank and step.
    std::string place(const char* iteration) const;
    // "Rank R, node H, device D, iteration #N: <message>!" (Megatron's log_failure).
    void log_failure(const std::string& message, bool fatal) const;
    void log_rank0(const std::string& level, const std::string& message) const;
    void log_here(const std::string& level, const std::string& message) const;

    RerunConfig config_;
    Communicator* world_;
    int rank_;
    std::string node_;
    std::function<void(const std::string&)> log_;
    std::mt19937_64 injection_rng_;
    std::mt19937_64 injection_rng_at_step_;  // restored for a re-run, as Megatron's RNG state
    std::optional<RerunDiagnostic> injected_;
    State state_ = State::not_running_yet;
    int64_t iteration_ = 0;  // the step being run, from 1
    bool first_step_done_ = false;
    bool logged_enabled_ = false;
    bool rerun_requested_ = false, checkpoint_requested_ = false, continue_requested_ = false;
    std::map<std::string, int64_t> call_counts_;  // per message, in this pass
    std::optional<Call> failed_call_;
    double initial_result_ = 0;
    std::map<std::string, std::pair<int64_t, double>> large_values_;  // context: samples, max
};

}  // namespace mt::train
