#include "mt/train/timers.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "mt/communicator.h"
#include "mt/error.h"
#include "mt/parallel/collectives.h"

namespace mt::train {

Timers::Timers(int level, std::string option) : level_(level), option_(std::move(option)) {
    MT_CHECK(level >= 0 && level <= 2, "--timing-log-level ", level, ": choose 0, 1 or 2");
    MT_CHECK(option_ == "max" || option_ == "minmax" || option_ == "all", "--timing-log-option ",
             option_, ": choose max, minmax or all");
}

void Timers::add(const char* name, int level, Clock::time_point begin) {
    if (!active(level)) return;
    elapsed_ms_[name] += std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
}

std::string Timers::log_string(const std::vector<std::string>& names, double normalizer,
                               Communicator* world) {
    if (level_ == 0) return {};
    // Every rank's times (0: not timed there) side by side, summed over the ranks: each rank
    // fills its own row.
    const size_t n = names.size();
    const int ranks = world ? world->size() : 1, rank = world ? world->rank() : 0;
    std::vector<double> all(size_t(ranks) * n, 0.0);
    for (size_t i = 0; i < n; ++i)
        if (auto it = elapsed_ms_.find(names[i]); it != elapsed_ms_.end())
            all[size_t(rank) * n + i] = it->second / normalizer;
    elapsed_ms_.clear();
    if (ranks > 1) parallel::all_reduce_values(*world, all, ReduceOp::sum);

    auto padded = [](const std::string& name) {
        std::string s = name + " ";
        if (s.size() < 48) s.append(48 - s.size(), '.');
        return s;
    };
    std::string out;
    char line[160];
    for (size_t i = 0; i < n; ++i) {
        // Megatron's min and max over the ranks that timed it.
        double lo = std::numeric_limits<double>::infinity(), hi = 0;
        for (int r = 0; r < ranks; ++r)
            if (const double t = all[size_t(r) * n + i]; t > 0) {
                lo = std::min(lo, t);
                hi = std::max(hi, t);
            }
        if (hi <= 0) continue;
        if (option_ == "all") {
            out += "\n  " + names[i] + ":";
            for (int r = 0; r < ranks; ++r)
                if (const double t = all[size_t(r) * n + i]; t > 0) {
                    std::snprintf(line, sizeof line, "\n     rank %2d: %.2f", r, t);
                    out += line;
                }
        } else if (option_ == "max") {
            std::snprintf(line, sizeof line, "\n    %s: %.2f", padded(names[i]).c_str(), hi);
            out += line;
        } else {
            std::snprintf(line, sizeof line, "\n    %s: (%.2f, %.2f)", padded(names[i]).c_str(), lo,
                          hi);
            out += line;
        }
    }
    if (out.empty()) return {};
    const char* title = option_ == "all"   ? "times across ranks (ms):"
                        : option_ == "max" ? "max time across ranks (ms):"
                                           : "(min, max) time across ranks (ms):";
    return title + out;
}

const std::vector<std::string>& training_log_timers() {
    static const std::vector<std::string> names = {
        "forward-backward",
        "forward-compute",
        "backward-compute",
        "batch-generator",
        "forward-recv",
        "forward-send",
        "backward-recv",
        "backward-send",
        "layernorm-grads-all-reduce",
        "embedding-grads-all-reduce",
        "all-grads-sync",
        "params-all-gather",
        "optimizer-clip-main-grad",
        "optimizer-count-zeros",
        "optimizer-inner-step",
        "optimizer",
    };
    return names;
}

}  // namespace mt::train
