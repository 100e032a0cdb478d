#include "mt/optim/grad_clip.h"

#include <cmath>

#include "mt/error.h"

namespace mt::optim {

namespace {
template <class T, class F>
void for_each_element(const Tensor& t, F&& fn) {
    Tensor c = t.contiguous();
    const T* p = c.data<T>();
    const int64_t n = c.numel();
    for (int64_t i = 0; i < n; ++i) fn(p[i]);
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
            for_each_element<float>(g, [&](float v) { sum += double(v) * v; });
        else if (g.dtype() == DType::f64)
            for_each_element<double>(g, [&](double v) { sum += v * v; });
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
