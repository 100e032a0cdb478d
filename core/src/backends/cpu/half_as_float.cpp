#include "half_as_float.h"

#include <algorithm>

#include "bf16_narrow.h"
#include "mt/kernels/bf16.h"
#include "op_support.h"

namespace mt::cpu {

namespace {

bool is_half(DType d) {
    return d == DType::f16 || d == DType::bf16;
}

// dst[i] = to(from(src[i])) over n elements, threaded above kParallelMin.
template <class From, class To, class Fn>
void map(const From* src, To* dst, int64_t n, Fn fn) {
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
    for (int64_t i = 0; i < n; ++i) dst[i] = fn(src[i]);
}

// narrow_to_bf16 over the threads, a contiguous slice each.
void narrow(const float* src, uint16_t* dst, int64_t n) {
    constexpr int64_t kSlice = 1 << 16;
    const int64_t slices = (n + kSlice - 1) / kSlice;
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
    for (int64_t s = 0; s < slices; ++s)
        narrow_to_bf16(src + s * kSlice, dst + s * kSlice, std::min(kSlice, n - s * kSlice));
}

}  // namespace

bool any_half(std::initializer_list<const Tensor*> tensors) {
    for (const Tensor* t : tensors)
        if (t->defined() && is_half(t->dtype())) return true;
    return false;
}

bool any_f16(std::initializer_list<const Tensor*> tensors) {
    for (const Tensor* t : tensors)
        if (t->defined() && t->dtype() == DType::f16) return true;
    return false;
}

void convert(const Tensor& src, Tensor& dst) {
    MT_CHECK(src.shape() == dst.shape() && dst.is_contiguous() &&
                 dst.device().type == DeviceType::cpu && src.device().type == DeviceType::cpu,
             "cast: ", src.describe(), " -> ", dst.describe(),
             ": shapes differ or the destination is not a contiguous CPU tensor");
    const Tensor s = src.contiguous();
    const int64_t n = s.numel();
    const DType from = s.dtype(), to = dst.dtype();
    if (from == to) {
        dst.copy_from(s);
        return;
    }
    const auto* u16 = static_cast<const uint16_t*>(s.raw_data());
    auto* out16 = static_cast<uint16_t*>(dst.raw_data());
    if (from == DType::bf16 && to == DType::f32)
        return map(u16, dst.data<float>(), n, [](uint16_t b) { return k::bf16_to_float(b); });
    if (from == DType::f32 && to == DType::bf16) return narrow(s.data<float>(), out16, n);
    if (from == DType::f16 && to == DType::f32)
        return map(u16, dst.data<float>(), n, [](uint16_t h) { return half_to_float(h); });
    if (from == DType::f32 && to == DType::f16)
        return map(s.data<float>(), out16, n, [](float f) { return float_to_half(f); });
    if (from == DType::f64 && to == DType::f32)
        return map(s.data<double>(), dst.data<float>(), n, [](double d) { return float(d); });
    if (from == DType::f32 && to == DType::f64)
        return map(s.data<float>(), dst.data<double>(), n, [](float f) { return double(f); });
    // Between the two halves, or from f64 to a half: through f32 (exact widening first).
    MT_CHECK((is_half(from) || from == DType::f64) && (is_half(to) || to == DType::f64),
             "cast: ", s.describe(), " to ", dtype_name(to), " is not a float conversion");
    Tensor mid = Tensor::empty(s.shape(), DType::f32);
    convert(s, mid);
    convert(mid, dst);
}

const Tensor& HalfAsFloat::in(const Tensor& t) {
    if (!t.defined() || !is_half(t.dtype())) return t;
    Tensor wide = Tensor::empty(t.shape(), DType::f32);
    convert(t, wide);
    return inputs_.emplace_back(std::move(wide));
}

Tensor& HalfAsFloat::output(Tensor& t, bool widen) {
    if (!t.defined() || !is_half(t.dtype())) return t;
    Tensor wide = Tensor::empty(t.shape(), DType::f32);
    if (widen) convert(t, wide);
    return outputs_.emplace_back(&t, std::move(wide)).second;
}

Tensor& HalfAsFloat::out(Tensor& t) {
    return output(t, false);
}

Tensor& HalfAsFloat::inout(Tensor& t) {
    return output(t, true);
}

void HalfAsFloat::finish() {
    for (auto& [target, wide] : outputs_) convert(wide, *target);
    outputs_.clear();
}

}  // namespace mt::cpu
