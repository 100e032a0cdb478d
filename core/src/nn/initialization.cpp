#include "mt/nn/initialization.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "mt/checkpoint/reshard.h"
#include "mt/kernels/rng.h"

namespace mt::nn {

namespace {

// 64-bit FNV-1a of a parameter's name: its Philox stream.
uint64_t name_hash(const std::string& name) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char ch : name) h = (h ^ ch) * 0x100000001b3ull;
    return h;
}

// Block b of a parameter's Philox stream: the counter holds the block and the stream, the key the
// seed.
k::Philox4 stream_block(uint64_t b, uint64_t seed, uint64_t stream) {
    return k::philox4x32_10(
        k::Philox4{{uint32_t(b), uint32_t(b >> 32), uint32_t(stream), uint32_t(stream >> 32)}},
        uint32_t(seed), uint32_t(seed >> 32));
}

// value[i] = std * N(0, 1): each Philox block gives two Box-Muller pairs (four elements).
template <class T>
void fill_normal(std::vector<T>& value, double stddev, uint64_t seed, uint64_t stream) {
    const int64_t n = int64_t(value.size());
    constexpr double kTwoPi = 6.283185307179586476925, k2to32 = 4294967296.0;
    for (int64_t b = 0; b * 4 < n; ++b) {
        const k::Philox4 w = stream_block(uint64_t(b), seed, stream);
        for (int pair = 0; pair < 2; ++pair) {
            const double u1 = (double(w.v[2 * pair]) + 0.5) / k2to32;  // in (0, 1): log is finite
            const double u2 = double(w.v[2 * pair + 1]) / k2to32;
            const double r = std::sqrt(-2.0 * std::log(u1)) * stddev;
            const int64_t i = 4 * b + 2 * pair;
            if (i < n) value[i] = T(r * std::cos(kTwoPi * u2));
            if (i + 1 < n) value[i + 1] = T(r * std::sin(kTwoPi * u2));
        }
    }
}

// value[i] = U(0, 1) from the same stream layout (one Philox block per four elements).
void fill_uniform01(std::vector<double>& value, uint64_t seed, uint64_t stream) {
    for (size_t b = 0; b * 4 < value.size(); ++b) {
        const k::Philox4 w = stream_block(b, seed, stream);
        for (size_t j = 0; j < 4 && 4 * b + j < value.size(); ++j)
            value[4 * b + j] = (double(w.v[j]) + 0.5) / 4294967296.0;
    }
}

// A parameter its module initialises its own way (ParameterInit), drawn whole in f64.
std::vector<double> draw_special(const Parameter& p, const InitConfig& config) {
    std::vector<double> v(size_t(shape_numel(p.whole_shape)));
    const ParameterInit& init = p.init;
    if (init.kind == ParameterInit::Kind::normal) {
        fill_normal(v, config.init_method_std, config.seed, name_hash(p.name));
        return v;
    }
    if (init.kind == ParameterInit::Kind::residual_normal) {
        fill_normal(v, config.init_method_std / std::sqrt(double(config.num_layers)), config.seed,
                    name_hash(p.name));
        return v;
    }
    fill_uniform01(v, config.seed, name_hash(p.name));
    for (double& u : v) {
        switch (init.kind) {
            case ParameterInit::Kind::uniform:
                u = init.low + u * (init.high - init.low);
                break;
            case ParameterInit::Kind::log_uniform:
                u = std::log(init.low + u * (init.high - init.low));
                break;
            case ParameterInit::Kind::dt_bias: {
                const double lo = std::log(init.low), hi = std::log(init.high);
                const double dt = std::max(std::exp(lo + u * (hi - lo)), 1e-4);
                u = dt + std::log(-std::expm1(-dt));  // softplus(u) = dt
                break;
            }
            default:
                break;
        }
    }
    return v;
}

}  // namespace

void initialize_megatron(Backend& backend, const std::vector<Parameter*>& params,
                         const InitConfig& config) {
    const uint64_t seed = config.seed;
    const double stddev = config.init_method_std;
    const double output_stddev = stddev / std::sqrt(2.0 * double(config.num_layers));
    for (Parameter* p : params) {
        const std::string& name = p->name;
        Tensor& v = p->value;
        const bool f64 = v.dtype() == DType::f64;
        if (p->init.kind != ParameterInit::Kind::megatron) {
            backend.cast(shard_tensor(host_tensor(draw_special(*p, config), p->whole_shape),
                                      p->shard, p->tp_size, p->tp_rank),
                         v);
            continue;
        }
        if (v.dim() == 1) {
            // Biases are 0; the only other vectors are norm weights: gamma = 1, stored as
            // gamma - 1 = 0 with --apply-layernorm-1p.
            // (Transformer Engine's grouped experts number theirs: "linear_fc1.bias3".)
            const bool norm_weight =
                !name.substr(0, name.find_last_not_of("0123456789") + 1).ends_with("bias");
            const double value = norm_weight && !config.apply_layernorm_1p ? 1.0 : 0.0;
            backend.fill(v, value);
            continue;
        }
        const bool output_projection = name.ends_with(".self_attention.linear_proj.weight") ||
                                       name.ends_with(".mlp.linear_fc2.weight");
        const double s = (output_projection ? output_stddev : stddev) /
                         (p->mup_hidden ? std::sqrt(config.mup_width_mult) : 1.0);
        // The whole tensor is drawn on the host and this rank's piece kept, so every
        // tensor-parallel layout starts from the same model.
        auto draw = [&](auto zero) {
            std::vector<decltype(zero)> whole(size_t(shape_numel(p->whole_shape)));
            fill_normal(whole, s, seed, name_hash(name));
            // A bf16 model draws in f32 and rounds, as torch's normal_ on a bf16 tensor does.
            backend.cast(shard_tensor(host_tensor(std::move(whole), p->whole_shape), p->shard,
                                      p->tp_size, p->tp_rank),
                         v);
        };
        f64 ? draw(0.0) : draw(0.0f);
    }
}

}  // namespace mt::nn
