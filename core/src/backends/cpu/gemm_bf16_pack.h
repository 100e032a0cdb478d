// What the two bf16 GEMM kernels (gemm_bf16.cpp: vdpbf16ps; gemm_bf16_amx.cpp: AMX tiles) share:
// packing operands into the pair layout both multiply from (pairs of consecutive k side by side in
// one 32-bit word, as vdpbf16ps and AMX's tdpbf16ps read them), and rounding f32 sums into a bf16
// C. Internal to the CPU backend; AVX-512 code, called only where the CPU has AVX512-BF16.
#pragma once

// GCC 12's AVX-512 headers self-initialise their "undefined" vectors (GCC PR 105593), which
// -Wuninitialized then reports wherever those intrinsics are inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cstdint>

namespace mt::cpu::bf16_pack {

constexpr int64_t kLanes = 16;  // f32 (or packed pair) lanes of a zmm

// op(X) seen as a W-wide operand: element (x, kk) is row x of op(A) or column x of op(B), at
// index kk of the k dimension, which is contiguous in memory (k_contiguous) or strided by ld.
struct Operand {
    const uint16_t* data;
    int64_t ld;
    bool k_contiguous;
};

#define MT_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// Transposes 16 x 16 32-bit words: word j of rows[i] moves to word i of rows[j].
MT_BF16_TARGET inline void transpose16(__m512i rows[16]) {
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(rows[i], rows[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(rows[i], rows[i + 1]);
    }
    // u[4g + c], 128-bit lane l: column 4l + c of rows 4g..4g+3.
    __m512i u[16];
    for (int g = 0; g < 4; ++g) {
        u[4 * g + 0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
        u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
        u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
        u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
    }
    // For each c, a 4 x 4 transpose of 128-bit lanes across the four row groups.
    for (int c = 0; c < 4; ++c) {
        const __m512i v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44);
        const __m512i v1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xEE);
        const __m512i v2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44);
        const __m512i v3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xEE);
        rows[c] = _mm512_shuffle_i32x4(v0, v2, 0x88);
        rows[4 + c] = _mm512_shuffle_i32x4(v0, v2, 0xDD);
        rows[8 + c] = _mm512_shuffle_i32x4(v1, v3, 0x88);
        rows[12 + c] = _mm512_shuffle_i32x4(v1, v3, 0xDD);
    }
}

// Lanes [0, n) of a mask, n clamped to [0, bits].
inline uint32_t low_bits(int64_t n, int bits) {
    n = std::clamp<int64_t>(n, 0, bits);
    return n == 32 ? ~0u : (1u << n) - 1;
}

// Stores the 16 words of pair p of a chunk whose first element is at `panel` (see pack_chunk).
template <int64_t W>
MT_BF16_TARGET void store_chunk(uint32_t* panel, int64_t kp, int64_t p, __m512i v) {
    if constexpr (W % kLanes == 0) {
        _mm512_storeu_si512(panel + p * W, v);
    } else {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(panel + p * W), _mm512_castsi512_si256(v));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(panel + W * kp + p * W),
                            _mm512_extracti64x4_epi64(v, 1));
    }
}

// The first `valid` of 16 bf16 values at `from` (zeros after), widened to 32-bit words.
MT_BF16_TARGET inline __m512i load_widened(const uint16_t* from, int64_t valid) {
    return _mm512_cvtepu16_epi32(
        valid == kLanes ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from))
                        : _mm256_maskz_loadu_epi16(__mmask16(low_bits(valid, 16)), from));
}

// Packs the 16 elements x in [x0, x0 + 16) of `src` (those at or past `count` as zeros), pairs
// [p_first, p_last) of k (a multiple of 16 apart unless p_last ends k), into their W-wide panels in
// the pair layout: panel x / W lies at out + (x / W) W kp_stride, kp_stride >= (k + 1) / 2 pairs
// apart (pairs past k are the caller's to fill). W is a multiple of 16, or 8 (the chunk then
// fills two panels). Masked loads take the ragged edges, so padding comes out zero.
template <int64_t W>
MT_BF16_TARGET void pack_chunk(const Operand& src, int64_t count, int64_t k, int64_t kp_stride,
                               int64_t x0, int64_t p_first, int64_t p_last, uint32_t* out) {
    static_assert(W % kLanes == 0 || W == kLanes / 2);
    const int64_t kp = kp_stride;
    const int64_t valid = std::clamp<int64_t>(count - x0, 0, kLanes);
    uint32_t* panel = out + x0 / W * W * kp + x0 % W;
    if (src.k_contiguous) {
        // 16 elements x 16 pairs at a time: each element's pairs are 32-bit words of its row.
        for (int64_t p0 = p_first; p0 < p_last; p0 += kLanes) {
            const __mmask32 in_k = low_bits(k - 2 * p0, 32);
            __m512i rows[16];
            for (int r = 0; r < 16; ++r) {
                const uint16_t* from = src.data + (x0 + r) * src.ld + 2 * p0;
                rows[r] = r >= valid    ? _mm512_setzero_si512()
                          : in_k == ~0u ? _mm512_loadu_si512(from)
                                        : _mm512_maskz_loadu_epi16(in_k, from);
            }
            transpose16(rows);
            for (int64_t t = 0; t < std::min(kLanes, p_last - p0); ++t) {
                store_chunk<W>(panel, kp, p0 + t, rows[t]);
            }
        }
    } else {
        // Rows 2p and 2p+1 of the operand, interleaved by widening to 32 bits.
        const uint16_t* row = src.data + p_first * 2 * src.ld + x0;
        for (int64_t p = p_first; p < p_last; ++p, row += 2 * src.ld) {
            const __m512i odd =
                2 * p + 1 < k ? load_widened(row + src.ld, valid) : _mm512_setzero_si512();
            store_chunk<W>(panel, kp, p,
                           _mm512_or_si512(load_widened(row, valid), _mm512_slli_epi32(odd, 16)));
        }
    }
}

// Elements packed per task: whole panels of A (8) and B (48), a few 16-element chunks.
constexpr int64_t kPackGroup = 96;

// Packs elements [x0, min(x0 + kPackGroup, end)) of `src` (see pack_chunk), W-wide panels
// kp_stride pairs apart, the pairs past k (up to kp_stride) zero. When k is strided, each run of
// 32 rows is packed for every chunk before moving on, so the cache lines of those rows are read
// from memory once rather than once per chunk.
template <int64_t W>
MT_BF16_TARGET void pack_group(const Operand& src, int64_t count, int64_t end, int64_t k,
                               int64_t kp_stride, int64_t x0, uint32_t* out) {
    static_assert(kPackGroup % W == 0);
    const int64_t kp = (k + 1) / 2;
    const int64_t x_end = std::min(x0 + kPackGroup, end);
    const int64_t p_step = src.k_contiguous ? kp : kLanes;
    for (int64_t p = 0; p < kp; p += p_step) {
        for (int64_t x = x0; x < x_end; x += kLanes) {
            pack_chunk<W>(src, count, k, kp_stride, x, p, std::min(kp, p + p_step), out);
        }
    }
    if (kp_stride == kp) return;
    // Whole panels: x0 and end (the callers' padded counts) are multiples of W.
    for (int64_t panel = x0 / W; panel < x_end / W; ++panel)
        std::fill(out + (panel * kp_stride + kp) * W, out + (panel + 1) * kp_stride * W, 0u);
}

// c (bf16, rows x cols, stride ldc) = round(sum + beta c), sum being f32 with stride lds.
MT_BF16_TARGET inline void round_to_bf16(const float* sum, int64_t lds, int64_t rows, int64_t cols,
                                         float beta, uint16_t* c, int64_t ldc) {
    const __m512 beta_v = _mm512_set1_ps(beta);
    for (int64_t i = 0; i < rows; ++i, sum += lds, c += ldc) {
        for (int64_t j = 0; j < cols; j += kLanes) {
            const __mmask16 in = __mmask16(low_bits(cols - j, 16));
            __m512 r = _mm512_maskz_loadu_ps(in, sum + j);
            if (beta != 0.0f) {
                const __m512i old = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(in, c + j));
                r = _mm512_fmadd_ps(beta_v, _mm512_castsi512_ps(_mm512_slli_epi32(old, 16)), r);
            }
            _mm256_mask_storeu_epi16(c + j, in, (__m256i)_mm512_cvtneps_pbh(r));
        }
    }
}

// Whether a product is worth the OpenMP threads: below this much work the fork/join costs more
// than a second thread gains.
inline bool worth_threads(int64_t m, int64_t n, int64_t k) {
    return m * n * k >= (int64_t(1) << 21);
}

inline int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

}  // namespace mt::cpu::bf16_pack
