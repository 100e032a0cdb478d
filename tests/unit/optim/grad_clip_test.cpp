// Global gradient clipping: the norm over all tensors and Megatron's clip coefficient.
#include <gtest/gtest.h>

#include <cmath>

#include "mt/model.h"
#include "mt/optim/grad_clip.h"
#include "test_support.h"

namespace {

mt::Backend& be() {
    return mt::single_process_context().backend;
}

mt::Tensor filled(const mt::Shape& shape, std::initializer_list<float> values) {
    auto t = mt::Tensor::empty(shape, mt::DType::f32);
    int i = 0;
    for (float v : values) t.data<float>()[i++] = v;
    return t;
}

TEST(GradClip, NormOverAllTensorsIncludingStridedViews) {
    std::vector<mt::Tensor> grads{filled({2}, {3, 4}), filled({2, 2}, {1, 2, 2, 4})};
    EXPECT_DOUBLE_EQ(mt::optim::global_l2_norm(be(), grads), std::sqrt(9 + 16 + 1 + 4 + 4 + 16));
    std::vector<mt::Tensor> column{grads[1].slice(1, 1, 2)};  // {2, 4}
    EXPECT_DOUBLE_EQ(mt::optim::global_l2_norm(be(), column), std::sqrt(20.0));
}

TEST(GradClip, ScalesOnlyAboveTheThreshold) {
    EXPECT_EQ(mt::optim::clip_coefficient(10.0, 5.0), 1.0);
    EXPECT_DOUBLE_EQ(mt::optim::clip_coefficient(1.0, 5.0), 1.0 / (5.0 + 1e-6));
    EXPECT_NE(mt::test::error_of([&] {
                  mt::optim::clip_coefficient(0.0, 1.0);
              }).find("--clip-grad must be positive"),
              std::string::npos);
}

}  // namespace
