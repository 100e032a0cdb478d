// C = alpha A B^T + beta C for a few rows of A (decoding: one or a handful of tokens) — the
// case where BLAS spends its time packing B: here each row of B (a weight row) is read once,
// straight from memory, and dotted with every row of A, so the product runs at memory speed.
#pragma once

#include <cstdint>

namespace mt::cpu {

// Rows of A up to which skinny_gemm_nt beats packing GEMM.
constexpr int64_t kSkinnyRows = 16;

// A (m x k, row stride lda), B (n x k, row stride ldb), C (m x n, row stride ldc), all f32
// row-major, m <= kSkinnyRows. Work is split over n with OpenMP.
void skinny_gemm_nt(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                    const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace mt::cpu
