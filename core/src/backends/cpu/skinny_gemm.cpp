// skinny_gemm_nt: several rows of B side by side against a pass of rows of A (AVX-512: four rows
// of A against four or six of B, 16 lanes of k per step; else eight against two to four with AVX2
// and FMA, 8 lanes; else a portable loop), reduced at the end of the row; B in f32 or in bfloat16
// (widened as it is loaded, or dotted as bf16 with AVX512-BF16). One to four rows of A against
// short rows of B (decoding a few tokens) read B a row at a time instead (one_row_of_b).
// grouped_skinny_gemm_nt hands out every group's chunks of B rows in one parallel loop.
#include "skinny_gemm.h"

#include <immintrin.h>

#include <algorithm>

#include "cpu_features.h"
#include "mt/error.h"
#include "mt/kernels/bf16.h"

// GCC 12 reports its own _mm512_reduce_add_ps (an unmasked extract from an undefined source) as
// maybe-uninitialised at every use.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace mt::cpu {

namespace {

constexpr int kRowsPerPass = 8;  // rows of A kept in accumulators at once (AVX2, portable)
// The AVX-512 kernels': four rows of A against six (f32) or four (bf16 dot products) of B fill
// 24 or 16 of its 32 registers with accumulators, which streams the weights faster (1.15-1.25x at
// 4 to 16 rows on Zen 4, 2 threads; bf16 1.3-1.4x at 8 rows) than eight rows against two; the
// sums are the same, lane for lane.
constexpr int kRowsPerPassAvx512 = 4;

// Stores alpha * dot + beta * c (beta 0 ignores what c held, as BLAS does).
inline void store(float* c, float dot, float alpha, float beta) {
    *c = beta == 0.0f ? alpha * dot : alpha * dot + beta * *c;
}

// 16 lanes of a row of B as f32: loaded, or widened from bfloat16 (its bits are a float's top
// half).
__attribute__((target("avx512f"))) inline __m512 load16(const float* p) {
    return _mm512_loadu_ps(p);
}
__attribute__((target("avx512f"))) inline __m512 load16(const uint16_t* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
__attribute__((target("avx512f"))) inline __m512 load16(__mmask16 m, const float* p) {
    return _mm512_maskz_loadu_ps(m, p);
}
// The tail of a bf16 row (the lanes of m, from the first): through a zero-padded copy, as a
// masked 16-bit load needs AVX512BW.
__attribute__((target("avx512f"))) inline __m512 load16(__mmask16 m, const uint16_t* p) {
    alignas(32) uint16_t tail[16] = {};
    for (int l = 0; l < 16 && (m >> l & 1); ++l) tail[l] = p[l];
    return load16(tail);
}
inline float widen(float x) {
    return x;
}
inline float widen(uint16_t x) {
    return k::bf16_to_float(x);
}

// The AVX2 build's horizontal sum: halves added until one lane is left.
__attribute__((target("avx2"))) inline float reduce8(__m256 v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 h = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(h, _mm_shuffle_ps(h, h, 1)));
}

// Rows of B per pass: with few rows of A, four, so that more weight rows stream at once and more
// independent accumulators hide the FMA latency (decoding's one to four tokens per expert).
template <int M>
constexpr int kBRowsPerPass = M <= 4 ? 4 : 2;

template <int M>
constexpr int kBRowsPerPassAvx512 = M == 4 ? 6 : 4;

// Whether a pass of `rows` rows of A reads B a row at a time rather than several rows side by
// side (never past four rows of A): B then streams in address order, which the hardware prefetchers
// follow, where several short rows read side by side are several streams of a few KB each that the
// prefetchers keep losing. On short rows this streams faster: one row of A over 896 columns
// (Qwen2.5-0.5B's width) 1.2-2x, two rows up to 1152 columns 1.7x, four up to 896 1.2x; past these
// lengths the side-by-side rows reuse each loaded row of A more and win (Zen 4, 2 threads; f32 and
// bf16 alike by columns, except that one row of bf16 A over bf16 B wins at every length). The AVX2
// kernel takes the same rule (checked only under MT_CPU_ISA=avx2 on that Zen 4: never slower).
bool one_row_of_b(int rows, int64_t k) {
    return rows <= kRowsPerPassAvx512 && k <= (rows == 1 ? 3072 : rows == 2 ? 2048 : 1152);
}

template <int M, class BT, int NB = kBRowsPerPassAvx512<M>>
__attribute__((target("avx512f,fma"))) void rows_avx512(int64_t n0, int64_t n1, int64_t k,
                                                        float alpha, const float* a, int64_t lda,
                                                        const BT* b, int64_t ldb, float beta,
                                                        float* c, int64_t ldc) {
    const int64_t k16 = k / 16 * 16;
    const __mmask16 tail = __mmask16((1u << (k - k16)) - 1);
    int64_t j = n0;
    for (; j + NB <= n1; j += NB) {
        const BT* bj = b + j * ldb;
        __m512 acc[NB][M];
        for (int q = 0; q < NB; ++q)
            for (int r = 0; r < M; ++r) acc[q][r] = _mm512_setzero_ps();
        for (int64_t i = 0; i < k16; i += 16) {
            __m512 w[NB];
            for (int q = 0; q < NB; ++q) w[q] = load16(bj + q * ldb + i);
            for (int r = 0; r < M; ++r) {
                const __m512 x = _mm512_loadu_ps(a + r * lda + i);
                for (int q = 0; q < NB; ++q) acc[q][r] = _mm512_fmadd_ps(w[q], x, acc[q][r]);
            }
        }
        if (tail) {
            __m512 w[NB];
            for (int q = 0; q < NB; ++q) w[q] = load16(tail, bj + q * ldb + k16);
            for (int r = 0; r < M; ++r) {
                const __m512 x = _mm512_maskz_loadu_ps(tail, a + r * lda + k16);
                for (int q = 0; q < NB; ++q) acc[q][r] = _mm512_fmadd_ps(w[q], x, acc[q][r]);
            }
        }
        for (int r = 0; r < M; ++r)
            for (int q = 0; q < NB; ++q)
                store(c + r * ldc + j + q, _mm512_reduce_add_ps(acc[q][r]), alpha, beta);
    }
    for (; j < n1; ++j) {
        const BT* b0 = b + j * ldb;
        __m512 acc[M];
        for (int r = 0; r < M; ++r) acc[r] = _mm512_setzero_ps();
        for (int64_t i = 0; i < k16; i += 16) {
            const __m512 w0 = load16(b0 + i);
            for (int r = 0; r < M; ++r)
                acc[r] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(a + r * lda + i), acc[r]);
        }
        if (tail) {
            const __m512 w0 = load16(tail, b0 + k16);
            for (int r = 0; r < M; ++r)
                acc[r] =
                    _mm512_fmadd_ps(w0, _mm512_maskz_loadu_ps(tail, a + r * lda + k16), acc[r]);
        }
        for (int r = 0; r < M; ++r)
            store(c + r * ldc + j, _mm512_reduce_add_ps(acc[r]), alpha, beta);
    }
}

// A and B both bfloat16 (a bf16 model's activations and weights) on CPUs with AVX512-BF16:
// 32 products of bf16 pairs per instruction into f32 lanes (vdpbf16ps: each product exact, the
// pair added to the lane in two roundings), the bf16 rows read as they are, unwidened. The tail
// of k through masked loads (zeros contribute nothing).
// 32 bf16 lanes as the dot-product instruction takes them (a lambda would not inherit the
// target attribute).
__attribute__((target("avx512f,avx512bf16"))) inline __m512bh bh(__m512i v) {
    return (__m512bh)v;
}

template <int M, int NB = kBRowsPerPass<M>>
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void rows_dpbf16(
    int64_t n0, int64_t n1, int64_t k, float alpha, const uint16_t* a, int64_t lda,
    const uint16_t* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    const int64_t k32 = k / 32 * 32;
    const __mmask32 tail = __mmask32((uint64_t(1) << (k - k32)) - 1);
    int64_t j = n0;
    for (; j + NB <= n1; j += NB) {
        const uint16_t* bj = b + j * ldb;
        __m512 acc[NB][M];
        for (int q = 0; q < NB; ++q)
            for (int r = 0; r < M; ++r) acc[q][r] = _mm512_setzero_ps();
        for (int64_t i = 0; i < k32; i += 32) {
            __m512i w[NB];
            for (int q = 0; q < NB; ++q) w[q] = _mm512_loadu_si512(bj + q * ldb + i);
            for (int r = 0; r < M; ++r) {
                const __m512i x = _mm512_loadu_si512(a + r * lda + i);
                for (int q = 0; q < NB; ++q)
                    acc[q][r] = _mm512_dpbf16_ps(acc[q][r], bh(w[q]), bh(x));
            }
        }
        if (tail) {
            __m512i w[NB];
            for (int q = 0; q < NB; ++q) w[q] = _mm512_maskz_loadu_epi16(tail, bj + q * ldb + k32);
            for (int r = 0; r < M; ++r) {
                const __m512i x = _mm512_maskz_loadu_epi16(tail, a + r * lda + k32);
                for (int q = 0; q < NB; ++q)
                    acc[q][r] = _mm512_dpbf16_ps(acc[q][r], bh(w[q]), bh(x));
            }
        }
        for (int r = 0; r < M; ++r)
            for (int q = 0; q < NB; ++q)
                store(c + r * ldc + j + q, _mm512_reduce_add_ps(acc[q][r]), alpha, beta);
    }
    for (; j < n1; ++j) {
        const uint16_t* b0 = b + j * ldb;
        __m512 acc[M];
        for (int r = 0; r < M; ++r) acc[r] = _mm512_setzero_ps();
        for (int64_t i = 0; i < k32; i += 32) {
            const __m512i w0 = _mm512_loadu_si512(b0 + i);
            for (int r = 0; r < M; ++r)
                acc[r] = _mm512_dpbf16_ps(acc[r], bh(w0), bh(_mm512_loadu_si512(a + r * lda + i)));
        }
        if (tail) {
            const __m512i w0 = _mm512_maskz_loadu_epi16(tail, b0 + k32);
            for (int r = 0; r < M; ++r)
                acc[r] = _mm512_dpbf16_ps(acc[r], bh(w0),
                                          bh(_mm512_maskz_loadu_epi16(tail, a + r * lda + k32)));
        }
        for (int r = 0; r < M; ++r)
            store(c + r * ldc + j, _mm512_reduce_add_ps(acc[r]), alpha, beta);
    }
}

using DpRowsFn = void (*)(int64_t, int64_t, int64_t, float, const uint16_t*, int64_t,
                          const uint16_t*, int64_t, float, float*, int64_t);
constexpr DpRowsFn kDpbf16[kRowsPerPassAvx512 + 1] = {nullptr, rows_dpbf16<1>, rows_dpbf16<2>,
                                                      rows_dpbf16<3>, rows_dpbf16<4>};
constexpr DpRowsFn kDpbf16OneRowOfB[kRowsPerPassAvx512 + 1] = {
    nullptr, rows_dpbf16<1, 1>, rows_dpbf16<2, 1>, rows_dpbf16<3, 1>, rows_dpbf16<4, 1>};
DpRowsFn dpbf16_rows_fn(int rows, int64_t k) {
    return rows == 1 || one_row_of_b(rows, k) ? kDpbf16OneRowOfB[rows] : kDpbf16[rows];
}

// 8 lanes of a row of B as f32 (the AVX2 build's load16); a tail of fewer through a zero-padded
// copy.
__attribute__((target("avx2"))) inline __m256 load8(const float* p) {
    return _mm256_loadu_ps(p);
}
__attribute__((target("avx2"))) inline __m256 load8(const uint16_t* p) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
template <class BT>
__attribute__((target("avx2"))) inline __m256 load8(int64_t count, const BT* p) {
    alignas(32) BT tail[8] = {};
    std::copy(p, p + count, tail);
    return load8(tail);
}

// One step of rows_avx2: `count` (8, or fewer at the end of k) lanes from column i of nb rows of B
// against M rows of A into acc.
template <int M, int NB, class BT>
__attribute__((target("avx2,fma"))) inline void step8(const BT* const* rows, int nb, const float* a,
                                                      int64_t lda, int64_t i, int64_t count,
                                                      __m256 (&acc)[NB][M]) {
    __m256 w[NB];
    for (int q = 0; q < nb; ++q) w[q] = count == 8 ? load8(rows[q] + i) : load8(count, rows[q] + i);
    for (int r = 0; r < M; ++r) {
        const __m256 x =
            count == 8 ? _mm256_loadu_ps(a + r * lda + i) : load8(count, a + r * lda + i);
        for (int q = 0; q < nb; ++q) acc[q][r] = _mm256_fmadd_ps(w[q], x, acc[q][r]);
    }
}

// rows_avx512 on 8 lanes, for CPUs with AVX2 and FMA but no AVX-512.
template <int M, class BT, int NB = kBRowsPerPass<M>>
__attribute__((target("avx2,fma"))) void rows_avx2(int64_t n0, int64_t n1, int64_t k, float alpha,
                                                   const float* a, int64_t lda, const BT* b,
                                                   int64_t ldb, float beta, float* c, int64_t ldc) {
    const int64_t k8 = k / 8 * 8, tail = k - k8;
    for (int64_t j = n0; j < n1;) {
        const int nb = j + NB <= n1 ? NB : 1;
        const BT* rows[NB];
        for (int q = 0; q < nb; ++q) rows[q] = b + (j + q) * ldb;
        __m256 acc[NB][M];
        for (int q = 0; q < nb; ++q)
            for (int r = 0; r < M; ++r) acc[q][r] = _mm256_setzero_ps();
        for (int64_t i = 0; i < k8; i += 8) step8<M, NB>(rows, nb, a, lda, i, 8, acc);
        if (tail) step8<M, NB>(rows, nb, a, lda, k8, tail, acc);
        for (int r = 0; r < M; ++r)
            for (int q = 0; q < nb; ++q)
                store(c + r * ldc + j + q, reduce8(acc[q][r]), alpha, beta);
        j += nb;
    }
}

// The same without vector instructions (MT_CPU_ISA=portable, or a CPU without AVX2): 16
// independent partial sums per dot product.
template <class BT>
void rows_portable(int rows, int64_t n0, int64_t n1, int64_t k, float alpha, const float* a,
                   int64_t lda, const BT* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    for (int64_t j = n0; j < n1; ++j)
        for (int r = 0; r < rows; ++r) {
            float lane[16] = {};
            const float* x = a + r * lda;
            const BT* w = b + j * ldb;
            int64_t i = 0;
            for (; i + 16 <= k; i += 16)
                for (int l = 0; l < 16; ++l) lane[l] += x[i + l] * widen(w[i + l]);
            for (int l = 0; i < k; ++i, ++l) lane[l] += x[i] * widen(w[i]);
            float dot = 0;
            for (float v : lane) dot += v;
            store(c + r * ldc + j, dot, alpha, beta);
        }
}

template <class BT>
using RowsFn = void (*)(int64_t, int64_t, int64_t, float, const float*, int64_t, const BT*, int64_t,
                        float, float*, int64_t);
template <class BT>
constexpr RowsFn<BT> kAvx512[kRowsPerPassAvx512 + 1] = {
    nullptr, rows_avx512<1, BT>, rows_avx512<2, BT>, rows_avx512<3, BT>, rows_avx512<4, BT>};
template <class BT>
constexpr RowsFn<BT> kAvx512OneRowOfB[kRowsPerPassAvx512 + 1] = {
    nullptr, rows_avx512<1, BT, 1>, rows_avx512<2, BT, 1>, rows_avx512<3, BT, 1>,
    rows_avx512<4, BT, 1>};
template <class BT>
RowsFn<BT> avx512_rows_fn(int rows, int64_t k) {
    return one_row_of_b(rows, k) ? kAvx512OneRowOfB<BT>[rows] : kAvx512<BT>[rows];
}

template <class BT>
constexpr RowsFn<BT> kAvx2[kRowsPerPass + 1] = {
    nullptr,          rows_avx2<1, BT>, rows_avx2<2, BT>, rows_avx2<3, BT>, rows_avx2<4, BT>,
    rows_avx2<5, BT>, rows_avx2<6, BT>, rows_avx2<7, BT>, rows_avx2<8, BT>};
template <class BT>
constexpr RowsFn<BT> kAvx2OneRowOfB[kRowsPerPassAvx512 + 1] = {
    nullptr, rows_avx2<1, BT, 1>, rows_avx2<2, BT, 1>, rows_avx2<3, BT, 1>, rows_avx2<4, BT, 1>};
template <class BT>
RowsFn<BT> avx2_rows_fn(int rows, int64_t k) {
    return one_row_of_b(rows, k) ? kAvx2OneRowOfB<BT>[rows] : kAvx2<BT>[rows];
}

// Rows [n0, n1) of B against all m rows of A, the kernel's rows per pass at a time.
template <class BT>
void rows_of_b(int64_t m, int64_t n0, int64_t n1, int64_t k, float alpha, const float* a,
               int64_t lda, const BT* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    const bool avx512 = cpu_features().avx512f, avx2 = cpu_features().avx2;
    const int per_pass = avx512 ? kRowsPerPassAvx512 : kRowsPerPass;
    for (int64_t r0 = 0; r0 < m; r0 += per_pass) {
        const int rows = int(std::min<int64_t>(per_pass, m - r0));
        if (avx512)
            avx512_rows_fn<BT>(rows, k)(n0, n1, k, alpha, a + r0 * lda, lda, b, ldb, beta,
                                        c + r0 * ldc, ldc);
        else if (avx2)
            avx2_rows_fn<BT>(rows, k)(n0, n1, k, alpha, a + r0 * lda, lda, b, ldb, beta,
                                      c + r0 * ldc, ldc);
        else
            rows_portable(rows, n0, n1, k, alpha, a + r0 * lda, lda, b, ldb, beta, c + r0 * ldc,
                          ldc);
    }
}

// Chunks of B rows per task: enough to amortise the task, many for balance; handed out
// dynamically, so a thread the OS delays (another process on the core) does not hold up the
// product.
constexpr int64_t kChunk = 60;  // a multiple of every kernel's rows of B per pass

template <class BT>
void skinny_over_b_rows(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                        const BT* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    const int64_t tasks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(dynamic, 4) if (n * k >= (1 << 16))
    for (int64_t t = 0; t < tasks; ++t) {
        const int64_t n0 = t * kChunk, n1 = std::min(n, n0 + kChunk);
        rows_of_b(m, n0, n1, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
}

}  // namespace

void skinny_gemm_nt(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                    const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    skinny_over_b_rows(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void skinny_gemm_nt(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                    const uint16_t* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    skinny_over_b_rows(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

bool skinny_bf16_dot() {
    return cpu_features().avx512bf16;
}

void skinny_gemm_nt_bf16_dot(int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a,
                             int64_t lda, const uint16_t* b, int64_t ldb, float beta, float* c,
                             int64_t ldc) {
    MT_CHECK(skinny_bf16_dot(), "skinny_gemm_nt_bf16_dot: the CPU has no AVX512-BF16");
    const int64_t tasks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(dynamic, 4) if (n * k >= (1 << 16))
    for (int64_t t = 0; t < tasks; ++t) {
        const int64_t n0 = t * kChunk, n1 = std::min(n, n0 + kChunk);
        for (int64_t r0 = 0; r0 < m; r0 += kRowsPerPassAvx512) {
            const int rows = int(std::min<int64_t>(kRowsPerPassAvx512, m - r0));
            dpbf16_rows_fn(rows, k)(n0, n1, k, alpha, a + r0 * lda, lda, b, ldb, beta, c + r0 * ldc,
                                    ldc);
        }
    }
}

void grouped_skinny_gemm_nt(const std::vector<SkinnyGroup>& groups, int64_t n, int64_t k,
                            int64_t lda, int64_t ldb, int64_t ldc) {
    std::vector<const SkinnyGroup*> busy;
    for (const SkinnyGroup& g : groups)
        if (g.m > 0) busy.push_back(&g);
    const int64_t per_group = (n + kChunk - 1) / kChunk;
    const int64_t tasks = int64_t(busy.size()) * per_group;
#pragma omp parallel for schedule(dynamic, 4) if (tasks * kChunk * k >= (1 << 16))
    for (int64_t t = 0; t < tasks; ++t) {
        const SkinnyGroup& g = *busy[size_t(t / per_group)];
        const int64_t n0 = t % per_group * kChunk, n1 = std::min(n, n0 + kChunk);
        rows_of_b(g.m, n0, n1, k, 1.0f, g.a, lda, g.b, ldb, 0.0f, g.c, ldc);
    }
}

}  // namespace mt::cpu
