#include "blas_calls.h"

#include <cblas.h>

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

}  // namespace mt::cpu
