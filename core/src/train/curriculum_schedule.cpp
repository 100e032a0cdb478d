#include "mt/train/curriculum_schedule.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace mt::train {

CurriculumSchedule::CurriculumSchedule(CurriculumConfig config)
    : config_(std::move(config)), current_(config_.min_difficulty) {}

int64_t CurriculumSchedule::difficulty_at(int64_t step) const {
    const CurriculumConfig& c = config_;
    if (c.schedule == CurriculumConfig::Schedule::fixed_discrete) {
        for (size_t i = 0; i < c.max_step.size(); ++i)
            if (step <= c.max_step[i]) return c.difficulty[i];
        return c.difficulty.back();
    }
    // DeepSpeed's __fixed_root_get_difficulty, in its double arithmetic (fixed_linear: degree 1).
    const double degree = c.schedule == CurriculumConfig::Schedule::fixed_root ? c.root_degree : 1;
    const double fraction = std::pow(double(step) / double(c.total_curriculum_step), 1.0 / degree);
    int64_t next = int64_t(std::floor(fraction * double(c.max_difficulty - c.min_difficulty) +
                                      double(c.min_difficulty)));
    // Python's %: the remainder takes the divisor's sign.
    int64_t rem = next % c.difficulty_step;
    if (rem != 0 && (rem < 0) != (c.difficulty_step < 0)) rem += c.difficulty_step;
    next -= rem;
    return std::min(next, c.max_difficulty);
}

int64_t CurriculumSchedule::update(int64_t step) {
    if (current_ < config_.max_difficulty) current_ = difficulty_at(step);
    return current_;
}

}  // namespace mt::train
