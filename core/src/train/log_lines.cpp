#include "mt/train/log_lines.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace mt::train {

namespace {
// printf into a std::string; every format here is one of Python's ("{:8d}", "{:.6E}", ...).
template <class... Args>
std::string fmt(const char* format, Args... args) {
    int n = std::snprintf(nullptr, 0, format, args...);
    std::string out(size_t(n), '\0');
    std::snprintf(out.data(), out.size() + 1, format, args...);
    return out;
}

// A float as Python's format(value, ".3f") writes it: printf's "-nan" is Python's "nan".
std::string python_fixed(const char* format, double value) {
    return std::isnan(value) ? std::string("nan") : fmt(format, value);
}
}  // namespace

std::string now_timestamp() {
    std::time_t t = std::time(nullptr);
    std::tm local{};
    localtime_r(&t, &local);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &local);
    return buf;
}

std::string format_iteration_line(const IterationLog& l) {
    std::string s = " [" + l.timestamp + "]";
    s += fmt(" iteration %8lld/%8lld |", (long long)l.iteration, (long long)l.train_iters);
    s += fmt(" consumed samples: %12lld |", (long long)l.consumed_samples);
    if (l.skipped_samples > 0) s += fmt(" skipped samples: %12lld |", (long long)l.skipped_samples);
    s += fmt(" elapsed time per iteration (ms): %.1f |", l.elapsed_ms_per_iteration);
    if (l.throughput) s += fmt(" throughput per GPU (TFLOP/s/GPU): %.1f |", *l.throughput);
    s += fmt(" learning rate: %.6E |", l.learning_rate);
    if (l.decoupled_learning_rate)
        s += fmt(" decoupled learning rate: %.6E |", *l.decoupled_learning_rate);
    s += fmt(" global batch size: %5lld |", (long long)l.global_batch_size);
    for (const auto& [name, value] : l.losses)
        if (value > 0.0) s += " " + name + fmt(": %.6E |", value);
    s += fmt(" loss scale: %.1f |", l.loss_scale);
    if (l.grad_norm) s += " grad norm: " + python_fixed("%.3f", *l.grad_norm) + " |";
    // Megatron prints the count as the float count_zeros_fp32 returns ("12.0").
    if (l.num_zeros) s += fmt(" num zeros: %.1f |", double(*l.num_zeros));
    if (l.params_norm) s += " params norm: " + python_fixed("%.3f", *l.params_norm) + " |";
    if (l.curriculum_seqlen)
        s += fmt(" curriculum seqlen: %5lld |", (long long)*l.curriculum_seqlen);
    s += fmt(" number of skipped iterations: %3lld |", (long long)l.skipped_iterations);
    s += fmt(" number of nan iterations: %3lld |", (long long)l.nan_iterations);
    return s;
}

std::string format_evaluation_block(const std::string& prefix,
                                    const std::vector<std::pair<std::string, double>>& losses) {
    std::string line = " validation loss at " + prefix + " | ";
    for (const auto& [name, loss] : losses) {
        line += name + fmt(" value: %.6E | ", loss);
        line += name + fmt(" PPL: %.6E | ", std::exp(std::min(20.0, loss)));
    }
    std::string rule(line.size() + 1, '-');
    return rule + "\n" + line + "\n" + rule;
}

std::string format_saved_checkpoint(int64_t iteration, const std::string& dir, int tp_rank, int tp,
                                    int pp_rank, int pp) {
    return fmt("  successfully saved checkpoint from iteration %7lld to %s [ t %d/%d, p %d/%d ]",
               (long long)iteration, dir.c_str(), tp_rank + 1, tp, pp_rank + 1, pp);
}

}  // namespace mt::train
