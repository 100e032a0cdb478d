// FP8 settings: one layer's (TransformerConfig::fp8: whether its linears run their GEMMs in FP8,
// Megatron's fp8_autocast around the layer, and in which format) and the model's flags that
// decide them (mt/nn/fp8.h has the quantization).
#pragma once

#include <cstdint>
#include <memory>

#include "mt/api.h"
#include "mt/nn/fp8_scaling.h"
#include "mt/op_types.h"

namespace mt::nn {

// --fp8-recipe: how operands are scaled. tensorwise: each by its current amax (Transformer
// Engine's Float8CurrentScaling); delayed: by earlier amaxes (DelayedScaling,
// mt/nn/fp8_scaling.h); mxfp8: each block of 32 elements along the GEMM's summed
// dimension by its own power of two (MXFP8BlockScaling); blockwise: blocks of 128 (128 x 128
// tiles of the weights), power-of-two scales (Float8BlockScaling).
enum class Fp8Recipe : uint8_t { tensorwise, delayed, mxfp8, blockwise };

struct Fp8Config {
    bool enabled = false;
    bool hybrid = true;  // --fp8-format hybrid: E5M2 gradients; e4m3: E4M3 for all
    Fp8Recipe recipe = Fp8Recipe::tensorwise;
    bool wgrad_fp8 = true;  // false (--no-fp8-wgrad): dW = dy^T x on the unquantized operands
    // The model's FP8 state (its passes, the delayed recipe's meters); null outside a model,
    // where every use quantizes the weight anew (the delayed recipe needs one).
    std::shared_ptr<Fp8Scaling> scaling;
    ops::Fp8Type forward_type() const { return ops::Fp8Type::e4m3; }
    ops::Fp8Type grad_type() const { return hybrid ? ops::Fp8Type::e5m2 : ops::Fp8Type::e4m3; }
};

// What the flags ask of the model: --fp8-format (none: FP8 off), --fp8-recipe (tensorwise,
// mxfp8, blockwise, or delayed with its --fp8-amax-history-len, --fp8-amax-compute-algo,
// --fp8-margin and --no-fp8-wgrad; core_v0.19's custom is refused when read), and
// --first-last-layers-bf16 with --num-layers-at-start-in-bf16 / --num-layers-at-end-in-bf16.
struct Fp8Args {
    Fp8Config config;  // config.scaling stays null: each model makes its own
    Fp8DelayedRecipe delayed_recipe;
    int64_t bf16_layers_at_start = 0, bf16_layers_at_end = 0;  // 0 without --first-last-layers-bf16
    // Megatron's is_first_last_bf16_layer: `layer` (global, 0-based) of `num_layers` runs in
    // FP8 unless among the first or last layers kept in bf16.
    MT_API bool fp8_layer(int64_t layer, int64_t num_layers) const;
};

}  // namespace mt::nn
