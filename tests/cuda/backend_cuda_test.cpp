// The CUDA backend against the CPU backend; skipped where no GPU is visible.
#include <gtest/gtest.h>

#include <random>

#include "backend_cuda.h"

namespace {

TEST(CudaBackend, GemmMatchesCpu) {
    if (mt::plugins::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
    auto gpu = mt::plugins::cuda::make_cuda_backend(0);
    auto cpu = mt::make_cpu_backend();
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (auto ta : {mt::Transpose::no, mt::Transpose::yes})
        for (auto tb : {mt::Transpose::no, mt::Transpose::yes}) {
            const int64_t m = 65, n = 33, k = 127;
            auto a = mt::Tensor::empty(ta == mt::Transpose::yes ? mt::Shape{k, m} : mt::Shape{m, k},
                                       mt::DType::f32);
            auto b = mt::Tensor::empty(tb == mt::Transpose::yes ? mt::Shape{n, k} : mt::Shape{k, n},
                                       mt::DType::f32);
            for (auto* t : {&a, &b})
                for (int64_t i = 0; i < t->numel(); ++i) t->data<float>()[i] = dist(rng);
            auto c = mt::Tensor::zeros({m, n}, mt::DType::f32);
            cpu->gemm(ta, tb, 1.f, a, b, 0.f, c);

            auto da = gpu->empty(a.shape(), mt::DType::f32),
                 db = gpu->empty(b.shape(), mt::DType::f32);
            auto dc = gpu->empty(c.shape(), mt::DType::f32);
            gpu->copy(a, da);
            gpu->copy(b, db);
            gpu->gemm(ta, tb, 1.f, da, db, 0.f, dc);
            auto back = mt::Tensor::empty(c.shape(), mt::DType::f32);
            gpu->copy(dc, back);
            gpu->synchronize();
            for (int64_t i = 0; i < c.numel(); ++i)
                ASSERT_NEAR(back.data<float>()[i], c.data<float>()[i], 1e-4) << i;
        }
}

TEST(CudaBackend, MissingDeviceIsAnError) {
    EXPECT_THROW(mt::plugins::cuda::make_cuda_backend(mt::plugins::cuda::device_count()),
                 mt::Error);
}

}  // namespace
