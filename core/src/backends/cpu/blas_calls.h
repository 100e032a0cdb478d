// Row-major OpenBLAS products. OpenBLAS is made single-threaded on first use, since its own
// pthreads would spin against the OpenMP threads of the other ops (twice as many busy threads as
// cores): blas_gemm is for code that already runs inside an OpenMP task (attention blocks),
// parallel_blas_gemm splits one product over the OpenMP threads.
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

// The same over the OpenMP threads: the columns (or, for a tall C, the rows) of C split between
// them, each part one blas_gemm. Small products stay on the calling thread.
void parallel_blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                        const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                        float* c, int64_t ldc);

}  // namespace mt::cpu
