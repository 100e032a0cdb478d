// C = alpha A B^T + beta C for a few rows of A (decoding: one or a handful of tokens) — the
// case where BLAS spends its time packing B: here each row of B (a weight row) is read once,
// straight from memory, and dotted with every row of A, so the product runs at memory speed.
#pragma once

#include <cstdint>
#include <vector>

namespace mt::cpu {

// Rows of A up to which skinny_gemm_nt beats packing GEMM.
constexpr int64_t kSkinnyRows = 16;

// A (m x k, row stride lda), B (n x k, row stride ldb), C (m x n, row stride ldc), all f32
// row-major, m <= kSkinnyRows. Work is split over n with OpenMP.
void skinny_gemm_nt(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                    const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// The same with B in bfloat16 bits (a bf16 model's weights: read once at half the bytes, widened
// as they stream).
void skinny_gemm_nt(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                    const uint16_t* b, int64_t ldb, float beta, float* c, int64_t ldc);

// Whether skinny_gemm_nt_bf16_dot runs here (AVX512-BF16).
bool skinny_bf16_dot();
// The same with A in bfloat16 too (a bf16 model's activations), by bf16 dot products: each
// product exact, summed in f32 in another order than the widened kernel's. Needs
// skinny_bf16_dot().
void skinny_gemm_nt_bf16_dot(int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a,
                             int64_t lda, const uint16_t* b, int64_t ldb, float beta, float* c,
                             int64_t ldc);

// One product of a grouped C = A B^T: m <= kSkinnyRows rows of A and C, its own B (n x k).
struct SkinnyGroup {
    int64_t m;
    const float* a;
    const float* b;
    float* c;
};
// C = A B^T for every group at once (a MoE layer's experts on a few tokens each): one parallel
// pass over all groups' B rows, which a gemm per group would split into a pass each. Shared n, k
// and row strides; groups with m = 0 are skipped.
void grouped_skinny_gemm_nt(const std::vector<SkinnyGroup>& groups, int64_t n, int64_t k,
                            int64_t lda, int64_t ldb, int64_t ldc);

}  // namespace mt::cpu
