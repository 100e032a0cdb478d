// Tensor: allocation, views sharing storage, strided copies, and errors on misuse.
#include <gtest/gtest.h>

#include <numeric>

#include "mt/tensor.h"

namespace {

mt::Tensor iota(const mt::Shape& shape) {
    auto t = mt::Tensor::empty(shape, mt::DType::f32);
    std::iota(t.data<float>(), t.data<float>() + t.numel(), 0.0f);
    return t;
}

TEST(Tensor, EmptyAndZeros) {
    auto z = mt::Tensor::zeros({2, 3}, mt::DType::i64);
    EXPECT_EQ(z.numel(), 6);
    EXPECT_EQ(z.nbytes(), 48);
    EXPECT_EQ(z.strides(), (mt::Shape{3, 1}));
    EXPECT_TRUE(z.is_contiguous());
    for (int i = 0; i < 6; ++i) EXPECT_EQ(z.data<int64_t>()[i], 0);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(z.raw_data()) % 64, 0u);
    EXPECT_EQ(z.describe(), "i64[2, 3] cpu");
}

TEST(Tensor, DtypeSizes) {
    EXPECT_EQ(mt::dtype_size(mt::DType::bf16), 2);
    EXPECT_EQ(mt::dtype_size(mt::DType::f64), 8);
    EXPECT_EQ(mt::dtype_size(mt::DType::boolean), 1);
    EXPECT_EQ(mt::dtype_name(mt::DType::u16), "u16");
}

TEST(Tensor, WrongTypedAccessThrows) {
    auto t = mt::Tensor::empty({2}, mt::DType::f32);
    EXPECT_THROW(t.data<int32_t>(), mt::Error);
}

TEST(Tensor, ViewsShareStorage) {
    auto t = iota({2, 3, 4});
    auto v = t.view({6, -1});
    EXPECT_EQ(v.shape(), (mt::Shape{6, 4}));
    v.data<float>()[5] = 100.f;
    EXPECT_EQ(t.data<float>()[5], 100.f);
    EXPECT_THROW(t.view({5, 5}), mt::Error);
    EXPECT_THROW(t.view({-1, -1}), mt::Error);
}

TEST(Tensor, SliceSelectTranspose) {
    auto t = iota({3, 4});
    auto s = t.slice(1, 1, 3);  // columns 1..2
    EXPECT_EQ(s.shape(), (mt::Shape{3, 2}));
    EXPECT_FALSE(s.is_contiguous());
    auto c = s.contiguous();
    EXPECT_TRUE(c.is_contiguous());
    const float expected[] = {1, 2, 5, 6, 9, 10};
    for (int i = 0; i < 6; ++i) EXPECT_EQ(c.data<float>()[i], expected[i]);

    auto row = t.select(0, 2);
    EXPECT_EQ(row.shape(), (mt::Shape{4}));
    EXPECT_EQ(row.data<float>()[0], 8.f);

    auto tt = t.transpose(0, 1).contiguous();
    EXPECT_EQ(tt.shape(), (mt::Shape{4, 3}));
    EXPECT_EQ(tt.data<float>()[1], 4.f);  // (0,1) of the transpose is (1,0) of t
    EXPECT_EQ(tt.data<float>()[3], 1.f);
    EXPECT_THROW(t.slice(0, 2, 5), mt::Error);
    EXPECT_THROW(t.transpose(0, 2), mt::Error);
}

TEST(Tensor, CopyFromStridedIntoStrided) {
    auto src = iota({2, 3});
    auto dst = mt::Tensor::zeros({3, 2}, mt::DType::f32);
    auto dst_t = dst.transpose(0, 1);  // 2x3 view with strides {1, 2}
    dst_t.copy_from(src);
    // dst[j][i] = src[i][j]
    EXPECT_EQ(dst.data<float>()[0 * 2 + 1], 3.f);
    EXPECT_EQ(dst.data<float>()[2 * 2 + 0], 2.f);
    EXPECT_THROW(dst.copy_from(src), mt::Error);  // shape mismatch
}

TEST(Tensor, FromBlobKeepsOwnerAlive) {
    auto owner = std::make_shared<std::vector<int32_t>>(std::vector<int32_t>{1, 2, 3, 4});
    std::weak_ptr<std::vector<int32_t>> watch = owner;
    mt::Tensor t = mt::Tensor::from_blob(owner->data(), {2, 2}, mt::DType::i32, owner);
    owner.reset();
    EXPECT_FALSE(watch.expired());
    EXPECT_EQ(t.data<int32_t>()[3], 4);
    t = mt::Tensor();
    EXPECT_TRUE(watch.expired());
}

}  // namespace
