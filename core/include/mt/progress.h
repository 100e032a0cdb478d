// Progress reporting for long jobs: items done, rate, MB/s and ETA on one redrawn stderr line
// when stderr is a terminal; silent otherwise (logs and CI stay clean). Thread-safe, so worker
// threads can report into one bar; print_line() writes a log line without breaking the bar.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "mt/api.h"

namespace mt {

class MT_API Progress {
  public:
    // total_items < 0 means unknown. `unit` names the items ("docs", "tensors"). With
    // total_bytes > 0 the percentage and ETA follow the bytes instead of the items.
    Progress(std::string label, int64_t total_items, std::string unit, bool enabled,
             int64_t total_bytes = -1);
    // Enabled exactly when stderr is a TTY.
    Progress(std::string label, int64_t total_items, std::string unit, int64_t total_bytes = -1);
    ~Progress();

    // Reports running totals / increments; redraws at most ~10 times a second.
    void update(int64_t items_done, int64_t bytes_done = 0);
    void add(int64_t items, int64_t bytes = 0);
    // Writes `line` and a newline to stderr (always, TTY or not), then redraws the bar.
    void print_line(const std::string& line);
    // Draws the final line and moves to a new line.
    void finish();

    // The line that would be drawn now (exposed for tests).
    std::string render(double elapsed_seconds) const;

  private:
    void draw_locked(bool force);
    double elapsed() const;

    mutable std::mutex mutex_;
    std::string label_, unit_;
    int64_t total_ = -1, total_bytes_ = -1, items_ = 0, bytes_ = 0;
    bool enabled_ = false, finished_ = false, drawn_ = false;
    std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace mt
