// The learning-rate and weight-decay schedules against Megatron-LM's own
// OptimizerParamScheduler (tests/fixtures/lr_schedule/make_fixtures.py) and Megatron-DeepSpeed's
// (make_deepspeed_fixtures.py): equal bit for bit.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "mt/optim/lr_schedule.h"
#include "test_support.h"

namespace {

using mt::optim::LrScheduleFlags;

// "key=value key=value" -> flags, in the names megatron-train will use.
LrScheduleFlags parse_flags(const std::string& line) {
    std::map<std::string, std::string> kv;
    std::istringstream in(line);
    std::string item;
    while (in >> item) {
        auto eq = item.find('=');
        if (eq != std::string::npos) kv[item.substr(0, eq)] = item.substr(eq + 1);
    }
    LrScheduleFlags f;
    auto i64 = [&](const char* k) { return std::stoll(kv.at(k)); };
    auto dbl = [&](const char* k) { return std::strtod(kv.at(k).c_str(), nullptr); };
    auto has = [&](const char* k) { return kv.count(k) > 0; };
    if (has("train_iters")) f.train_iters = i64("train_iters");
    if (has("train_samples")) f.train_samples = i64("train_samples");
    f.global_batch_size = i64("global_batch_size");
    f.lr = dbl("lr");
    f.min_lr = dbl("min_lr");
    f.lr_decay_style = kv.at("lr_decay_style");
    if (has("lr_warmup_iters")) f.lr_warmup_iters = i64("lr_warmup_iters");
    if (has("lr_warmup_samples")) f.lr_warmup_samples = i64("lr_warmup_samples");
    if (has("lr_warmup_fraction")) f.lr_warmup_fraction = dbl("lr_warmup_fraction");
    if (has("lr_warmup_init")) f.lr_warmup_init = dbl("lr_warmup_init");
    if (has("lr_decay_iters")) f.lr_decay_iters = i64("lr_decay_iters");
    if (has("lr_decay_samples")) f.lr_decay_samples = i64("lr_decay_samples");
    if (has("lr_wsd_decay_iters")) f.lr_wsd_decay_iters = i64("lr_wsd_decay_iters");
    if (has("lr_wsd_decay_style")) f.lr_wsd_decay_style = kv.at("lr_wsd_decay_style");
    if (has("start_weight_decay")) f.start_weight_decay = dbl("start_weight_decay");
    if (has("end_weight_decay")) f.end_weight_decay = dbl("end_weight_decay");
    if (has("weight_decay_incr_style"))
        f.weight_decay_incr_style = kv.at("weight_decay_incr_style");
    if (has("lr_warmup_tokens")) f.lr_warmup_tokens = i64("lr_warmup_tokens");
    if (has("lr_decay_tokens")) f.lr_decay_tokens = i64("lr_decay_tokens");
    return f;
}

TEST(LrSchedule, EqualsMegatronBitForBit) {
    std::ifstream in(mt::test::fixtures_dir() / "lr_schedule" / "schedules.txt");
    ASSERT_TRUE(in) << "missing fixture schedules.txt";
    std::string line;
    std::optional<mt::optim::LrScheduler> sched;
    LrScheduleFlags flags;
    int configs = 0, checked = 0;
    while (std::getline(in, line)) {
        if (line.rfind("config ", 0) == 0) {
            flags = parse_flags(line.substr(7));
            sched.emplace(mt::optim::schedule_config_from_flags(flags));
            ++configs;
            continue;
        }
        ASSERT_TRUE(sched.has_value());
        std::istringstream row(line);
        int64_t step;
        std::string lr_text, wd_text;
        row >> step >> lr_text >> wd_text;
        ASSERT_EQ(sched->num_steps(), step) << line;
        // Python's repr round-trips, so strtod gives Megatron's exact double.
        EXPECT_EQ(sched->lr(), std::strtod(lr_text.c_str(), nullptr))
            << "config " << configs << ", step " << step;
        EXPECT_EQ(sched->weight_decay(), std::strtod(wd_text.c_str(), nullptr))
            << "config " << configs << ", step " << step;
        sched->step(flags.global_batch_size);
        ++checked;
    }
    EXPECT_EQ(configs, 9);
    EXPECT_GT(checked, 700);
}

// Megatron-DeepSpeed's token-based warmup and decay against its own scheduler
// (tests/fixtures/lr_schedule/make_deepspeed_fixtures.py): each step is given the tokens consumed
// before the iteration, as megatron-train's trainer gives them.
TEST(LrSchedule, TokenSchedulesEqualMegatronDeepSpeedBitForBit) {
    std::ifstream in(mt::test::fixtures_dir() / "lr_schedule" / "deepspeed_schedules.txt");
    ASSERT_TRUE(in) << "missing fixture deepspeed_schedules.txt";
    std::string line;
    std::optional<mt::optim::LrScheduler> sched;
    LrScheduleFlags flags;
    int64_t seq_length = 0, tokens = 0;
    int configs = 0, checked = 0;
    while (std::getline(in, line)) {
        if (line.rfind("config ", 0) == 0) {
            flags = parse_flags(line.substr(7));
            const size_t at = line.find("seq_length=");
            seq_length = std::stoll(line.substr(at + 11));
            sched.emplace(mt::optim::schedule_config_from_flags(flags));
            tokens = 0;
            ++configs;
            continue;
        }
        ASSERT_TRUE(sched.has_value());
        std::istringstream row(line);
        int64_t step, step_tokens;
        std::string lr_text, wd_text;
        row >> step >> step_tokens >> lr_text >> wd_text;
        ASSERT_EQ(sched->num_steps(), step) << line;
        ASSERT_EQ(sched->num_tokens(), step_tokens) << line;
        EXPECT_EQ(sched->lr(), std::strtod(lr_text.c_str(), nullptr))
            << "config " << configs << ", step " << step;
        EXPECT_EQ(sched->weight_decay(), std::strtod(wd_text.c_str(), nullptr))
            << "config " << configs << ", step " << step;
        sched->step(flags.global_batch_size, tokens);
        tokens += flags.global_batch_size * seq_length;
        ++checked;
    }
    EXPECT_EQ(configs, 6);
    EXPECT_GT(checked, 150);
}

TEST(LrSchedule, GroupOverridesOfMaxAndMinLr) {
    LrScheduleFlags f;
    f.train_iters = 10;
    f.lr = 1.0;
    f.min_lr = 0.0;
    f.lr_decay_style = "linear";
    mt::optim::LrScheduler s(mt::optim::schedule_config_from_flags(f));
    s.step(5);
    EXPECT_DOUBLE_EQ(s.lr(), 0.5);
    EXPECT_DOUBLE_EQ(s.lr(2.0, 1.0), 1.5);
    s.step(100);
    EXPECT_EQ(s.lr(), 0.0);
}

TEST(LrSchedule, InvalidSettingsAreNamed) {
    auto error_for = [](LrScheduleFlags f) {
        return mt::test::error_of(
            [&] { mt::optim::LrScheduler(mt::optim::schedule_config_from_flags(f)); });
    };
    LrScheduleFlags f;
    f.train_iters = 10;
    f.lr = 1e-3;
    f.min_lr = 1e-2;
    EXPECT_NE(error_for(f).find("--lr (0.001) must be >= --min-lr (0.01)"), std::string::npos);
    f.min_lr = 0;
    f.lr_warmup_iters = 10;
    EXPECT_NE(error_for(f).find("must be shorter than the decay"), std::string::npos);
    f.lr_warmup_iters = 0;
    f.lr_decay_style = "WSD";
    EXPECT_NE(error_for(f).find("--lr-wsd-decay-iters"), std::string::npos);
    f.lr_decay_style = "exponential";
    EXPECT_NE(error_for(f).find("--lr-decay-style exponential"), std::string::npos);
    LrScheduleFlags none;
    EXPECT_NE(mt::test::error_of([&] {
                  mt::optim::schedule_config_from_flags(none);
              }).find("--train-iters or --train-samples"),
              std::string::npos);
}

}  // namespace
