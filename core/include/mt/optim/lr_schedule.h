// Megatron's OptimizerParamScheduler: learning-rate warmup and decay (constant, linear, cosine,
// inverse-square-root, WSD) and weight-decay increment, counted in samples as Megatron counts
// them (or in tokens, as Megatron-DeepSpeed's can), with the same floating-point operations so
// the values agree bit for bit.
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
    // Megatron-DeepSpeed's token-based warmup and decay (--lr-warmup-tokens, --lr-decay-tokens):
    // each replaces its step-based counterpart when given.
    std::optional<int64_t> lr_warmup_tokens, lr_decay_tokens;
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
    std::optional<int64_t> lr_warmup_tokens, lr_decay_tokens;  // Megatron-DeepSpeed's
};

MT_API LrScheduleConfig schedule_config_from_flags(const LrScheduleFlags& flags);

class MT_API LrScheduler {
  public:
    // Validates the configuration as Megatron's constructor asserts it (mt::Error otherwise).
    explicit LrScheduler(LrScheduleConfig config);

    // Advances by `increment` samples (Megatron steps by the global batch size per iteration).
    // `tokens`: the tokens trained on before this step (Megatron-DeepSpeed's
    // consumed_train_tokens, which its loop adds after the step), for a token-based schedule.
    void step(int64_t increment, int64_t tokens = 0);
    int64_t num_steps() const { return num_steps_; }
    void set_num_steps(int64_t steps) { num_steps_ = steps; }
    // A token-based schedule's state: the tokens of the last step, and the warmup in tokens,
    // which Megatron-DeepSpeed sets to the tokens at the end of a step-based warmup when the
    // decay counts tokens.
    bool counts_tokens() const { return config_.lr_warmup_tokens || config_.lr_decay_tokens; }
    int64_t num_tokens() const { return num_tokens_; }
    std::optional<int64_t> lr_warmup_tokens() const { return warmup_tokens_; }
    void set_token_state(int64_t num_tokens, std::optional<int64_t> lr_warmup_tokens) {
        num_tokens_ = num_tokens;
        warmup_tokens_ = lr_warmup_tokens;
    }

    // The learning rate now; a parameter group may override max_lr / min_lr.
    double lr(std::optional<double> group_max_lr = {},
              std::optional<double> group_min_lr = {}) const;
    double weight_decay() const;
    const LrScheduleConfig& config() const { return config_; }

  private:
    LrScheduleConfig config_;
    int64_t num_steps_ = 0;
    int64_t num_tokens_ = 0;
    std::optional<int64_t> warmup_tokens_;
};

}  // namespace mt::optim
