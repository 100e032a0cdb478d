// Megatron's training timers (megatron/core/timers.py) for --timing-log-level: named wall-clock
// timers at log level 1 (forward-backward, all-grads-sync, optimizer, ...) or 2
// (forward-compute, backward-compute, the pipeline's send/recv, ...), summed over the log
// interval and printed after the iteration line as Megatron's "(min, max) time across ranks
// (ms):" block.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "mt/api.h"

namespace mt {
class Communicator;
}

namespace mt::train {

class MT_API Timers {
  public:
    using Clock = std::chrono::steady_clock;

    // --timing-log-level (0: none, 1, 2) and --timing-log-option (max, minmax, all).
    explicit Timers(int level = 0, std::string option = "minmax");

    // Whether timers of `level` are kept at all.
    bool active(int level) const { return level > 0 && level <= level_; }
    // Adds the time since `begin` to `name` (a timer of `level`; ignored above the set level).
    void add(const char* name, int level, Clock::time_point begin);

    // Times `name` while alive.
    class Scope {
      public:
        Scope(Timers* timers, const char* name, int level)
            : timers_(timers && timers->active(level) ? timers : nullptr),
              name_(name),
              level_(level),
              begin_(Clock::now()) {}
        ~Scope() {
            if (timers_) timers_->add(name_, level_, begin_);
        }
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;

      private:
        Timers* timers_;
        const char* name_;
        int level_;
        Clock::time_point begin_;
    };

    // Megatron's Timers.log over `names` (in that order; those no rank timed are left out):
    // each timer's milliseconds divided by `normalizer`, the min and max over the ranks of
    // `world` (collective over it; null: this rank alone), then reset. Empty when no timer ran.
    std::string log_string(const std::vector<std::string>& names, double normalizer,
                           Communicator* world);

  private:
    int level_;
    std::string option_;
    std::map<std::string, double, std::less<>> elapsed_ms_;
};

// The timers of Megatron's training_log that megatron-train measures, in Megatron's order.
MT_API const std::vector<std::string>& training_log_timers();

}  // namespace mt::train
