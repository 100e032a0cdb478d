// cast_float: f32 <-> f16 / bf16, element by element.
#include <cstdint>

#include "mt/error.h"
#include "mt/tensor.h"

namespace mt {

Tensor cast_float(const Tensor& t, DType to) {
    const Tensor from = t.contiguous();
    if (from.dtype() == to) return from.clone();
    const int64_t n = from.numel();
    Tensor out = Tensor::empty(from.shape(), to);
    const bool half_in = from.dtype() == DType::f16 || from.dtype() == DType::bf16;
    const bool half_out = to == DType::f16 || to == DType::bf16;
    if (half_in && to == DType::f32) {
        const auto* in = static_cast<const uint16_t*>(from.raw_data());
        float* o = out.data<float>();
        float (*widen)(uint16_t) = from.dtype() == DType::f16 ? half_to_float : bfloat16_to_float;
        for (int64_t i = 0; i < n; ++i) o[i] = widen(in[i]);
        return out;
    }
    if (from.dtype() == DType::f32 && half_out) {
        const float* in = from.data<float>();
        auto* o = static_cast<uint16_t*>(out.raw_data());
        uint16_t (*narrow)(float) = to == DType::f16 ? float_to_half : float_to_bfloat16;
        for (int64_t i = 0; i < n; ++i) o[i] = narrow(in[i]);
        return out;
    }
    MT_FAIL("cannot cast ", from.describe(), " to ", dtype_name(to), " (f32 <-> f16 / bf16 only)");
}

}  // namespace mt
