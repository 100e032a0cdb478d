// FP8 training as Megatron runs it through Transformer Engine (--fp8-format, --fp8-recipe): the
// GEMMs of the transformer layers' linears take FP8 operands (inputs and weights in E4M3; output
// gradients in E5M2 with --fp8-format hybrid, E4M3 with e4m3), each tensor scaled by its own
// current amax (tensorwise), by earlier ones (delayed: mt/nn/fp8_scaling.h) or per block
// (mxfp8, blockwise), and sum their products in f32. Emulated: each operand is quantized and
// read back in f32 (Backend::fp8_quantize, fp8_quantize_blocks), then multiplied in f32.
#pragma once

#include <cstdint>

#include "mt/api.h"
#include "mt/dtype.h"
#include "mt/nn/fp8_config.h"
#include "mt/nn/layer_spec.h"
#include "mt/op_types.h"
#include "mt/tensor.h"

namespace mt::nn {

// Transformer Engine's current scaling (compute_scale_from_amax with no epsilon or power-of-two
// rounding): the type's largest finite value / amax; 1 when amax is 0, infinite or NaN; the
// input dtype's largest finite value where the quotient overflows.
MT_API float fp8_current_scale(double amax, ops::Fp8Type type, DType input);
// x quantized to `type` with `scale` and read back in f32 (Backend::fp8_quantize).
MT_API Tensor fp8_quantized(Backend& backend, const Tensor& x, float scale, ops::Fp8Type type);
// x quantized to `type` with current scaling and read back in f32: the operand TE's FP8 GEMM
// multiplies, as its reference quantizer (custom_recipes/reference_current_scaling.py) makes it.
MT_API Tensor fp8_current_scaling(Backend& backend, const Tensor& x, ops::Fp8Type type);

// x (R, C) quantized per block and read back in f32 (Backend::fp8_quantize_blocks).
MT_API Tensor fp8_blocks(Backend& backend, const Tensor& x, const ops::Fp8Blocks& blocks);
// The blocks a block-scaled recipe (mxfp8, blockwise) quantizes an operand in, for a GEMM that
// sums over its columns (or, down_columns, its rows): MXFP8's 32 along the summed dimension; the
// blockwise recipe's 128 along it, and 128 x 128 tiles for a weight.
MT_API ops::Fp8Blocks fp8_operand_blocks(Fp8Recipe recipe, ops::Fp8Type type, bool weight,
                                         bool down_columns);

// specs with each layer's TransformerConfig::fp8 set as `fp8` says for it.
MT_API LayerSpecs with_fp8_layers(LayerSpecs specs, const Fp8Args& fp8, int64_t num_layers);

}  // namespace mt::nn
