#include "mt/train/timers.h"

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
    // Each rank's times (0: not timed here), then min and max over the ranks that timed.
    std::vector<double> mine(names.size(), 0.0);
    for (size_t i = 0; i < names.size(); ++i)
        if (auto it = elapsed_ms_.find(names[i]); it != elapsed_ms_.end()) mine[i] = it->second;
    elapsed_ms_.clear();
    std::vector<double> lo(mine), hi(mine);
    for (double& v : lo)
        if (v <= 0) v = std::numeric_limits<double>::infinity();
    std::vector<std::vector<double>> per_rank;
    if (world && world->size() > 1) {
        parallel::all_reduce_values(*world, lo, ReduceOp::min);
        parallel::all_reduce_values(*world, hi, ReduceOp::max);
        if (option_ == "all") {
            per_rank.assign(size_t(world->size()), std::vector<double>(names.size(), 0.0));
            std::vector<double> flat(size_t(world->size()) * names.size(), 0.0);
            for (size_t i = 0; i < names.size(); ++i)
                flat[size_t(world->rank()) * names.size() + i] = mine[i];
            parallel::all_reduce_values(*world, flat, ReduceOp::sum);
            for (size_t r = 0; r < per_rank.size(); ++r)
                for (size_t i = 0; i < names.size(); ++i)
                    per_rank[r][i] = flat[r * names.size() + i];
        }
    } else if (option_ == "all") {
        per_rank.push_back(mine);
    }
    std::string out;
    char line[160];
    auto padded = [](const std::string& name) {
        std::string s = name + " ";
        if (s.size() < 48) s.append(48 - s.size(), '.');
        return s;
    };
    if (option_ == "all") {
        out = "times across ranks (ms):";
        for (size_t i = 0; i < names.size(); ++i) {
            if (hi[i] <= 0) continue;
            out += "\n  " + names[i] + ":";
            for (size_t r = 0; r < per_rank.size(); ++r) {
                if (per_rank[r][i] <= 0) continue;
                std::snprintf(line, sizeof line, "\n     rank %2zu: %.2f", r,
                              per_rank[r][i] / normalizer);
                out += line;
            }
        }
        return hi == std::vector<double>(names.size(), 0.0) ? std::string() : out;
    }
    out = option_ == "max" ? "max time across ranks (ms):" : "(min, max) time across ranks (ms):";
    bool any = false;
    for (size_t i = 0; i < names.size(); ++i) {
        if (hi[i] <= 0) continue;
        any = true;
        if (option_ == "max")
            std::snprintf(line, sizeof line, "\n    %s: %.2f", padded(names[i]).c_str(),
                          hi[i] / normalizer);
        else
            std::snprintf(line, sizeof line, "\n    %s: (%.2f, %.2f)", padded(names[i]).c_str(),
                          lo[i] / normalizer, hi[i] / normalizer);
        out += line;
    }
    return any ? out : std::string();
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
        "forward-send-forward-recv",
        "forward-send-backward-recv",
        "backward-send-forward-recv",
        "backward-send-backward-recv",
        "forward-backward-send-forward-backward-recv",
        "layernorm-grads-all-reduce",
        "embedding-grads-all-reduce",
        "all-grads-sync",
        "params-all-gather",
        "optimizer-copy-to-main-grad",
        "optimizer-unscale-and-check-inf",
        "optimizer-clip-main-grad",
        "optimizer-count-zeros",
        "optimizer-inner-step",
        "optimizer-copy-main-to-model-params",
        "optimizer",
    };
    return names;
}

}  // namespace mt::train
