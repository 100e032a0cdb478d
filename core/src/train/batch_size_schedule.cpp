// The global batch size of each iteration: constant, Megatron's --rampup-batch-size or core_v0.19's
// --step-batch-size-schedule, and the iterations --train-samples takes under each.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "mt/error.h"
#include "mt/train/trainer.h"

namespace mt::train {

namespace {

// Megatron's _parse_numeric_value: int(float(text) * multiplier) after an optional K, M, B or T.
int64_t schedule_number(std::string text, const std::string& entry) {
    const auto not_space = [](unsigned char c) { return !std::isspace(c); };
    text.erase(text.begin(), std::find_if(text.begin(), text.end(), not_space));
    text.erase(std::find_if(text.rbegin(), text.rend(), not_space).base(), text.end());
    const int unit = text.empty() ? 0 : std::toupper(static_cast<unsigned char>(text.back()));
    const double multiplier = unit == 'T'   ? 1e12
                              : unit == 'B' ? 1e9
                              : unit == 'M' ? 1e6
                              : unit == 'K' ? 1e3
                                            : 1;
    if (multiplier != 1) text.pop_back();
    char* end = nullptr;
    const double value = text.empty() ? NAN : std::strtod(text.c_str(), &end);
    MT_CHECK(!text.empty() && end == text.c_str() + text.size() && std::isfinite(value) &&
                 std::fabs(value * multiplier) < 9.2e18,
             "--step-batch-size-schedule: entry \"", entry.substr(0, 100),
             "\" is not THRESHOLD:BATCH_SIZE with numbers (K, M, B or T may follow)");
    return int64_t(value * multiplier);  // truncated toward zero, as Python's int()
}

// Python's floor division (a negative threshold stays below zero).
int64_t floor_div(int64_t a, int64_t b) {
    const int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

}  // namespace

std::vector<BatchStep> parse_step_batch_size_schedule(const std::string& text, int64_t seq_length) {
    MT_CHECK(seq_length > 0, "--step-batch-size-schedule needs a positive --seq-length, got ",
             seq_length);
    std::string spaced = text;
    std::replace(spaced.begin(), spaced.end(), ',', ' ');
    std::vector<BatchStep> steps;
    size_t at = 0;
    while (true) {
        at = spaced.find_first_not_of(" \t\n\r\f\v", at);
        if (at == std::string::npos) break;
        const size_t stop = std::min(spaced.find_first_of(" \t\n\r\f\v", at), spaced.size());
        const std::string entry = spaced.substr(at, stop - at);
        at = stop;
        const size_t colon = entry.find(':');
        MT_CHECK(colon != std::string::npos, "--step-batch-size-schedule: invalid entry \"",
                 entry.substr(0, 100), "\": expected THRESHOLD:BATCH_SIZE");
        steps.push_back({floor_div(schedule_number(entry.substr(0, colon), entry), seq_length),
                         schedule_number(entry.substr(colon + 1), entry)});
    }
    // Megatron sorts the entries by threshold, then checks them.
    std::stable_sort(steps.begin(), steps.end(), [](const BatchStep& a, const BatchStep& b) {
        return a.from_samples < b.from_samples;
    });
    MT_CHECK(!steps.empty(), "--step-batch-size-schedule: the schedule has no entry");
    MT_CHECK(steps.front().from_samples == 0,
             "--step-batch-size-schedule: the first threshold must be 0 (in samples of ",
             seq_length, " tokens), got ", steps.front().from_samples);
    for (size_t i = 1; i < steps.size(); ++i)
        MT_CHECK(steps[i].from_samples > steps[i - 1].from_samples,
                 "--step-batch-size-schedule: thresholds must increase (in samples of ", seq_length,
                 " tokens), got ", steps[i - 1].from_samples, " before ", steps[i].from_samples);
    for (const BatchStep& step : steps)
        MT_CHECK(step.global_batch_size > 0,
                 "--step-batch-size-schedule: batch sizes must be positive, got ",
                 step.global_batch_size);
    return steps;
}

int64_t current_global_batch_size(const TrainerOptions& o, int64_t consumed) {
    if (!o.batch_steps.empty()) {
        int64_t batch = o.batch_steps.front().global_batch_size;
        for (const BatchStep& step : o.batch_steps) {
            if (consumed < step.from_samples) break;
            batch = step.global_batch_size;
        }
        return batch;
    }
    if (!o.rampup) return o.global_batch_size;
    const BatchRampup& r = *o.rampup;
    MT_CHECK(r.start > 0 && r.increment > 0 && r.samples >= 0, "--rampup-batch-size: start (",
             r.start, ") and increment (", r.increment,
             ") must be positive and the ramp-up samples (", r.samples, ") not negative");
    const int64_t diff = o.global_batch_size - r.start;
    MT_CHECK(diff > 0 && diff % r.increment == 0, "--rampup-batch-size: the global batch size (",
             o.global_batch_size, ") minus the start (", r.start,
             ") must be a positive multiple of the increment (", r.increment, ")");
    if (consumed > r.samples) return o.global_batch_size;
    // Megatron: rampup_samples_per_increment = samples / num_increments (a float).
    const double per_increment = double(r.samples) / double(diff / r.increment);
    const int64_t steps = int64_t(double(consumed) / per_increment);
    return r.start + steps * r.increment;
}

int64_t train_iterations_for_samples(const TrainerOptions& o, int64_t train_samples) {
    int64_t iterations = 0, consumed = 0;
    if (!o.batch_steps.empty()) {
        for (; consumed < train_samples; ++iterations)
            consumed += current_global_batch_size(o, consumed);
        return iterations;
    }
    if (!o.rampup) return train_samples / o.global_batch_size;
    while (consumed <= o.rampup->samples && consumed <= train_samples) {
        consumed += current_global_batch_size(o, consumed);
        ++iterations;
    }
    if (train_samples > consumed) iterations += (train_samples - consumed) / o.global_batch_size;
    return iterations;
}

}  // namespace mt::train
