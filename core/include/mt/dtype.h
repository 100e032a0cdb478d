// Element types of tensors and their sizes and names.
#pragma once

#include <cstdint>
#include <string_view>

#include "mt/api.h"

namespace mt {

enum class DType : uint8_t { f32, f64, f16, bf16, i8, i16, i32, i64, u8, u16, boolean };

MT_API int64_t dtype_size(DType dtype);
MT_API std::string_view dtype_name(DType dtype);

// The float an IEEE half (f16) or a bfloat16 holds, given its bits (exact: both widen).
MT_API float half_to_float(uint16_t bits);
MT_API float bfloat16_to_float(uint16_t bits);
// The nearest half / bfloat16 (ties to even, as torch's .half() / .bfloat16()); overflow gives
// infinity, NaN stays NaN.
MT_API uint16_t float_to_half(float value);
MT_API uint16_t float_to_bfloat16(float value);

// The DType that stores C++ type T.
template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
    return DType::f32;
}
template <>
constexpr DType dtype_of<double>() {
    return DType::f64;
}
template <>
constexpr DType dtype_of<int8_t>() {
    return DType::i8;
}
template <>
constexpr DType dtype_of<int16_t>() {
    return DType::i16;
}
template <>
constexpr DType dtype_of<int32_t>() {
    return DType::i32;
}
template <>
constexpr DType dtype_of<int64_t>() {
    return DType::i64;
}
template <>
constexpr DType dtype_of<uint8_t>() {
    return DType::u8;
}
template <>
constexpr DType dtype_of<uint16_t>() {
    return DType::u16;
}
template <>
constexpr DType dtype_of<bool>() {
    return DType::boolean;
}

}  // namespace mt
