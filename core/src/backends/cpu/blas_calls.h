// Row-major OpenBLAS products for code that already runs inside an OpenMP task (attention
// blocks, the split GEMM): OpenBLAS is made single-threaded on first use, since its own pthreads
// would spin against the OpenMP threads of the other ops (twice as many busy threads as cores).
#pragma once

#include <cstdint>

namespace mt::cpu {

// C = alpha op(A) op(B) + beta C, row-major with leading dimensions lda, ldb, ldc; op(A) is
// m x k, op(B) k x n. One thread.
void blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
               int64_t ldc);
void blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
               const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
               int64_t ldc);

}  // namespace mt::cpu
