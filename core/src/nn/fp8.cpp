// Transformer Engine's current scaling of an FP8 operand, and which layers run in FP8.
#include "mt/nn/fp8.h"

#include <cmath>
#include <limits>

#include "mt/backend.h"

namespace mt::nn {

namespace {

// The largest finite value of the dtype TE quantizes from (its value_for_inf).
float largest_finite(DType dtype) {
    switch (dtype) {
        case DType::bf16:
            return 3.38953139e38f;  // 0x7F7F
        case DType::f16:
            return 65504.0f;
        default:
            return std::numeric_limits<float>::max();
    }
}

}  // namespace

bool Fp8Args::fp8_layer(int64_t layer, int64_t num_layers) const {
    return config.enabled && layer >= bf16_layers_at_start &&
           layer < num_layers - bf16_layers_at_end;
}

float fp8_current_scale(double amax, ops::Fp8Type type, DType input) {
    const float a = float(amax);
    if (std::isinf(a) || std::isnan(a) || a == 0.0f) return 1.0f;
    const float scale = ops::fp8_max(type) / a;
    return std::isinf(scale) ? largest_finite(input) : scale;
}

Tensor fp8_quantized(Backend& backend, const Tensor& x, float scale, ops::Fp8Type type) {
    const Tensor in = backend.contiguous(x);
    Tensor y = backend.empty(in.shape(), DType::f32);
    backend.fp8_quantize(in, scale, type, y);
    return y;
}

Tensor fp8_current_scaling(Backend& backend, const Tensor& x, ops::Fp8Type type) {
    const Tensor in = backend.contiguous(x);
    return fp8_quantized(backend, in, fp8_current_scale(backend.abs_max(in), type, in.dtype()),
                         type);
}

Tensor fp8_blocks(Backend& backend, const Tensor& x, const ops::Fp8Blocks& blocks) {
    const Tensor in = backend.contiguous(x);
    Tensor y = backend.empty(in.shape(), DType::f32);
    backend.fp8_quantize_blocks(in, blocks, y);
    return y;
}

ops::Fp8Blocks fp8_operand_blocks(Fp8Recipe recipe, ops::Fp8Type type, bool weight,
                                  bool down_columns) {
    ops::Fp8Blocks b;
    b.type = type;
    const bool mx = recipe == Fp8Recipe::mxfp8;
    b.scale = mx ? ops::Fp8Blocks::Scale::e8m0 : ops::Fp8Blocks::Scale::power_of_two;
    const int64_t n = mx ? 32 : 128;
    if (!mx && weight) {
        b.rows = b.cols = n;  // Float8BlockScaling's w_block_scaling_dim 2
    } else {
        b.rows = down_columns ? n : 1;
        b.cols = down_columns ? 1 : n;
    }
    return b;
}

LayerSpecs with_fp8_layers(LayerSpecs specs, const Fp8Args& fp8, int64_t num_layers) {
    if (!fp8.config.enabled) return specs;
    return [specs = std::move(specs), fp8, num_layers](int64_t layer) {
        LayerSpec spec = specs(layer);
        const bool enabled = fp8.fp8_layer(layer, num_layers);
        for (SublayerSpec& sublayer : spec.sublayers)
            sublayer.build = [build = std::move(sublayer.build), config = fp8.config, enabled](
                                 const std::string& prefix, const TransformerConfig& layer_config,
                                 Backend& backend) {
                TransformerConfig c = layer_config;
                c.fp8 = config;
                c.fp8.enabled = enabled;
                return build(prefix, c, backend);
            };
        return spec;
    };
}

}  // namespace mt::nn
