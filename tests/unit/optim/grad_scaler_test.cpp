// fp16 loss scaling: the dynamic scaler follows Megatron's DynamicGradScaler step for step on a
// pattern of overflowing and clean iterations (tests/fixtures/grad_scaler/make_fixture.py ran
// Megatron's own class); a constant scale never moves; Megatron's asserts are errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "mt/optim/grad_scaler.h"
#include "test_support.h"

namespace {

using mt::optim::GradScaler;
using mt::optim::GradScalerConfig;

TEST(GradScaler, DynamicScaleMatchesMegatronsScaler) {
    std::ifstream in(mt::test::fixtures_dir() / "grad_scaler" / "dynamic.txt");
    ASSERT_TRUE(in) << "missing tests/fixtures/grad_scaler/dynamic.txt";
    GradScalerConfig c;
    c.initial_scale = 1048576;
    c.min_scale = 4;
    c.window = 3;
    c.hysteresis = 2;
    GradScaler scaler(c);
    std::string line;
    std::getline(in, line);  // config
    int steps = 0;
    float lowest = scaler.scale();
    while (std::getline(in, line)) {
        std::istringstream s(line);
        int found_inf = 0;
        double scale = 0;
        int64_t growth = 0, hysteresis = 0;
        s >> found_inf >> scale >> growth >> hysteresis;
        scaler.update(found_inf != 0);
        const auto st = scaler.state();
        ASSERT_EQ(double(st.scale), scale) << "step " << steps;
        ASSERT_EQ(st.growth_tracker, growth) << "step " << steps;
        ASSERT_EQ(st.hysteresis_tracker, hysteresis) << "step " << steps;
        lowest = std::min(lowest, st.scale);
        ++steps;
    }
    EXPECT_EQ(steps, 48);
    EXPECT_EQ(lowest, 4.0f);  // the long overflow burst backed off down to --min-loss-scale
}

TEST(GradScaler, ConstantScaleAndChecks) {
    GradScalerConfig c;
    c.loss_scale = 128;
    GradScaler constant(c);
    EXPECT_FALSE(constant.dynamic());
    for (int i = 0; i < 5; ++i) constant.update(i % 2 == 0);
    EXPECT_EQ(constant.scale(), 128.0f);
    constant.set_state({4.0f, 1, 1});  // a checkpoint's state leaves the flag's scale
    EXPECT_EQ(constant.scale(), 128.0f);

    GradScalerConfig dyn;
    GradScaler fresh(dyn);
    EXPECT_EQ(fresh.scale(), 4294967296.0f);  // 2^32, Megatron's default
    fresh.set_state({1024.0f, 7, 1});
    EXPECT_EQ(fresh.scale(), 1024.0f);
    EXPECT_EQ(fresh.state().growth_tracker, 7);

    dyn.min_scale = 2 * dyn.initial_scale;
    EXPECT_NE(mt::test::error_of([&] { GradScaler bad(dyn); }).find("--min-loss-scale"),
              std::string::npos);
    GradScalerConfig zero;
    zero.hysteresis = 0;
    EXPECT_NE(mt::test::error_of([&] { GradScaler bad(zero); }).find("--hysteresis"),
              std::string::npos);
}

}  // namespace
