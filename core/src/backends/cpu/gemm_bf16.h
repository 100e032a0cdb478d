// C = alpha op(A) op(B) + beta C with A and B in bfloat16 and the products summed in f32: the
// GEMM of --bf16 training. Debian's OpenBLAS (0.3.21) has no sbgemm and f32 sgemm reaches about
// half the machine's bf16 rate, so this is our own: for a few rows of A against B^T (decoding),
// B streamed unpacked; else AMX tiles where the CPU has them (and C has 16 rows or more: a tile is
// 16), else AVX512-BF16 dot products (vdpbf16ps) on packed panels, else f32 OpenBLAS on widened
// copies (as fast as the f32 GEMM, plus the widening passes).
#pragma once

#include <cstdint>

#include "mt/api.h"

namespace mt::cpu {

// Row-major. op(A) is m x k: A is m x k, or k x m when trans_a; op(B) is k x n: B is k x n, or
// n x k when trans_b. A and B hold bfloat16 bits. C is m x n, f32 or, when c_is_bf16, bfloat16
// bits (read as bf16 when beta != 0; written rounded to nearest even from the f32 sum; f32
// denormal results flush to zero there, as vcvtneps2bf16 does). lda/ldb/ldc are row strides in
// elements, at least the row length. beta == 0 ignores what C held (NaN included), as BLAS does.
// Work is split over the OpenMP threads.
MT_API void gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, float beta,
                      void* c, int64_t ldc, bool c_is_bf16);

// The paths gemm_bf16 chooses from, each with gemm_bf16's contract, exposed so that the tests
// check every one the machine can run. gemm_bf16_amx needs cpu_features().amx_bf16,
// gemm_bf16_dot AVX512-BF16.
MT_API void gemm_bf16_amx(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                          const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb,
                          float beta, void* c, int64_t ldc, bool c_is_bf16);
MT_API void gemm_bf16_dot(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                          const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb,
                          float beta, void* c, int64_t ldc, bool c_is_bf16);

// The path gemm_bf16 takes for a few rows of A times B^T (decoding a handful of tokens), on every
// CPU: B's rows streamed once as they are, widened in registers (skinny_gemm_nt), where the other
// paths would pack all of B for one row of A. Only that case: A not transposed, B transposed,
// m <= kSkinnyRows (skinny_gemm.h).
MT_API void gemm_bf16_skinny(int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a,
                             int64_t lda, const uint16_t* b, int64_t ldb, float beta, void* c,
                             int64_t ldc, bool c_is_bf16);

// The path gemm_bf16 takes on CPUs without AVX512-BF16 (AVX2-only ones): A and B widened to f32
// once each and multiplied by OpenBLAS sgemm, both over the OpenMP threads. Runs on every machine.
MT_API void gemm_bf16_widened(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                              float alpha, const uint16_t* a, int64_t lda, const uint16_t* b,
                              int64_t ldb, float beta, void* c, int64_t ldc, bool c_is_bf16);

}  // namespace mt::cpu
