#include "mt/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "mt/error.h"

namespace mt {

namespace {
std::string format_duration(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "?";
    auto s = static_cast<int64_t>(seconds + 0.5);
    char buf[32];
    if (s >= 3600)
        std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", (long long)(s / 3600),
                      (long long)(s / 60 % 60), (long long)(s % 60));
    else
        std::snprintf(buf, sizeof buf, "%lld:%02lld", (long long)(s / 60), (long long)(s % 60));
    return buf;
}

std::string fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}
}  // namespace

Progress::Progress(std::string label, int64_t total_items, std::string unit, bool enabled,
                   int64_t total_bytes)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total_items),
      total_bytes_(total_bytes),
      enabled_(enabled),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::Progress(std::string label, int64_t total_items, std::string unit, int64_t total_bytes)
    : Progress(std::move(label), total_items, std::move(unit), isatty(STDERR_FILENO) == 1,
               total_bytes) {}

Progress::~Progress() {
    if (enabled_ && drawn_ && !finished_) std::fputc('\n', stderr);
}

double Progress::elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string Progress::render(double elapsed) const {
    double rate = elapsed > 0 ? items_ / elapsed : 0.0;
    std::string line = str(label_, ": ", items_);
    if (total_ >= 0) line += str("/", total_);
    // Fraction done and its ETA, by bytes when their total is known, else by items.
    double done = -1;
    if (total_bytes_ > 0)
        done = double(bytes_) / total_bytes_;
    else if (total_ > 0)
        done = double(items_) / total_;
    else if (total_ == 0)
        done = 1;
    if (done >= 0) line += str(" (", fixed(100.0 * done, 1), "%)");
    line += str(" ", unit_, ", ", fixed(rate, 1), " ", unit_, "/s");
    if (bytes_ > 0 && elapsed > 0)
        line += str(", ", fixed(bytes_ / elapsed / 1048576.0, 2), " MB/s");
    line += str(", elapsed ", format_duration(elapsed));
    if (done > 0 && done < 1) line += str(", ETA ", format_duration(elapsed * (1 - done) / done));
    return line;
}

void Progress::draw_locked(bool force) {
    if (!enabled_ || finished_) return;
    auto now = std::chrono::steady_clock::now();
    if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    drawn_ = true;
    std::fprintf(stderr, "\r\033[K%s", render(elapsed()).c_str());
    std::fflush(stderr);
}

void Progress::update(int64_t items_done, int64_t bytes_done) {
    std::lock_guard<std::mutex> lock(mutex_);
    items_ = items_done;
    bytes_ = bytes_done;
    draw_locked(false);
}

void Progress::add(int64_t items, int64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    items_ += items;
    bytes_ += bytes;
    draw_locked(false);
}

void Progress::print_line(const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (enabled_ && drawn_ && !finished_) std::fputs("\r\033[K", stderr);
    std::fprintf(stderr, "%s\n", line.c_str());
    draw_locked(true);
}

void Progress::finish() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) return;
    draw_locked(true);
    finished_ = true;
    if (enabled_) std::fputc('\n', stderr);
    std::fflush(stderr);
}

}  // namespace mt
