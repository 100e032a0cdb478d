// gemm_bf16: Goto/BLIS-style blocking around an 8 x 48 register tile of vdpbf16ps.
//
// vdpbf16ps multiplies pairs of adjacent bf16 values, so both operands are packed with pairs of
// consecutive k side by side in one 32-bit lane: a panel of W rows of op(A) (or W columns of
// op(B)) is stored as, for each pair p of k, W 32-bit words (x[2p], x[2p+1]); an odd k ends with
// a zero. The micro-kernel then broadcasts one word of A per row and multiplies it with three
// 16-word vectors of B, accumulating 8 x 48 f32 sums in 24 of the 32 zmm registers.
//
// Blocking (Zen 4: 32 KiB L1d and 1 MiB L2 per core, shared L3): op(A) is packed once, whole
// (it is the activations, a few MiB), unless it is row-major with even k: its pairs are then
// already 32-bit words, broadcast in place. op(B) is packed kNc columns (all of k) at a time,
// shared by the threads. Each thread then owns blocks of up to kMcMax rows of C, loops over k in
// chunks of kKcPairs pairs (one B micro-panel against every A micro-panel of the block, those in
// L2), and sums into C (f32) or into an f32 scratch block that is rounded to bf16 once all of k
// is in.
#include "gemm_bf16.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "bf16_narrow.h"
#include "blas_calls.h"
#include "cpu_features.h"
#include "gemm_bf16_pack.h"
#include "mt/dtype.h"
#include "mt/error.h"
#include "mt/kernels/bf16.h"
#include "mt/tensor.h"
#include "op_support.h"
#include "skinny_gemm.h"

namespace mt::cpu {

namespace {

using namespace bf16_pack;

constexpr int64_t kMr = 8;   // rows of the register tile (broadcasts of A)
constexpr int64_t kNr = 48;  // columns of the register tile (three zmm of B)
// Pairs of k per block. Measured: 256 beats 128 (B micro-panel in L1d) by a few percent, as
// each C tile is read and written half as often; the 48 KiB B micro-panel then streams from L2
// at 8 bytes a cycle, far below its bandwidth.
constexpr int64_t kKcPairs = 256;
constexpr int64_t kMcMax = 96;  // rows of C per block: C and A blocks fit L2
constexpr int64_t kNc = 768;    // columns of op(B) packed at a time (with all of k)
constexpr int64_t kVecs = kNr / kLanes;

// Where the A operand of the micro-kernel lies: pair p of row i of op(A) is the 32-bit word at
// data + (i / kMr) panel + (i % kMr) row + p pair (in bf16 elements). Packed panels have
// row = 2, pair = 2 kMr; an untransposed A with even k needs no packing (row = lda, pair = 2).
struct ALayout {
    const uint16_t* data;
    int64_t panel, row, pair;
};

// c[rows x cols] (row stride ldc, rows <= kMr, cols <= kNr) = alpha a.b + (accumulate ? c :
// beta c) over kp pairs: a is the A micro-panel's first word (strides as in ALayout), b a packed
// B micro-panel.
MT_BF16_TARGET void micro_kernel(int64_t kp, const uint16_t* a, int64_t a_row, int64_t a_pair,
                                 const uint32_t* b, float* c, int64_t ldc, int64_t rows,
                                 int64_t cols, float alpha, float beta, bool accumulate) {
    // The C tile is read and written after the loop: fetch it now, so that its first touch
    // (from memory, for each block's first chunk of k) overlaps the dot products.
    for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; j += 16) _mm_prefetch(c + i * ldc + j, _MM_HINT_T0);
        _mm_prefetch(c + i * ldc + cols - 1, _MM_HINT_T0);
    }
    __m512 acc[kMr][kVecs];
    for (int i = 0; i < kMr; ++i) {
        for (int v = 0; v < kVecs; ++v) acc[i][v] = _mm512_setzero_ps();
    }
    // Rows past `rows` repeat the last one: never outside A, and their sums are not stored.
    const uint16_t* a_rows[kMr];
    for (int i = 0; i < kMr; ++i) a_rows[i] = a + std::min<int64_t>(i, rows - 1) * a_row;
    for (int64_t p = 0; p < kp; ++p, b += kNr) {
        __m512bh bv[kVecs];
        for (int v = 0; v < kVecs; ++v) bv[v] = (__m512bh)_mm512_loadu_si512(b + v * kLanes);
#pragma GCC unroll 8
        for (int i = 0; i < kMr; ++i) {
            int word;
            std::memcpy(&word, a_rows[i] + p * a_pair, 4);
            const __m512bh ai = (__m512bh)_mm512_set1_epi32(word);
            for (int v = 0; v < kVecs; ++v) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], ai, bv[v]);
        }
    }
    __mmask16 in_cols[kVecs];
    for (int v = 0; v < kVecs; ++v) in_cols[v] = __mmask16(low_bits(cols - v * kLanes, 16));
    const __m512 alpha_v = _mm512_set1_ps(alpha), beta_v = _mm512_set1_ps(beta);
    for (int i = 0; i < kMr; ++i) {
        if (i >= rows) break;
        for (int v = 0; v < kVecs; ++v) {
            float* cp = c + i * ldc + v * kLanes;
            __m512 r = _mm512_mul_ps(acc[i][v], alpha_v);
            if (accumulate) {
                r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(in_cols[v], cp));
            } else if (beta != 0.0f) {
                r = _mm512_fmadd_ps(beta_v, _mm512_maskz_loadu_ps(in_cols[v], cp), r);
            }
            _mm512_mask_storeu_ps(cp, in_cols[v], r);
        }
    }
}

// What every thread needs to compute blocks of C from the packed operands.
struct Product {
    int64_t kp;  // pairs of k
    float alpha, beta;
    ALayout a;               // all m rows of op(A)
    const uint32_t* b_pack;  // columns [jc, jc + kNc) of op(B)
    void* c;
    int64_t ldc;
    bool c_is_bf16;
};

// Rows [i0, i1) x columns [jc + j0, jc + j1) of C; j0 is a multiple of kNr. A bf16 C is summed
// in `scratch` (rows x kNc f32) first, so that it is rounded once.
MT_BF16_TARGET void compute_block(const Product& g, int64_t jc, int64_t i0, int64_t i1, int64_t j0,
                                  int64_t j1, float* scratch) {
    float* out;
    int64_t ld_out;
    float beta = g.beta;
    if (g.c_is_bf16) {
        out = scratch;
        ld_out = kNc;
        beta = 0.0f;
    } else {
        ld_out = g.ldc;
        out = static_cast<float*>(g.c) + i0 * g.ldc + jc + j0;
    }
    // At least one pass, so that k == 0 still leaves beta C.
    for (int64_t pc = 0; pc == 0 || pc < g.kp; pc += kKcPairs) {
        const int64_t kc = std::min(kKcPairs, g.kp - pc);
        for (int64_t j = j0; j < j1; j += kNr) {
            const uint32_t* b = g.b_pack + j * g.kp + pc * kNr;
            for (int64_t i = i0; i < i1; i += kMr) {
                micro_kernel(kc, g.a.data + i / kMr * g.a.panel + pc * g.a.pair, g.a.row, g.a.pair,
                             b, out + (i - i0) * ld_out + (j - j0), ld_out, std::min(kMr, i1 - i),
                             std::min(kNr, j1 - j), g.alpha, beta, pc > 0);
            }
        }
    }
    if (g.c_is_bf16) {
        round_to_bf16(scratch, kNc, i1 - i0, j1 - j0, g.beta,
                      static_cast<uint16_t*>(g.c) + i0 * g.ldc + jc + j0, g.ldc);
    }
}

}  // namespace

void gemm_bf16_dot(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, float beta,
                   void* c, int64_t ldc, bool c_is_bf16) {
    if (m <= 0 || n <= 0) return;
    const int64_t kp = (k + 1) / 2;
    const int64_t m_panels = ceil_div(m, kMr);
    // Row blocks of whole tiles, their counts differing by one at most, so shares are equal.
    const int64_t i_blocks = ceil_div(m_panels, kMcMax / kMr);
    const int64_t mc = ceil_div(m_panels, i_blocks) * kMr;  // the tallest block
    const int threads = worth_threads(m, n, k) ? omp_get_max_threads() : 1;
    // A row-major A with even k already holds its pairs as 32-bit words: the micro-kernel
    // broadcasts them in place. Otherwise A is packed once, in chunks of 16 rows.
    const bool pack_a = trans_a || k % 2 != 0;
    const int64_t a_rows = pack_a ? ceil_div(m, kLanes) * kLanes : 0;
    const int64_t b_panels = ceil_div(std::min(n, kNc), kNr);
    // Cached large blocks (Tensor storage): fresh pages per call would cost a fault each.
    Tensor a_pack = Tensor::empty({a_rows * kp}, DType::i32);
    Tensor b_pack = Tensor::empty({b_panels * kNr * kp}, DType::i32);
    Tensor scratch = Tensor::empty({c_is_bf16 ? threads * mc * kNc : 0}, DType::f32);
    auto* a_out = static_cast<uint32_t*>(a_pack.raw_data());
    auto* b_out = static_cast<uint32_t*>(b_pack.raw_data());
    const ALayout a_layout =
        pack_a ? ALayout{reinterpret_cast<const uint16_t*>(a_out), kMr * kp * 2, 2, kMr * 2}
               : ALayout{a, kMr * lda, lda, 2};
    const Product g{kp, alpha, beta, a_layout, b_out, c, ldc, c_is_bf16};
    const Operand op_a{a, lda, !trans_a};
#pragma omp parallel num_threads(threads)
    {
        float* my_scratch = static_cast<float*>(scratch.raw_data());
        if (my_scratch) my_scratch += omp_get_thread_num() * mc * kNc;
#pragma omp for schedule(static)
        for (int64_t x = 0; x < a_rows; x += kPackGroup) {
            pack_group<kMr>(op_a, m, a_rows, k, kp, x, a_out);
        }
        for (int64_t jc = 0; jc < n; jc += kNc) {
            const int64_t nc = std::min(kNc, n - jc);
            const int64_t nc_panels = ceil_div(nc, kNr);
            const Operand op_b{trans_b ? b + jc * ldb : b + jc, ldb, trans_b};
#pragma omp for schedule(static)
            for (int64_t x = 0; x < nc_panels * kNr; x += kPackGroup) {
                pack_group<kNr>(op_b, nc, nc_panels * kNr, k, kp, x, b_out);
            }
            // Split the columns too when the row blocks alone do not divide among the threads.
            const int64_t j_parts =
                std::min<int64_t>(nc_panels, threads / std::gcd<int64_t>(i_blocks, threads));
#pragma omp for schedule(static)
            for (int64_t item = 0; item < i_blocks * j_parts; ++item) {
                const int64_t ib = item / j_parts, jp = item % j_parts;
                const int64_t i0 = ib * m_panels / i_blocks * kMr;
                const int64_t i1 = std::min(m, (ib + 1) * m_panels / i_blocks * kMr);
                const int64_t j0 = jp * nc_panels / j_parts * kNr;
                const int64_t j1 = std::min(nc, (jp + 1) * nc_panels / j_parts * kNr);
                compute_block(g, jc, i0, i1, j0, j1, my_scratch);
            }
        }
    }
}

namespace {

// rows x cols of x (row stride ld) widened into out (row stride cols), over the threads.
void widen(const uint16_t* x, int64_t rows, int64_t cols, int64_t ld, float* out) {
#pragma omp parallel for schedule(static) if (rows * cols >= detail::kParallelMin)
    for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) out[i * cols + j] = k::bf16_to_float(x[i * ld + j]);
    }
}

}  // namespace

void gemm_bf16_widened(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                       const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, float beta,
                       void* c, int64_t ldc, bool c_is_bf16) {
    if (m <= 0 || n <= 0) return;
    // Each operand widened once, by all the threads, into copies that keep its layout, packed to
    // its row length (Tensor storage: cached, so no fresh pages per call); then the f32 product
    // split over the threads as the f32 GEMM's.
    const int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
    const int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
    Tensor af = Tensor::empty({a_rows * a_cols}, DType::f32);
    Tensor bf = Tensor::empty({b_rows * b_cols}, DType::f32);
    widen(a, a_rows, a_cols, lda, af.data<float>());
    widen(b, b_rows, b_cols, ldb, bf.data<float>());
    auto product = [&](float* out, int64_t ld_out) {
        parallel_blas_gemm(trans_a, trans_b, m, n, k, alpha, af.data<float>(),
                           std::max<int64_t>(1, a_cols), bf.data<float>(),
                           std::max<int64_t>(1, b_cols), beta, out, ld_out);
    };
    if (!c_is_bf16) return product(static_cast<float*>(c), ldc);
    auto* cb = static_cast<uint16_t*>(c);
    Tensor cf = Tensor::empty({m * n}, DType::f32);
    float* wide = cf.data<float>();
    if (beta != 0.0f) widen(cb, m, n, ldc, wide);
    product(wide, n);
#pragma omp parallel for schedule(static) if (m * n >= detail::kParallelMin)
    for (int64_t i = 0; i < m; ++i) narrow_to_bf16(wide + i * n, cb + i * ldc, n);
}

void gemm_bf16_skinny(int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a, int64_t lda,
                      const uint16_t* b, int64_t ldb, float beta, void* c, int64_t ldc,
                      bool c_is_bf16) {
    MT_CHECK(m <= kSkinnyRows, "gemm_bf16_skinny: at most ", kSkinnyRows, " rows, got ", m);
    if (m <= 0 || n <= 0) return;
    // With AVX512-BF16 the bf16 rows of A are dotted as they are; else widened once.
    const bool dot = skinny_bf16_dot();
    std::vector<float> af(dot ? 0 : size_t(m * k));
    for (int64_t i = 0; !dot && i < m; ++i)
        for (int64_t j = 0; j < k; ++j) af[size_t(i * k + j)] = bfloat16_to_float(a[i * lda + j]);
    auto product = [&](float* out, int64_t ld_out) {
        if (dot)
            skinny_gemm_nt_bf16_dot(m, n, k, alpha, a, lda, b, ldb, beta, out, ld_out);
        else
            skinny_gemm_nt(m, n, k, alpha, af.data(), k, b, ldb, beta, out, ld_out);
    };
    if (!c_is_bf16) {
        product(static_cast<float*>(c), ldc);
        return;
    }
    auto* cb = static_cast<uint16_t*>(c);
    std::vector<float> cf(size_t(m * n));
    if (beta != 0.0f)
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j)
                cf[size_t(i * n + j)] = bfloat16_to_float(cb[i * ldc + j]);
    product(cf.data(), n);
    for (int64_t i = 0; i < m; ++i) narrow_to_bf16(cf.data() + i * n, cb + i * ldc, n);
}

void gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, float beta, void* c,
               int64_t ldc, bool c_is_bf16) {
    if (m <= 0 || n <= 0) return;
    if (!trans_a && trans_b && m <= kSkinnyRows)  // decoding: B (the weights) read once, unpacked
        gemm_bf16_skinny(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, c_is_bf16);
    else if (cpu_features().amx_bf16 && m >= 16)
        gemm_bf16_amx(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, c_is_bf16);
    else if (cpu_features().avx512bf16)
        gemm_bf16_dot(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, c_is_bf16);
    else
        gemm_bf16_widened(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                          c_is_bf16);
}

}  // namespace mt::cpu
