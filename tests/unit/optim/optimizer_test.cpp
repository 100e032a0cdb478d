// The optimizers: SGD as torch.optim.SGD computes it (momentum, coupled weight decay), Adam via
// the tested AdamW kernel, and weight decay only where the parameter takes it.
#include <gtest/gtest.h>

#include "mt/model.h"
#include "mt/nn/parameter.h"
#include "mt/optim/optimizer.h"
#include "test_support.h"

namespace {

using namespace mt;

nn::Parameter param(const char* name, std::vector<float> v, std::vector<float> g, bool wd) {
    nn::Parameter p = nn::make_parameter(single_process_context().backend, name,
                                         {int64_t(v.size())}, DType::f32, {}, wd);
    std::copy(v.begin(), v.end(), p.value.data<float>());
    std::copy(g.begin(), g.end(), p.grad.data<float>());
    return p;
}

TEST(Optimizer, SgdMomentumAndCoupledWeightDecayAsTorch) {
    nn::Parameter w = param("w", {1.0f, -2.0f}, {0.5f, 0.25f}, true);
    nn::Parameter b = param("b", {1.0f}, {0.5f}, false);
    optim::OptimizerConfig c;
    c.type = optim::OptimizerType::sgd;
    c.sgd_momentum = 0.9;
    optim::Optimizer opt(single_process_context().backend, {&w, &b}, c);
    opt.step(0.1, 0.01);
    // Step 1: d = g + wd·p, buf = d, p -= lr·buf.
    float d0 = 0.5f + 0.01f * 1.0f;
    EXPECT_FLOAT_EQ(w.value.data<float>()[0], 1.0f - 0.1f * d0);
    EXPECT_FLOAT_EQ(b.value.data<float>()[0], 1.0f - 0.1f * 0.5f);  // no decay on b
    float p1 = w.value.data<float>()[0];
    opt.step(0.1, 0.01);
    // Step 2: buf = 0.9·buf + d.
    float d1 = 0.5f + 0.01f * p1;
    EXPECT_FLOAT_EQ(w.value.data<float>()[0], p1 - 0.1f * (0.9f * d0 + d1));
    EXPECT_EQ(opt.steps(), 2);
    opt.zero_grad();
    EXPECT_EQ(w.grad.data<float>()[1], 0.0f);
}

// A step with grad_scale (clipping's factor) is the step on the gradients scaled first, to the
// bit, for both optimizers.
TEST(Optimizer, GradScaleIsTheStepOnScaledGradients) {
    for (auto type : {optim::OptimizerType::adam, optim::OptimizerType::sgd}) {
        optim::OptimizerConfig c;
        c.type = type;
        const float coeff = 0.37f;
        nn::Parameter a = param("a", {1.0f, -2.0f, 0.3f}, {0.5f, 0.25f, -3.0f}, true);
        nn::Parameter b =
            param("b", {1.0f, -2.0f, 0.3f}, {0.5f * coeff, 0.25f * coeff, -3.0f * coeff}, true);
        optim::Optimizer folded(single_process_context().backend, {&a}, c);
        optim::Optimizer scaled(single_process_context().backend, {&b}, c);
        for (int step = 0; step < 2; ++step) {
            folded.step(1e-2, 0.1, {}, coeff);
            scaled.step(1e-2, 0.1);
        }
        for (int i = 0; i < 3; ++i)
            EXPECT_EQ(a.value.data<float>()[i], b.value.data<float>()[i]) << int(type) << " " << i;
    }
}

TEST(Optimizer, AdamUsesTheAdamWKernelAndSkipsDecayWhereNotTaken) {
    nn::Parameter w = param("w", {1.0f, -2.0f}, {0.5f, 0.25f}, true);
    nn::Parameter b = param("b", {1.0f}, {0.5f}, false);
    optim::Optimizer opt(single_process_context().backend, {&w, &b}, {});
    opt.step(1e-2, 0.1);
    // The same step through the op directly.
    Tensor pv = Tensor::empty({2}, DType::f32), m = Tensor::zeros({2}, DType::f32),
           v = Tensor::zeros({2}, DType::f32), g = Tensor::empty({2}, DType::f32);
    pv.data<float>()[0] = 1.0f;
    pv.data<float>()[1] = -2.0f;
    g.data<float>()[0] = 0.5f;
    g.data<float>()[1] = 0.25f;
    single_process_context().backend.adamw_step(pv, g, m, v, {1e-2, 0.9, 0.999, 1e-8, 0.1}, 1);
    EXPECT_EQ(w.value.data<float>()[1], pv.data<float>()[1]);
    EXPECT_EQ(opt.first()[0].data<float>()[0], m.data<float>()[0]);
    // Without decay, Adam's first step moves by lr·sign(g) (bias-corrected).
    EXPECT_NEAR(b.value.data<float>()[0], 1.0f - 1e-2f, 1e-6);
}

TEST(Optimizer, Errors) {
    EXPECT_NE(test::error_of([] {
                  optim::parse_optimizer_type("lamb");
              }).find("--optimizer lamb: supported are adam, sgd and muon"),
              std::string::npos);
}

}  // namespace
