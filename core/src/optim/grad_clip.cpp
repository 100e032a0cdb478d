#include "mt/optim/grad_clip.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "mt/error.h"

namespace mt::optim {

namespace {

// Σ v² over a tensor in double: fixed chunks summed in order (the same result for any number of
// threads), each chunk with 8 independent accumulators so the loop vectorises instead of
// waiting on one chain of additions.
template <class T>
double sum_of_squares(const Tensor& t) {
    const Tensor c = t.contiguous();
    const T* p = c.data<T>();
    const int64_t n = c.numel();
    constexpr int64_t kChunk = int64_t(1) << 14;
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    std::vector<double> partial(size_t(chunks), 0.0);
#pragma omp parallel for schedule(static) if (n > (1 << 16))
    for (int64_t k = 0; k < chunks; ++k) {
        const int64_t begin = k * kChunk, end = std::min(n, begin + kChunk);
        double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t i = begin;
        for (; i + 8 <= end; i += 8)
            for (int j = 0; j < 8; ++j) acc[j] += double(p[i + j]) * double(p[i + j]);
        for (; i < end; ++i) acc[0] += double(p[i]) * double(p[i]);
        partial[size_t(k)] =
            ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    }
    double sum = 0;
    for (double v : partial) sum += v;
    return sum;
}

template <class T>
void scale_in_place(Tensor& t, double factor) {
    MT_CHECK(t.is_contiguous(), "clip_by_total_norm: gradient ", t.describe(),
             " must be contiguous");
    T* p = t.data<T>();
    const int64_t n = t.numel();
    const T f = static_cast<T>(factor);
#pragma omp parallel for if (n > (1 << 16))
    for (int64_t i = 0; i < n; ++i) p[i] *= f;
}
}  // namespace

double global_l2_norm(std::span<const Tensor> grads) {
    double sum = 0;
    for (const Tensor& g : grads) {
        if (g.dtype() == DType::f32)
            sum += sum_of_squares<float>(g);
        else if (g.dtype() == DType::f64)
            sum += sum_of_squares<double>(g);
        else
            MT_FAIL("global_l2_norm: gradients must be f32 or f64, got ", g.describe());
    }
    return std::sqrt(sum);
}

double clip_by_total_norm(std::span<Tensor> grads, double max_norm, double total_norm) {
    MT_CHECK(max_norm > 0, "--clip-grad must be positive, got ", max_norm);
    const double coeff = max_norm / (total_norm + 1.0e-6);
    if (!(coeff < 1.0)) return 1.0;
    for (Tensor& g : grads) {
        if (g.dtype() == DType::f32)
            scale_in_place<float>(g, coeff);
        else if (g.dtype() == DType::f64)
            scale_in_place<double>(g, coeff);
        else
            MT_FAIL("clip_by_total_norm: gradients must be f32 or f64, got ", g.describe());
    }
    return coeff;
}

}  // namespace mt::optim
