// Progress reporting for long jobs: items done, rate, bytes/s and ETA on one redrawn stderr line
// when stderr is a terminal; silent otherwise (logs and CI stay clean).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "mt/api.h"

namespace mt {

class MT_API Progress {
  public:
    // total_items < 0 means unknown (no ETA). `unit` names the items ("docs", "tensors").
    Progress(std::string label, int64_t total_items, std::string unit, bool enabled);
    // Enabled exactly when stderr is a TTY.
    Progress(std::string label, int64_t total_items, std::string unit);
    ~Progress();

    // Reports the running totals; redraws at most ~10 times a second.
    void update(int64_t items_done, int64_t bytes_done = 0);
    // Draws the final line and moves to a new line.
    void finish();

    // The line that would be drawn now (exposed for tests).
    std::string render(double elapsed_seconds) const;

  private:
    std::string label_, unit_;
    int64_t total_ = -1, items_ = 0, bytes_ = 0;
    bool enabled_ = false, finished_ = false;
    std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace mt
