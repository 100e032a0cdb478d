// CPU traversal of the counter-based noises (f32 and f64): dropout and the uniform scaling of
// input jitter, one Philox block per four counters, blocks spread over OpenMP threads. The mask
// and factors are mt/kernels/rng.h's Dropout and UniformScale.
#include "cpu_backend.h"

#include <limits>

#include "half_as_float.h"
#include "mt/kernels/rng.h"
#include "op_support.h"

namespace mt::cpu {

using detail::check_float;
using detail::check_float_shape;
using detail::in_t;
using detail::kParallelMin;
using detail::out_t;
using detail::with_float;

namespace {

// dst[i] = noisy(src[i], bits of counter offset + i): checks and traversal of every noise op.
template <class Noisy>
void apply_noise(const char* op, const char* src_name, const char* dst_name, const Tensor& src,
                 uint64_t seed, uint64_t offset, Tensor& dst, const Noisy& noisy) {
    detail::check_float_or_bf16(op, src_name, src);
    detail::check_float_or_bf16_shape(op, dst_name, dst, src.shape(), src.dtype());
    const uint64_t n = uint64_t(src.numel());
    if (n == 0) return;
    MT_CHECK(offset <= std::numeric_limits<uint64_t>::max() - n, op, ": offset ", offset, " + ", n,
             " elements overflows the 64-bit counter");
    const uint64_t first = offset >> 2, last = (offset + n - 1) >> 2;
    const int64_t blocks = int64_t(last - first + 1);
    detail::with_float_or_bf16(src.dtype(), [&](auto t) {
        using S = decltype(t);
        using E = detail::Element<S>;
        const S* s = in_t<S>(src);
        S* d = out_t<S>(dst);
#pragma omp parallel for schedule(static) if (int64_t(n) >= kParallelMin)
        for (int64_t b = 0; b < blocks; ++b) {
            const uint64_t block = first + uint64_t(b);
            const k::Philox4 bits = k::philox_block(seed, block);
            for (uint64_t lane = 0; lane < 4; ++lane) {
                const uint64_t j = block * 4 + lane;  // counter position
                if (j < offset || j - offset >= n) continue;
                const uint64_t i = j - offset;
                d[i] = E::store(noisy(E::load(s[i]), bits.v[lane]));
            }
        }
    });
}

// dst[i] = src[i] * keep(offset + i) * scale; forward and backward differ only in the name.
void apply_mask(const char* op, const Tensor& src, float p, uint64_t seed, uint64_t offset,
                Tensor& dst, bool backward) {
    MT_CHECK(p >= 0.0f && p <= 1.0f, op, ": drop probability must be in [0, 1], got ", p);
    const k::Dropout drop = k::Dropout::make(p, seed, offset);
    apply_noise(op, backward ? "dy" : "x", backward ? "dx" : "y", src, seed, offset, dst,
                [&](auto v, uint32_t bits) {
                    const bool kept = drop.keep_bits(bits);
                    return backward ? drop.bwd(v, kept) : drop.fwd(v, kept);
                });
}

}  // namespace

void CpuBackend::dropout_forward(const Tensor& x, float p, uint64_t seed, uint64_t offset,
                                 Tensor& y) {
    if (any_f16({&x, &y}) || x.dtype() != y.dtype()) {
        HalfAsFloat h;
        dropout_forward(h.in(x), p, seed, offset, h.out(y));
        return h.finish();
    }
    apply_mask("dropout_forward", x, p, seed, offset, y, false);
}

void CpuBackend::dropout_backward(const Tensor& dy, float p, uint64_t seed, uint64_t offset,
                                  Tensor& dx) {
    if (any_f16({&dy, &dx}) || dy.dtype() != dx.dtype()) {
        HalfAsFloat h;
        dropout_backward(h.in(dy), p, seed, offset, h.out(dx));
        return h.finish();
    }
    apply_mask("dropout_backward", dy, p, seed, offset, dx, true);
}

void CpuBackend::uniform_scale(const Tensor& x, float low, float high, uint64_t seed,
                               uint64_t offset, Tensor& y) {
    if (any_f16({&x, &y}) || x.dtype() != y.dtype()) {
        HalfAsFloat h;
        uniform_scale(h.in(x), low, high, seed, offset, h.out(y));
        return h.finish();
    }
    MT_CHECK(low <= high, "uniform_scale: low ", low, " above high ", high);
    const k::UniformScale noise{low, high};
    apply_noise("uniform_scale", "x", "y", x, seed, offset, y,
                [&](auto v, uint32_t bits) { return v * decltype(v)(noise.factor_bits(bits)); });
}

}  // namespace mt::cpu
