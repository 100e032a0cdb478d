// f64 products (the finite-difference checks of the layers) through cblas_dgemm.
#include "cpu_backend.h"

#include "blas_calls.h"

#include <algorithm>

namespace mt::cpu {

namespace {

// Rows, columns and leading dimension of a row-major f64 CPU matrix.
struct Matrix {
    int64_t rows, cols, ld;
};

Matrix f64_matrix(const Tensor& t, const char* what) {
    MT_CHECK(t.dtype() == DType::f64 && t.dim() == 2 && t.device().type == DeviceType::cpu,
             "gemm: ", what, " must be a 2-D f64 CPU tensor, got ", t.describe());
    MT_CHECK(t.strides()[1] == 1 && t.strides()[0] >= std::max<int64_t>(1, t.shape()[1]),
             "gemm: ", what, " must have unit column stride, got ", t.describe());
    return {t.shape()[0], t.shape()[1], t.strides()[0]};
}

}  // namespace

void CpuBackend::gemm_f64(Transpose ta, Transpose tb, double alpha, const Tensor& a,
                          const Tensor& b, double beta, Tensor& c) {
    Matrix A = f64_matrix(a, "a"), B = f64_matrix(b, "b"), C = f64_matrix(c, "c");
    const bool at = ta == Transpose::yes, bt = tb == Transpose::yes;
    int64_t m = at ? A.cols : A.rows, k = at ? A.rows : A.cols;
    int64_t kb = bt ? B.cols : B.rows, n = bt ? B.rows : B.cols;
    MT_CHECK(k == kb && C.rows == m && C.cols == n, "gemm: shapes do not agree: op(a) is ", m, "x",
             k, ", op(b) ", kb, "x", n, ", c ", c.describe());
    if (m == 0 || n == 0) return;
    blas_gemm(at, bt, m, n, k, alpha, static_cast<const double*>(a.raw_data()), A.ld,
              static_cast<const double*>(b.raw_data()), B.ld, beta,
              static_cast<double*>(c.raw_data()), C.ld);
}

}  // namespace mt::cpu
