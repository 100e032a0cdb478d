// gemm_bf16 on AMX tiles (Sapphire Rapids and later): tdpbf16ps multiplies a 16 x 16-pair tile
// of A by a 16-pair x 16 tile of B into a 16 x 16 f32 tile of C, 16 times the work of a vdpbf16ps.
//
// Tiles 0-3 hold a 32 x 32 block of C across all of k, tiles 4-5 two A tiles (rows 0-15 and
// 16-31 of the block), tiles 6-7 two B tiles (columns 0-15 and 16-31). B is packed in the pair
// layout the vdpbf16ps kernel uses (gemm_bf16_pack.h), 32 columns a panel, its pairs padded with
// zeros to a multiple of 16: a B tile is then 16 consecutive pair rows of a panel. A is packed
// into tiles: per 16 rows and 16 pairs, a 16 x 16-word block, each row's pairs contiguous, as
// tileloadd reads an A tile. op(B) is packed kNc columns at a time and shared by the threads,
// which take (column panel, row block) items in column order, so each reuses its B panel from
// cache across all of A.
#include <omp.h>

#include "gemm_bf16.h"
#include "gemm_bf16_pack.h"
#include "mt/tensor.h"

namespace mt::cpu {

namespace {

using namespace bf16_pack;

constexpr int64_t kTile = 16;  // rows of a tile; f32 columns of a C tile; pairs of A / B tiles
constexpr int64_t kTileWords = kTile * kTile;
constexpr int64_t kBlock = 32;  // rows and columns of the C block (2 x 2 tiles)
constexpr int64_t kNc = 768;    // columns of op(B) packed at a time (with all of k)

#define MT_AMX_TARGET \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,amx-tile,amx-bf16")))

// The 64-byte tile configuration ldtilecfg reads (palette 1).
struct TileConfig {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t bytes_per_row[16];
    uint8_t rows[16];
};

MT_AMX_TARGET void configure_tiles() {
    TileConfig cfg{};
    cfg.palette = 1;
    for (int t = 0; t < 8; ++t) {
        cfg.rows[t] = kTile;
        cfg.bytes_per_row[t] = kTile * 4;
    }
    // GCC 12 does not see ldtilecfg read cfg and drops the stores above (the CPU then faults on
    // the garbage): make them visible.
    asm volatile("" : : "r"(&cfg) : "memory");
    _tile_loadconfig(&cfg);
}

MT_AMX_TARGET void release_tiles() {
    _tile_release();
}

// Rows [16 r, 16 r + 16) of op(A) (rows at or past m as zeros) into their kb tiles at out: tile q
// holds pairs [16 q, 16 q + 16), row i's at out + (r kb + q) 256 + 16 i (pairs past k zero).
MT_AMX_TARGET void pack_a_panel(const Operand& src, int64_t m, int64_t k, int64_t kb, int64_t r,
                                uint32_t* out) {
    const int64_t x0 = r * kTile;
    const int64_t valid = std::clamp<int64_t>(m - x0, 0, kTile);
    uint32_t* panel = out + r * kb * kTileWords;
    for (int64_t q = 0; q < kb; ++q) {
        uint32_t* tile = panel + q * kTileWords;
        __m512i rows[16];
        if (src.k_contiguous) {
            // Each row's 16 pairs are 32 consecutive bf16 values.
            const __mmask32 in_k = low_bits(k - 2 * kTile * q, 32);
            for (int64_t i = 0; i < kTile; ++i)
                rows[i] = i < valid ? _mm512_maskz_loadu_epi16(
                                          in_k, src.data + (x0 + i) * src.ld + 2 * kTile * q)
                                    : _mm512_setzero_si512();
        } else {
            // Rows 2p and 2p+1 of the stored matrix, interleaved into words, then transposed.
            for (int64_t p = 0; p < kTile; ++p) {
                const int64_t kk = 2 * (kTile * q + p);
                const __m512i even = kk < k ? load_widened(src.data + kk * src.ld + x0, valid)
                                            : _mm512_setzero_si512();
                const __m512i odd = kk + 1 < k
                                        ? load_widened(src.data + (kk + 1) * src.ld + x0, valid)
                                        : _mm512_setzero_si512();
                rows[p] = _mm512_or_si512(even, _mm512_slli_epi32(odd, 16));
            }
            transpose16(rows);
        }
        for (int64_t i = 0; i < kTile; ++i) _mm512_storeu_si512(tile + i * kTile, rows[i]);
    }
}

// sum (32 x 32, row stride 32) = the C block of A tile rows [2 r, 2 r + 2) and the B panel at b.
MT_AMX_TARGET void block_product(const uint32_t* a_pack, int64_t r, int64_t kb, const uint32_t* b,
                                 float* sum) {
    const uint32_t* a0 = a_pack + 2 * r * kb * kTileWords;
    const uint32_t* a1 = a0 + kb * kTileWords;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t q = 0; q < kb; ++q) {
        _tile_loadd(4, a0 + q * kTileWords, kTile * 4);
        _tile_loadd(5, a1 + q * kTileWords, kTile * 4);
        _tile_loadd(6, b + q * kTile * kBlock, kBlock * 4);
        _tile_loadd(7, b + q * kTile * kBlock + kTile, kBlock * 4);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, sum, kBlock * 4);
    _tile_stored(1, sum + kTile, kBlock * 4);
    _tile_stored(2, sum + kTile * kBlock, kBlock * 4);
    _tile_stored(3, sum + kTile * kBlock + kTile, kBlock * 4);
}

// C (rows x cols at c, stride ldc) = alpha sum + beta C, f32 or rounded to bf16.
MT_AMX_TARGET void store_block(float* sum, int64_t rows, int64_t cols, float alpha, float beta,
                               void* c, int64_t ldc, bool c_is_bf16) {
    const __m512 alpha_v = _mm512_set1_ps(alpha), beta_v = _mm512_set1_ps(beta);
    for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; j += kLanes) {
            const __mmask16 in = __mmask16(low_bits(cols - j, 16));
            float* s = sum + i * kBlock + j;
            __m512 r = _mm512_mul_ps(alpha_v, _mm512_loadu_ps(s));
            if (c_is_bf16) {
                _mm512_storeu_ps(s, r);  // round_to_bf16 adds beta C
            } else {
                float* cp = static_cast<float*>(c) + i * ldc + j;
                if (beta != 0.0f) r = _mm512_fmadd_ps(beta_v, _mm512_maskz_loadu_ps(in, cp), r);
                _mm512_mask_storeu_ps(cp, in, r);
            }
        }
    }
    if (c_is_bf16) round_to_bf16(sum, kBlock, rows, cols, beta, static_cast<uint16_t*>(c), ldc);
}

}  // namespace

void gemm_bf16_amx(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, float beta,
                   void* c, int64_t ldc, bool c_is_bf16) {
    if (m <= 0 || n <= 0) return;
    const int64_t kp = (k + 1) / 2;
    const int64_t kb = std::max<int64_t>(1, ceil_div(kp, kTile));  // one zero tile when k == 0
    const int64_t kp_padded = kb * kTile;
    const int64_t m_blocks = ceil_div(m, kBlock);
    const int64_t b_panels = ceil_div(std::min(n, kNc), kBlock);
    // Cached large blocks (Tensor storage): fresh pages per call would cost a fault each.
    Tensor a_pack = Tensor::empty({m_blocks * 2 * kb * kTileWords}, DType::i32);
    Tensor b_pack = Tensor::empty({b_panels * kBlock * kp_padded}, DType::i32);
    auto* a_out = static_cast<uint32_t*>(a_pack.raw_data());
    auto* b_out = static_cast<uint32_t*>(b_pack.raw_data());
    const Operand op_a{a, lda, !trans_a};
    const size_t elem = c_is_bf16 ? 2 : 4;
#pragma omp parallel num_threads(worth_threads(m, n, k) ? omp_get_max_threads() : 1)
    {
        configure_tiles();
        alignas(64) float sum[kBlock * kBlock];
#pragma omp for schedule(static)
        for (int64_t r = 0; r < 2 * m_blocks; ++r) pack_a_panel(op_a, m, k, kb, r, a_out);
        for (int64_t jc = 0; jc < n; jc += kNc) {
            const int64_t nc = std::min(kNc, n - jc);
            const int64_t nc_panels = ceil_div(nc, kBlock);
            const Operand op_b{trans_b ? b + jc * ldb : b + jc, ldb, trans_b};
#pragma omp for schedule(static)
            for (int64_t x = 0; x < nc_panels * kBlock; x += kPackGroup)
                pack_group<kBlock>(op_b, nc, nc_panels * kBlock, k, kp_padded, x, b_out);
#pragma omp for schedule(static)
            for (int64_t item = 0; item < nc_panels * m_blocks; ++item) {
                const int64_t jp = item / m_blocks, r = item % m_blocks;
                block_product(a_out, r, kb, b_out + jp * kBlock * kp_padded, sum);
                const int64_t i0 = r * kBlock, j0 = jc + jp * kBlock;
                store_block(sum, std::min(kBlock, m - i0), std::min(kBlock, jc + nc - j0), alpha,
                            beta, static_cast<char*>(c) + (i0 * ldc + j0) * elem, ldc, c_is_bf16);
            }
        }
        release_tiles();
    }
}

}  // namespace mt::cpu
