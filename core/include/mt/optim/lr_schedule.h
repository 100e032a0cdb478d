// Megatron's OptimizerParamScheduler: learning-rate warmup and decay (constant, linear, cosine,
// inverse-square-root, WSD) and weight-decay increment, counted in samples as Megatron counts
// them, with the same floating-point operations so the values agree bit for bit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "mt/api.h"

namespace mt::optim {

enum class LrDecayStyle { constant, linear, cosine, inverse_square_root, wsd };
enum class WsdDecayStyle { linear, cosine, exponential, minus_sqrt };
enum class WdIncrStyle { constant, linear, cosine };

// Parses Megatron's flag values ("cosine", "inverse-square-root", "WSD", "minus_sqrt", ...).
MT_API LrDecayStyle parse_lr_decay_style(const std::string& text);
MT_API WsdDecayStyle parse_wsd_decay_style(const std::string& text);
MT_API WdIncrStyle parse_wd_incr_style(const std::string& text);

struct LrScheduleConfig {
    double init_lr = 0.0;        // --lr-warmup-init
    double max_lr = 0.0;         // --lr
    double min_lr = 0.0;         // --min-lr
    double lr_warmup_steps = 0;  // samples (a fraction of the decay steps may make it non-integral)
    int64_t lr_decay_steps = 0;  // samples
    LrDecayStyle lr_decay_style = LrDecayStyle::linear;
    std::optional<int64_t> wsd_decay_steps;  // samples, WSD only
    WsdDecayStyle wsd_decay_style = WsdDecayStyle::exponential;
    double start_wd = 0.01, end_wd = 0.01;
    int64_t wd_incr_steps = 0;  // samples
    WdIncrStyle wd_incr_style = WdIncrStyle::constant;
};

// The training flags the schedule is derived from (megatron/training/training.py
// get_optimizer_param_scheduler): iteration-based flags are multiplied by the global batch size.
struct LrScheduleFlags {
    std::optional<int64_t> train_iters, train_samples;
    int64_t global_batch_size = 1;
    std::optional<int64_t> lr_decay_iters, lr_decay_samples;
    std::optional<double> lr_warmup_fraction;
    int64_t lr_warmup_iters = 0, lr_warmup_samples = 0;
    std::optional<int64_t> lr_wsd_decay_iters, lr_wsd_decay_samples;
    double lr_warmup_init = 0.0, lr = 0.0, min_lr = 0.0;
    std::string lr_decay_style = "linear", lr_wsd_decay_style = "exponential";
    double start_weight_decay = 0.01, end_weight_decay = 0.01;
    std::string weight_decay_incr_style = "constant";
};

MT_API LrScheduleConfig schedule_config_from_flags(const LrScheduleFlags& flags);

class MT_API LrScheduler {
  public:
    // Validates the configuration as Megatron's constructor asserts it (mt::Error otherwise).
    explicit LrScheduler(LrScheduleConfig config);

    // Advances by `increment` samples (Megatron steps by the global batch size per iteration).
    void step(int64_t increment) { num_steps_ += increment; }
    int64_t num_steps() const { return num_steps_; }
    void set_num_steps(int64_t steps) { num_steps_ = steps; }

    // The learning rate now; a parameter group may override max_lr / min_lr.
    double lr(std::optional<double> group_max_lr = {},
              std::optional<double> group_min_lr = {}) const;
    double weight_decay() const;
    const LrScheduleConfig& config() const { return config_; }

  private:
    LrScheduleConfig config_;
    int64_t num_steps_ = 0;
};

}  // namespace mt::optim
