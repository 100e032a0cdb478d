// CPU traversal of the counter-based noises (f32, f64 and bf16): dropout and the uniform scaling
// of input jitter, one Philox block per four counters, drawn at SIMD width a chunk at a time
// (philox_words), chunks spread over OpenMP threads. The mask and factors are mt/kernels/rng.h's
// Dropout and UniformScale.
#include "cpu_backend.h"

#include <algorithm>
#include <limits>

#include "half_as_float.h"
#include "mt/kernels/rng.h"
#include "op_support.h"
#include "philox_vector.h"

namespace mt::cpu {

using detail::check_float;
using detail::check_float_shape;
using detail::in_t;
using detail::kParallelMin;
using detail::out_t;
using detail::with_float;

namespace {

// Philox blocks drawn at once (philox_words) per chunk of a thread's share.
constexpr int64_t kChunkBlocks = 256;

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
    const int64_t chunks = (blocks + kChunkBlocks - 1) / kChunkBlocks;
    detail::with_float_or_bf16(src.dtype(), [&](auto t) {
        using S = decltype(t);
        using E = detail::Element<S>;
        const S* s = in_t<S>(src);
        S* d = out_t<S>(dst);
#pragma omp parallel for schedule(static) if (int64_t(n) >= kParallelMin)
        for (int64_t c = 0; c < chunks; ++c) {
            uint32_t words[4 * kChunkBlocks];
            const uint64_t block0 = first + uint64_t(c * kChunkBlocks);
            const int64_t count = std::min(kChunkBlocks, blocks - c * kChunkBlocks);
            philox_words(seed, block0, count, words);
            // The chunk's counters that fall in [offset, offset + n), as element indices.
            const uint64_t j0 = std::max(block0 * 4, offset), i0 = j0 - offset;
            const uint64_t i1 = std::min(n, i0 + (uint64_t(count) * 4 - (j0 - block0 * 4)));
            const uint32_t* bits = words + (j0 - block0 * 4);
            // A copy of the functor whose address nothing else holds: its fields stay in
            // registers against the stores to d, and the loop vectorises.
            const Noisy local = noisy;
            const S* x = s + i0;
            detail::store_values(d + i0, int64_t(i1 - i0),
                                 [&](int64_t i) { return local(E::load(x[i]), bits[i]); });
        }
    });
}

// dst[i] = src[i] * keep(offset + i) * scale; forward and backward differ only in the name.
void apply_mask(const char* op, const Tensor& src, float p, uint64_t seed, uint64_t offset,
                Tensor& dst, bool backward) {
    MT_CHECK(p >= 0.0f && p <= 1.0f, op, ": drop probability must be in [0, 1], got ", p);
    const k::Dropout drop = k::Dropout::make(p, seed, offset);
    const uint32_t threshold = drop.keep_threshold();
    apply_noise(op, backward ? "dy" : "x", backward ? "dx" : "y", src, seed, offset, dst,
                [drop, threshold](auto v, uint32_t bits) {
                    return drop.masked(v, bits, threshold);  // forward and backward alike
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
    apply_noise("uniform_scale", "x", "y", x, seed, offset, y, [noise](auto v, uint32_t bits) {
        return v * decltype(v)(noise.factor_bits(bits));
    });
}

}  // namespace mt::cpu
