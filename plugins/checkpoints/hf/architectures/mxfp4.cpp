#include "mxfp4.h"

#include <cmath>

#include "mt/error.h"

namespace mt::plugins::hf {

Tensor dequantize_mxfp4(const Tensor& blocks, const Tensor& scales, DType dtype) {
    // e2m1: sign, two exponent bits, one mantissa bit.
    static constexpr float kValues[16] = {+0.0f, +0.5f, +1.0f, +1.5f, +2.0f, +3.0f, +4.0f, +6.0f,
                                          -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
    MT_CHECK(blocks.dtype() == DType::u8 && scales.dtype() == DType::u8 && blocks.dim() >= 2 &&
                 blocks.size(-1) == 16 && scales.dim() == blocks.dim() - 1,
             "MXFP4: blocks must be u8 [..., G, 16] and scales u8 [..., G], got ",
             blocks.describe(), " and ", scales.describe());
    Shape out_shape = scales.shape();
    for (int64_t d = 0; d < scales.dim(); ++d)
        MT_CHECK(scales.size(d) == blocks.size(d), "MXFP4: scales ", scales.describe(),
                 " do not match blocks ", blocks.describe());
    out_shape.back() *= 32;
    const Tensor b = blocks.contiguous(), s = scales.contiguous();
    Tensor out = Tensor::empty(out_shape, DType::f32);
    const uint8_t* bp = b.data<uint8_t>();
    const uint8_t* sp = s.data<uint8_t>();
    float* op = out.data<float>();
    const int64_t groups = s.numel();
#pragma omp parallel for schedule(static) if (groups >= 4096)
    for (int64_t g = 0; g < groups; ++g) {
        const int exponent = int(sp[g]) - 127;
        for (int i = 0; i < 16; ++i) {
            const uint8_t byte = bp[g * 16 + i];
            op[g * 32 + 2 * i] = std::ldexp(kValues[byte & 0x0f], exponent);
            op[g * 32 + 2 * i + 1] = std::ldexp(kValues[byte >> 4], exponent);
        }
    }
    return dtype == DType::f32 ? out : cast_float(out, dtype);
}

}  // namespace mt::plugins::hf
