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
}  // namespace

Progress::Progress(std::string label, int64_t total_items, std::string unit, bool enabled)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total_items),
      enabled_(enabled),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::Progress(std::string label, int64_t total_items, std::string unit)
    : Progress(std::move(label), total_items, std::move(unit), isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() {
    if (enabled_ && !finished_) std::fputc('\n', stderr);
}

std::string Progress::render(double elapsed) const {
    double rate = elapsed > 0 ? items_ / elapsed : 0.0;
    std::string line = str(label_, ": ", items_);
    if (total_ >= 0) {
        double pct = total_ > 0 ? 100.0 * items_ / total_ : 100.0;
        char buf[16];
        std::snprintf(buf, sizeof buf, "%.1f", pct);
        line += str("/", total_, " (", buf, "%)");
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", rate);
    line += str(" ", unit_, ", ", buf, " ", unit_, "/s");
    if (bytes_ > 0 && elapsed > 0) {
        std::snprintf(buf, sizeof buf, "%.2f", bytes_ / elapsed / 1048576.0);
        line += str(", ", buf, " MB/s");
    }
    line += str(", elapsed ", format_duration(elapsed));
    if (total_ > 0 && rate > 0 && items_ < total_)
        line += str(", ETA ", format_duration((total_ - items_) / rate));
    return line;
}

void Progress::update(int64_t items_done, int64_t bytes_done) {
    items_ = items_done;
    bytes_ = bytes_done;
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    if (now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    std::fprintf(stderr, "\r\033[K%s",
                 render(std::chrono::duration<double>(now - start_).count()).c_str());
    std::fflush(stderr);
}

void Progress::finish() {
    if (finished_) return;
    finished_ = true;
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    std::fprintf(stderr, "\r\033[K%s\n",
                 render(std::chrono::duration<double>(now - start_).count()).c_str());
    std::fflush(stderr);
}

}  // namespace mt
