// MXFP4 (the OCP microscaling format's FP4) as GPT-OSS's released folders pack their experts'
// weights (transformers' Mxfp4 quantization: "<proj>_blocks" and "<proj>_scales").
#pragma once

#include "mt/tensor.h"

namespace mt::plugins::hf {

// blocks [..., G, 16] u8 (32 e2m1 values in 16 bytes, the low nibble first) and scales [..., G]
// u8 (a power of two each, biased by 127) -> [..., G * 32] in `dtype`: each value its e2m1
// number times 2^(scale - 127), as transformers' convert_moe_packed_tensors computes it (exact in
// f32 and bf16).
Tensor dequantize_mxfp4(const Tensor& blocks, const Tensor& scales, DType dtype);

}  // namespace mt::plugins::hf
