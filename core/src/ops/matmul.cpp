// f32 products through the backend; f64 through cblas_dgemm on host memory.
#include "mt/ops/matmul.h"

#include <cblas.h>

#include <algorithm>

namespace mt::ops {

namespace {

// Rows, columns and leading dimension of a row-major f64 CPU matrix.
struct Matrix {
    int64_t rows, cols, ld;
};

Matrix f64_matrix(const Tensor& t, const char* what) {
    MT_CHECK(t.dtype() == DType::f64 && t.dim() == 2 && t.device().type == DeviceType::cpu,
             "matmul: ", what, " must be a 2-D f64 CPU tensor, got ", t.describe());
    MT_CHECK(t.strides()[1] == 1 && t.strides()[0] >= std::max<int64_t>(1, t.shape()[1]),
             "matmul: ", what, " must have unit column stride, got ", t.describe());
    return {t.shape()[0], t.shape()[1], t.strides()[0]};
}

}  // namespace

void matmul(Backend& backend, Transpose ta, Transpose tb, const Tensor& a, const Tensor& b,
            float beta, Tensor& c) {
    if (a.dtype() != DType::f64) {
        backend.gemm(ta, tb, 1.0f, a, b, beta, c);
        return;
    }
    Matrix A = f64_matrix(a, "a"), B = f64_matrix(b, "b"), C = f64_matrix(c, "c");
    const bool at = ta == Transpose::yes, bt = tb == Transpose::yes;
    int64_t m = at ? A.cols : A.rows, k = at ? A.rows : A.cols;
    int64_t kb = bt ? B.cols : B.rows, n = bt ? B.rows : B.cols;
    MT_CHECK(k == kb && C.rows == m && C.cols == n, "matmul: shapes do not agree: op(a) is ", m,
             "x", k, ", op(b) ", kb, "x", n, ", c ", c.describe());
    if (m == 0 || n == 0) return;
    cblas_dgemm(CblasRowMajor, at ? CblasTrans : CblasNoTrans, bt ? CblasTrans : CblasNoTrans,
                int(m), int(n), int(k), 1.0, static_cast<const double*>(a.raw_data()), int(A.ld),
                static_cast<const double*>(b.raw_data()), int(B.ld), double(beta),
                static_cast<double*>(c.raw_data()), int(C.ld));
}

}  // namespace mt::ops
