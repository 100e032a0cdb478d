#include "mt/optim/lr_schedule.h"

#include <cmath>

#include "mt/error.h"

namespace mt::optim {

namespace {
constexpr double kPi = 3.141592653589793;  // Python's math.pi
}

LrDecayStyle parse_lr_decay_style(const std::string& t) {
    if (t == "constant") return LrDecayStyle::constant;
    if (t == "linear") return LrDecayStyle::linear;
    if (t == "cosine") return LrDecayStyle::cosine;
    if (t == "inverse-square-root") return LrDecayStyle::inverse_square_root;
    if (t == "WSD") return LrDecayStyle::wsd;
    MT_FAIL("--lr-decay-style ", t,
            ": expected constant, linear, cosine, inverse-square-root or WSD");
}

WsdDecayStyle parse_wsd_decay_style(const std::string& t) {
    if (t == "linear") return WsdDecayStyle::linear;
    if (t == "cosine") return WsdDecayStyle::cosine;
    if (t == "exponential") return WsdDecayStyle::exponential;
    if (t == "minus_sqrt") return WsdDecayStyle::minus_sqrt;
    MT_FAIL("--lr-wsd-decay-style ", t, ": expected linear, cosine, exponential or minus_sqrt");
}

WdIncrStyle parse_wd_incr_style(const std::string& t) {
    if (t == "constant") return WdIncrStyle::constant;
    if (t == "linear") return WdIncrStyle::linear;
    if (t == "cosine") return WdIncrStyle::cosine;
    MT_FAIL("--weight-decay-incr-style ", t, ": expected constant, linear or cosine");
}

LrScheduleConfig schedule_config_from_flags(const LrScheduleFlags& f) {
    LrScheduleConfig c;
    if (f.train_iters) {
        int64_t decay_iters = f.lr_decay_iters.value_or(*f.train_iters);
        c.lr_decay_steps = decay_iters * f.global_batch_size;
        c.wd_incr_steps = *f.train_iters * f.global_batch_size;
        if (f.lr_wsd_decay_iters) c.wsd_decay_steps = *f.lr_wsd_decay_iters * f.global_batch_size;
        c.lr_warmup_steps = f.lr_warmup_fraction ? *f.lr_warmup_fraction * double(c.lr_decay_steps)
                                                 : double(f.lr_warmup_iters * f.global_batch_size);
    } else if (f.train_samples) {
        c.lr_decay_steps = f.lr_decay_samples.value_or(*f.train_samples);
        c.wd_incr_steps = *f.train_samples;
        c.wsd_decay_steps = f.lr_wsd_decay_samples;
        c.lr_warmup_steps = f.lr_warmup_fraction ? *f.lr_warmup_fraction * double(c.lr_decay_steps)
                                                 : double(f.lr_warmup_samples);
    } else {
        MT_FAIL("either --train-iters or --train-samples is needed");
    }
    c.init_lr = f.lr_warmup_init;
    c.max_lr = f.lr;
    c.min_lr = f.min_lr;
    c.lr_decay_style = parse_lr_decay_style(f.lr_decay_style);
    c.wsd_decay_style = parse_wsd_decay_style(f.lr_wsd_decay_style);
    c.start_wd = f.start_weight_decay;
    c.end_wd = f.end_weight_decay;
    c.wd_incr_style = parse_wd_incr_style(f.weight_decay_incr_style);
    c.lr_warmup_tokens = f.lr_warmup_tokens;
    c.lr_decay_tokens = f.lr_decay_tokens;
    return c;
}

LrScheduler::LrScheduler(LrScheduleConfig c) : config_(c), warmup_tokens_(c.lr_warmup_tokens) {
    MT_CHECK(c.min_lr >= 0.0, "--min-lr must be >= 0, got ", c.min_lr);
    MT_CHECK(c.max_lr >= c.min_lr, "--lr (", c.max_lr, ") must be >= --min-lr (", c.min_lr, ")");
    MT_CHECK(c.init_lr <= c.max_lr, "--lr-warmup-init (", c.init_lr, ") must be <= --lr (",
             c.max_lr, ")");
    MT_CHECK(c.lr_decay_steps > 0, "the learning-rate decay length must be positive, got ",
             c.lr_decay_steps, " samples");
    MT_CHECK(c.lr_warmup_steps < double(c.lr_decay_steps), "the warmup (", c.lr_warmup_steps,
             " samples) must be shorter than the decay (", c.lr_decay_steps, " samples)");
    MT_CHECK(c.lr_decay_style != LrDecayStyle::wsd || c.wsd_decay_steps,
             "--lr-decay-style WSD needs --lr-wsd-decay-iters or --lr-wsd-decay-samples");
    MT_CHECK(c.start_wd >= 0.0 && c.end_wd >= c.start_wd,
             "weight decay must satisfy 0 <= ", "--start-weight-decay (", c.start_wd,
             ") <= --end-weight-decay (", c.end_wd, ")");
    MT_CHECK(c.wd_incr_style == WdIncrStyle::constant || c.wd_incr_steps > 0,
             "a weight-decay increment needs a positive length, got ", c.wd_incr_steps);
    MT_CHECK(c.wd_incr_style != WdIncrStyle::constant || c.start_wd == c.end_wd,
             "a constant weight decay needs --start-weight-decay == --end-weight-decay");
    MT_CHECK(!(c.lr_warmup_tokens || c.lr_decay_tokens) || c.lr_decay_style != LrDecayStyle::wsd,
             "--lr-decay-style WSD counts samples: Megatron-DeepSpeed's --lr-warmup-tokens and "
             "--lr-decay-tokens do not apply to it");
    // Megatron-DeepSpeed's decay in tokens measures from the warmup's end in tokens.
    MT_CHECK(!c.lr_decay_tokens || c.lr_warmup_tokens || c.lr_warmup_steps > 0 ||
                 c.lr_decay_style == LrDecayStyle::constant ||
                 c.lr_decay_style == LrDecayStyle::inverse_square_root,
             "--lr-decay-tokens needs --lr-warmup-tokens or a warmup in iterations or samples "
             "(Megatron-DeepSpeed's schedule has no start for the decay otherwise)");
}

void LrScheduler::step(int64_t increment, int64_t tokens) {
    num_steps_ += increment;
    num_tokens_ = tokens;
    // Megatron-DeepSpeed: a step-based warmup followed by a decay in tokens starts the decay
    // at the tokens the warmup ended on.
    if (!warmup_tokens_ && config_.lr_decay_tokens && config_.lr_warmup_steps > 0 &&
        double(num_steps_) == config_.lr_warmup_steps)
        warmup_tokens_ = num_tokens_;
}

double LrScheduler::weight_decay() const {
    const auto& c = config_;
    if (num_steps_ > c.wd_incr_steps || c.wd_incr_style == WdIncrStyle::constant) return c.end_wd;
    double ratio = double(num_steps_) / double(c.wd_incr_steps);
    double coeff =
        c.wd_incr_style == WdIncrStyle::linear ? ratio : 0.5 * (std::cos(kPi * (1 - ratio)) + 1.0);
    return c.start_wd + coeff * (c.end_wd - c.start_wd);
}

double LrScheduler::lr(std::optional<double> group_max_lr,
                       std::optional<double> group_min_lr) const {
    const auto& c = config_;
    const double max_lr = group_max_lr.value_or(c.max_lr);
    const double min_lr = group_min_lr.value_or(c.min_lr);
    // Linear warmup from init_lr, over samples or (Megatron-DeepSpeed) tokens.
    if (!warmup_tokens_) {
        if (c.lr_warmup_steps > 0 && double(num_steps_) <= c.lr_warmup_steps)
            return c.init_lr + (max_lr - c.init_lr) * double(num_steps_) / c.lr_warmup_steps;
    } else if (*warmup_tokens_ > 0 && num_tokens_ <= *warmup_tokens_) {
        return c.init_lr + (max_lr - c.init_lr) * double(num_tokens_) / double(*warmup_tokens_);
    }
    if (c.lr_decay_style == LrDecayStyle::constant) return max_lr;
    if (c.lr_decay_tokens ? num_tokens_ > *c.lr_decay_tokens : num_steps_ > c.lr_decay_steps)
        return min_lr;
    if (c.lr_decay_style == LrDecayStyle::inverse_square_root) {
        // Python: max(warmup, 1) ** 0.5 / max(steps, 1) ** 0.5, i.e. pow, not sqrt.
        double warmup = warmup_tokens_ ? double(std::max<int64_t>(*warmup_tokens_, 1))
                                       : std::max(c.lr_warmup_steps, 1.0);
        double steps = double(std::max<int64_t>(warmup_tokens_ ? num_tokens_ : num_steps_, 1));
        return std::max(min_lr, max_lr * std::pow(warmup, 0.5) / std::pow(steps, 0.5));
    }
    MT_CHECK(!c.lr_decay_tokens || warmup_tokens_, "--lr-decay-tokens: the warmup in samples (",
             c.lr_warmup_steps,
             ") ended between steps, so Megatron-DeepSpeed's schedule has no token count to "
             "start the decay from; give --lr-warmup-tokens");
    double decay_ratio = c.lr_decay_tokens
                             ? (double(num_tokens_) - double(*warmup_tokens_)) /
                                   (double(*c.lr_decay_tokens) - double(*warmup_tokens_))
                             : (double(num_steps_) - c.lr_warmup_steps) /
                                   (double(c.lr_decay_steps) - c.lr_warmup_steps);
    double coeff = 0;
    switch (c.lr_decay_style) {
        case LrDecayStyle::linear:
            coeff = 1.0 - decay_ratio;
            break;
        case LrDecayStyle::cosine:
            coeff = 0.5 * (std::cos(kPi * decay_ratio) + 1.0);
            break;
        case LrDecayStyle::wsd: {
            int64_t anneal_start = c.lr_decay_steps - *c.wsd_decay_steps;
            if (num_steps_ <= anneal_start) {
                coeff = 1.0;
                break;
            }
            double r = double(num_steps_ - anneal_start) / double(*c.wsd_decay_steps);
            switch (c.wsd_decay_style) {
                case WsdDecayStyle::linear:
                    coeff = 1.0 - r;
                    break;
                case WsdDecayStyle::cosine:
                    coeff = 0.5 * (std::cos(kPi * r) + 1.0);
                    break;
                case WsdDecayStyle::exponential:
                    coeff = 2.0 * std::pow(0.5, r) - 1.0;
                    break;
                case WsdDecayStyle::minus_sqrt:
                    coeff = 1.0 - std::sqrt(r);
                    break;
            }
            break;
        }
        default:
            break;
    }
    return min_lr + coeff * (max_lr - min_lr);
}

}  // namespace mt::optim
