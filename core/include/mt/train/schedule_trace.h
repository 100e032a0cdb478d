// What the pipeline schedule did on this rank, for chrome://tracing or Perfetto (the Trace Event
// Format): one complete event per forward, backward and stage exchange, named by its
// micro-batch (and model chunk with virtual stages), so the warm-up, steady state, cool-down
// and the pipeline bubble show.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "mt/api.h"

namespace mt::train {

class MT_API ScheduleTrace {
  public:
    using Clock = std::chrono::steady_clock;

    ScheduleTrace() : start_(Clock::now()) {}
    void set_iteration(int64_t iteration) { iteration_ = iteration; }
    // `phase`: "forward", "backward", "send" (posting a send), "wait" (for a receive),
    // "forward-backward" (the whole schedule); `micro_batch`: -1 for none; `chunk`: the model
    // chunk, -1 without virtual stages.
    void record(const char* phase, int64_t micro_batch, int chunk, Clock::time_point begin,
                Clock::time_point end);

    // {"traceEvents": [...]} with this rank's events (pid: the pipeline stage, tid: the rank).
    std::string json(int rank, int stage) const;
    // Writes json() to `file` through a temporary name.
    void write(const std::filesystem::path& file, int rank, int stage) const;

  private:
    struct Event {
        const char* phase;
        int64_t iteration, micro_batch;
        int chunk;
        double begin_us, duration_us;
    };
    Clock::time_point start_;
    int64_t iteration_ = 0;
    std::vector<Event> events_;
};

}  // namespace mt::train
