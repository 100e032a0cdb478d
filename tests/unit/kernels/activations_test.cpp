// Activation functors: fwd against double oracles written differently from the kernels
// (Megatron's tanh form of GELU, erfc form of erf-GELU), bwd against central differences of
// fwd in double, and the float instantiation against both.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numbers>
#include <vector>

#include "mt/kernels/activations.h"

namespace {

// Sample points: a dense sweep plus the interesting spots (0, tiny, large magnitudes).
std::vector<double> sample_points() {
    std::vector<double> xs;
    for (int i = -400; i <= 400; ++i) xs.push_back(i * 0.025);
    for (double x : {1e-6, -1e-6, 15.0, -15.0, 30.0, -30.0}) xs.push_back(x);
    return xs;
}

// Megatron's bias_gelu form, with tanh (the kernel uses the sigmoid form).
double gelu_tanh_oracle(double x) {
    double u = std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
    return 0.5 * x * (1.0 + std::tanh(u));
}
double gelu_erf_oracle(double x) {
    return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
}
double silu_oracle(double x) {
    return x / (1.0 + std::exp(-x));
}
double relu_oracle(double x) {
    return std::max(x, 0.0);
}
double squared_relu_oracle(double x) {
    return std::pow(std::max(x, 0.0), 2);
}

template <class Op>
void check_unary(Op op, const std::function<double(double)>& oracle, bool kink_at_zero) {
    const double h = 1e-5;
    for (double x : sample_points()) {
        double expected = oracle(x);
        EXPECT_NEAR(op.fwd(x), expected, 1e-14 * (1 + std::fabs(expected)))
            << "double fwd at " << x;
        float xf = float(x);
        double expected_f = oracle(double(xf));
        EXPECT_NEAR(op.fwd(xf), expected_f, 3e-7 * (1 + std::fabs(expected_f)))
            << "float fwd at " << x;

        if (kink_at_zero && std::fabs(x) < 2 * h) continue;
        for (double dy : {1.0, -0.37}) {
            double fd = dy * (op.fwd(x + h) - op.fwd(x - h)) / (2 * h);
            EXPECT_NEAR(op.bwd(x, dy), fd, 1e-8 * (1 + std::fabs(fd))) << "double bwd at " << x;
            double fd_f = dy * (op.fwd(double(xf) + h) - op.fwd(double(xf) - h)) / (2 * h);
            EXPECT_NEAR(op.bwd(xf, float(dy)), fd_f, 1e-6 * (1 + std::fabs(fd_f)))
                << "float bwd at " << x;
        }
    }
}

TEST(Activations, GeluTanhMatchesOracleAndDerivative) {
    check_unary(mt::k::Gelu{}, gelu_tanh_oracle, false);
}
TEST(Activations, GeluErfMatchesOracleAndDerivative) {
    check_unary(mt::k::GeluErf{}, gelu_erf_oracle, false);
}
TEST(Activations, SiluMatchesOracleAndDerivative) {
    check_unary(mt::k::Silu{}, silu_oracle, false);
}
TEST(Activations, ReluMatchesOracleAndDerivative) {
    check_unary(mt::k::Relu{}, relu_oracle, true);
}
TEST(Activations, SquaredReluMatchesOracleAndDerivative) {
    check_unary(mt::k::SquaredRelu{}, squared_relu_oracle, true);
}

TEST(Activations, TanhMatchesOracleAndDerivative) {
    check_unary(
        mt::k::Tanh{}, [](double x) { return std::tanh(x); }, false);
}

TEST(Activations, ReluDerivativeAtZeroIsZeroLikeTorch) {
    EXPECT_EQ(mt::k::Relu{}.bwd(0.0f, 1.0f), 0.0f);
    EXPECT_EQ(mt::k::SquaredRelu{}.bwd(0.0f, 1.0f), 0.0f);
}

// Megatron's bias_gelu spells sqrt(2/pi) as 0.79788456: the same float as the exact constant.
TEST(Activations, MegatronGeluConstantIsTheSameFloat) {
    EXPECT_EQ(float(mt::k::kSqrt2OverPi), 0.79788456f);
}

TEST(Activations, SwigluMatchesOracleAndPartialDerivatives) {
    const mt::k::Swiglu op;
    const double h = 1e-5;
    for (double gate : {-6.0, -1.3, -0.2, 0.0, 0.4, 2.5, 9.0})
        for (double up : {-2.0, -0.5, 0.3, 1.7}) {
            double expected = gate / (1.0 + std::exp(-gate)) * up;
            EXPECT_NEAR(op.fwd(gate, up), expected, 1e-14 * (1 + std::fabs(expected)));
            EXPECT_NEAR(op.fwd(float(gate), float(up)), expected, 3e-7 * (1 + std::fabs(expected)));
            const double dy = 0.7;
            double d_gate = 0, d_up = 0;
            op.bwd(gate, up, dy, d_gate, d_up);
            double fd_gate = dy * (op.fwd(gate + h, up) - op.fwd(gate - h, up)) / (2 * h);
            double fd_up = dy * (op.fwd(gate, up + h) - op.fwd(gate, up - h)) / (2 * h);
            EXPECT_NEAR(d_gate, fd_gate, 1e-8) << gate << " " << up;
            EXPECT_NEAR(d_up, fd_up, 1e-8) << gate << " " << up;
            float g_f = 0, u_f = 0;
            op.bwd(float(gate), float(up), float(dy), g_f, u_f);
            EXPECT_NEAR(g_f, fd_gate, 1e-6 * (1 + std::fabs(fd_gate)));
            EXPECT_NEAR(u_f, fd_up, 1e-6 * (1 + std::fabs(fd_up)));
        }
}

// Megatron's quick_geglu with an offset: quick_gelu(gate) * (up + offset), and its
// quick_geglu_back, against the formula and central differences.
TEST(Activations, QuickGegluMatchesOracleAndPartialDerivatives) {
    const mt::k::QuickGeglu op;
    const double h = 1e-5, offset = 1.0;
    for (double gate : {-6.0, -1.3, -0.2, 0.0, 0.4, 2.5, 7.0})
        for (double up : {-2.0, -0.5, 0.3, 1.7}) {
            const double expected = gate / (1.0 + std::exp(-1.702 * gate)) * (up + offset);
            EXPECT_NEAR(op.fwd(gate, up, offset), expected, 1e-14 * (1 + std::fabs(expected)));
            const double dy = 0.7;
            double d_gate = 0, d_up = 0;
            op.bwd(gate, up, dy, d_gate, d_up, offset);
            const double fd_gate =
                dy * (op.fwd(gate + h, up, offset) - op.fwd(gate - h, up, offset)) / (2 * h);
            const double fd_up =
                dy * (op.fwd(gate, up + h, offset) - op.fwd(gate, up - h, offset)) / (2 * h);
            EXPECT_NEAR(d_gate, fd_gate, 1e-8) << gate << " " << up;
            EXPECT_NEAR(d_up, fd_up, 1e-8) << gate << " " << up;
        }
}

}  // namespace
