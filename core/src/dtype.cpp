#include "mt/dtype.h"

#include "mt/kernels/bf16.h"

#include <cmath>
#include <cstring>

#include "mt/error.h"

namespace mt {

int64_t dtype_size(DType dtype) {
    switch (dtype) {
        case DType::f64:
        case DType::i64:
            return 8;
        case DType::f32:
        case DType::i32:
            return 4;
        case DType::f16:
        case DType::bf16:
        case DType::i16:
        case DType::u16:
            return 2;
        case DType::i8:
        case DType::u8:
        case DType::boolean:
            return 1;
    }
    MT_FAIL("unknown dtype ", static_cast<int>(dtype));
}

std::string_view dtype_name(DType dtype) {
    switch (dtype) {
        case DType::f32:
            return "f32";
        case DType::f64:
            return "f64";
        case DType::f16:
            return "f16";
        case DType::bf16:
            return "bf16";
        case DType::i8:
            return "i8";
        case DType::i16:
            return "i16";
        case DType::i32:
            return "i32";
        case DType::i64:
            return "i64";
        case DType::u8:
            return "u8";
        case DType::u16:
            return "u16";
        case DType::boolean:
            return "bool";
    }
    return "?";
}

float half_to_float(uint16_t h) {
    const uint32_t sign = (h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1F;
    const uint32_t mant = h & 0x3FF;
    if (exp == 0) return (sign ? -1.0f : 1.0f) * std::ldexp(static_cast<float>(mant), -24);
    uint32_t bits =
        exp == 31 ? sign | 0x7F800000u | (mant << 13) : sign | ((exp + 112) << 23) | (mant << 13);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

float bfloat16_to_float(uint16_t b) {
    return k::bf16_to_float(b);
}

uint16_t float_to_bfloat16(float f) {
    return k::float_to_bf16(f);
}

uint16_t float_to_half(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t exp = (x >> 23) & 0xFFu;
    uint32_t mant = x & 0x7FFFFFu;
    if (exp == 0xFF) return uint16_t(sign | 0x7C00u | (mant ? 0x200u : 0));  // inf, NaN
    const int e = int(exp) - 127 + 15;
    if (e >= 31) return uint16_t(sign | 0x7C00u);  // beyond the largest half
    // Drops `shift` low bits of the (implicit-1) mantissa, rounding to nearest, ties to even; a
    // carry may step into the exponent (or to infinity), which is right.
    auto round = [](uint32_t m, int shift) {
        const uint32_t kept = m >> shift, rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        return kept + (rest > half || (rest == half && (kept & 1)) ? 1u : 0u);
    };
    if (e <= 0) {  // a subnormal half (or zero)
        if (e < -10) return uint16_t(sign);
        return uint16_t(sign | round(mant | 0x800000u, 14 - e));
    }
    return uint16_t(sign | round((uint32_t(e) << 23) | mant, 13));
}

}  // namespace mt
