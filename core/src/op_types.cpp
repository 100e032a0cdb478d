// The small functions of the op vocabulary (mt/op_types.h).
#include "mt/op_types.h"

#include <algorithm>
#include <cmath>

namespace mt::ops {

const char* fp8_type_name(Fp8Type type) {
    return type == Fp8Type::e4m3 ? "e4m3" : "e5m2";
}

float fp8_max(Fp8Type type) {
    return type == Fp8Type::e4m3 ? 448.0f : 57344.0f;
}

const char* unary_op_name(UnaryOp op) {
    switch (op) {
        case UnaryOp::gelu:
            return "gelu";
        case UnaryOp::gelu_erf:
            return "gelu_erf";
        case UnaryOp::silu:
            return "silu";
        case UnaryOp::quick_gelu:
            return "quick_gelu";
        case UnaryOp::relu:
            return "relu";
        case UnaryOp::squared_relu:
            return "squared_relu";
        case UnaryOp::tanh:
            return "tanh";
        case UnaryOp::exp:
            return "exp";
        case UnaryOp::log:
            return "log";
    }
    return "unknown";
}

uint64_t attention_dropout_counters(const Tensor& q, int64_t keys) {
    MT_CHECK(q.dim() == 4, "attention_dropout_counters: q must be (B, T, nq, hd), got ",
             q.describe());
    return uint64_t(q.size(0) * q.size(2) * q.size(1) * keys);
}

namespace {

// Llama 3.x's frequency rescaling (Megatron's RotaryEmbedding._apply_scaling, which fixes
// low_freq_factor 1, high_freq_factor 4 and original_max_position_embeddings 8192) in the
// arithmetic type F, each torch op one rounding: `a / t` is reciprocal(t) * a there.
template <class F>
F llama3_scaled(F freq, F factor) {
    const F context = F(8192), low = F(1), high = F(4);
    const F wavelen = (F(1) / freq) * F(6.283185307179586476925);
    const F low_wavelen = context / low, high_wavelen = context / high;
    const F scaled = wavelen > low_wavelen ? freq / factor : freq;
    if (wavelen < high_wavelen || wavelen > low_wavelen) return scaled;
    const F smooth = ((F(1) / wavelen) * context - low) / (high - low);
    return (F(1) - smooth) * scaled / factor + smooth * scaled;
}

// YaRN's blend weight of the unscaled frequency i of R/2 (YarnRotaryEmbedding.forward:
// 1 - clamp((i - low) / (high - low), 0, 1) between the correction dims, in F).
template <class F>
F yarn_extrapolation_weight(const RopeConfig& c, int64_t i) {
    // _yarn_find_correction_dim in Python floats, floored / ceiled (unless not rounded) and
    // clamped to [0, R - 1].
    auto correction_dim = [&](double rotations) {
        return (double(c.rotary_dim) *
                std::log(double(c.yarn_original_max_positions) /
                         (rotations * 2 * 3.141592653589793238462643383279502884))) /
               (2 * std::log(c.base));
    };
    const double fast = correction_dim(c.yarn_beta_fast), slow = correction_dim(c.yarn_beta_slow);
    const double low = std::max(c.yarn_round_to_int ? std::floor(fast) : fast, 0.0);
    double high = std::min(c.yarn_round_to_int ? std::ceil(slow) : slow, double(c.rotary_dim - 1));
    if (low == high) high += 0.001;  // Megatron's guard against a zero-width ramp
    const F ramp = std::clamp((F(i) - F(low)) / F(high - low), F(0), F(1));
    return F(1) - ramp;
}

template <class F>
std::vector<double> inverse_frequencies(const RopeConfig& c) {
    std::vector<double> out;
    for (int64_t i = 0; i < c.rotary_dim / 2; ++i) {
        // 1.0 / base ** (arange(0, R, 2) / R)
        const F power = std::pow(F(c.base), F(2 * i) / F(c.rotary_dim));
        F inv = F(1) / power;
        if (c.llama3_scaling_factor > 0) inv = llama3_scaled(inv, F(c.llama3_scaling_factor));
        if (c.yarn_scaling_factor > 0) {
            const F interpolated = F(1) / (F(c.yarn_scaling_factor) * power);
            const F weight = yarn_extrapolation_weight<F>(c, i);
            inv = interpolated * (F(1) - weight) + inv * weight;
        }
        out.push_back(double(inv));
    }
    return out;
}

}  // namespace

double yarn_mscale(double scale, double mscale) {
    return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

double yarn_concentration(double scale, double mscale, double mscale_all_dim) {
    return yarn_mscale(scale, mscale) / yarn_mscale(scale, mscale_all_dim);
}

std::vector<double> rope_inverse_frequencies(const RopeConfig& config, bool f32) {
    MT_CHECK(config.rotary_dim > 0 && config.rotary_dim % 2 == 0,
             "rope: the rotary dim must be even and > 0, got ", config.rotary_dim);
    MT_CHECK(config.base > 0, "rope: the rotary base must be positive, got ", config.base);
    MT_CHECK(
        config.yarn_scaling_factor == 0 || (config.yarn_original_max_positions > 0 &&
                                            config.yarn_beta_fast > 0 && config.yarn_beta_slow > 0),
        "rope: YaRN needs a positive original context and betas, got ",
        config.yarn_original_max_positions, ", ", config.yarn_beta_fast, ", ",
        config.yarn_beta_slow);
    return f32 ? inverse_frequencies<float>(config) : inverse_frequencies<double>(config);
}

}  // namespace mt::ops
