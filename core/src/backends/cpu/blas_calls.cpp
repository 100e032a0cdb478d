#include "blas_calls.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>

namespace mt::cpu {

namespace {

void single_threaded_blas() {
    static const bool done = [] {
        openblas_set_num_threads(1);
        return true;
    }();
    (void)done;
}

CBLAS_TRANSPOSE op(bool trans) {
    return trans ? CblasTrans : CblasNoTrans;
}

}  // namespace

void blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
               int64_t ldc) {
    single_threaded_blas();
    cblas_sgemm(CblasRowMajor, op(trans_a), op(trans_b), int(m), int(n), int(k), alpha, a, int(lda),
                b, int(ldb), beta, c, int(ldc));
}

void blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
               const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
               int64_t ldc) {
    single_threaded_blas();
    cblas_dgemm(CblasRowMajor, op(trans_a), op(trans_b), int(m), int(n), int(k), alpha, a, int(lda),
                b, int(ldb), beta, c, int(ldc));
}

void parallel_blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                        const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                        float* c, int64_t ldc) {
    const bool split_rows = m > n;
    const int64_t extent = split_rows ? m : n;
    // Below this much work per product the split's fork/join costs more than it gains.
    const bool parallel = m * n * k >= (int64_t(1) << 21);
#pragma omp parallel if (parallel)
    {
        const int64_t parts = omp_get_num_threads(), part = omp_get_thread_num();
        // Multiples of 16 rows/columns per part, so the BLAS kernels see whole register tiles.
        const int64_t step = (extent / parts + 15) / 16 * 16;
        const int64_t first = std::min(extent, part * step);
        const int64_t last = part + 1 == parts ? extent : std::min(extent, first + step);
        if (first < last) {
            if (split_rows)  // rows [first, last) of op(A) and C
                blas_gemm(trans_a, trans_b, last - first, n, k, alpha,
                          a + (trans_a ? first : first * lda), lda, b, ldb, beta, c + first * ldc,
                          ldc);
            else  // columns [first, last) of op(B) and C
                blas_gemm(trans_a, trans_b, m, last - first, k, alpha, a, lda,
                          b + (trans_b ? first * ldb : first), ldb, beta, c + first, ldc);
        }
    }
}

}  // namespace mt::cpu
