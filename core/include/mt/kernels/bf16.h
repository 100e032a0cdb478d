// bfloat16 <-> float, written once for the CPU loops and the CUDA kernels: a bfloat16 is the top
// half of a float's bits, so widening is exact and narrowing rounds to nearest, ties to even (as
// torch's .bfloat16()), NaN staying a quiet NaN.
#pragma once

#include <string.h>

#include "mt/kernels/hd.h"

namespace mt::k {

MT_HD float bf16_to_float(uint16_t b) {
    const uint32_t bits = uint32_t(b) << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

// Both results computed and one selected, without a branch, so that loops over arrays of them
// vectorise.
MT_HD uint16_t float_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint32_t rounded = (x + 0x7FFFu + ((x >> 16) & 1)) >> 16;  // ties to even
    const uint32_t quiet_nan = (x >> 16) | 0x40;
    return uint16_t((x & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : rounded);
}

}  // namespace mt::k
