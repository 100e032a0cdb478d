// DeepSpeed's legacy curriculum learning by sequence length (ds_config "curriculum_learning"
// with "curriculum_type": "seqlen", Megatron-DeepSpeed's --deepspeed runs): each training step
// sees only the first `difficulty` positions of its samples, the difficulty growing with the
// step as DeepSpeed's CurriculumScheduler grows it.
#pragma once

#include <cstdint>
#include <vector>

#include "mt/api.h"

namespace mt::train {

struct CurriculumConfig {
    enum class Schedule { fixed_linear, fixed_root, fixed_discrete };
    int64_t min_difficulty = 0, max_difficulty = 0;
    Schedule schedule = Schedule::fixed_linear;
    // fixed_linear / fixed_root: min to max over total_curriculum_step steps, each value a
    // multiple of difficulty_step, along the root_degree-th root (fixed_root).
    int64_t total_curriculum_step = 1, difficulty_step = 1;
    double root_degree = 1;
    // fixed_discrete: difficulty[i] up to step max_step[i]; the last one after them all.
    std::vector<int64_t> difficulty, max_step;
};

// DeepSpeed's CurriculumScheduler: the state starts at the minimum and moves to the schedule's
// value at each update until it has reached the maximum (then it stays).
class MT_API CurriculumSchedule {
  public:
    explicit CurriculumSchedule(CurriculumConfig config);
    // The difficulty of 1-based training step `step` (DeepSpeed's update_difficulty(global
    // step + 1), which Megatron-DeepSpeed calls before each step).
    int64_t update(int64_t step);

  private:
    int64_t difficulty_at(int64_t step) const;
    CurriculumConfig config_;
    int64_t current_;
};

}  // namespace mt::train
