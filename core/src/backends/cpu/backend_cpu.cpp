// The CPU backend's memory and GEMM: host memory, OpenBLAS sgemm (a streaming kernel for the
// few-row products of decoding, where BLAS would spend its time packing the weights), dgemm for
// the f64 checks. The ops live in the files beside this one.
#include <algorithm>
#include <cstring>

#include "blas_calls.h"
#include "cpu_backend.h"
#include "cpu_features.h"
#include "gemm_bf16.h"
#include "half_as_float.h"
#include "mt/kernels/bf16.h"
#include "op_support.h"
#include "skinny_gemm.h"

namespace mt::cpu {

namespace {

// A 2-D f32 matrix as BLAS sees it: row-major with leading dimension = row stride.
struct Matrix {
    const float* data;
    int64_t rows, cols, ld;
};

Matrix as_matrix(const Tensor& t, const char* what) {
    MT_CHECK(t.dtype() == DType::f32, "gemm: ", what, " must be f32, got ", t.describe());
    MT_CHECK(t.dim() == 2, "gemm: ", what, " must be 2-D, got ", t.describe());
    MT_CHECK(t.strides()[1] == 1 && t.strides()[0] >= std::max<int64_t>(1, t.shape()[1]),
             "gemm: ", what, " must have unit column stride, got ", t.describe());
    return {static_cast<const float*>(t.raw_data()), t.shape()[0], t.shape()[1], t.strides()[0]};
}

}  // namespace

std::shared_ptr<Storage> CpuBackend::allocate(int64_t bytes) {
    return Tensor::empty({bytes}, DType::u8).storage();
}

void CpuBackend::copy(const Tensor& src, Tensor& dst) {
    MT_CHECK(src.device().type == DeviceType::cpu && dst.device().type == DeviceType::cpu,
             "the CPU backend copies between CPU tensors only, got ", src.describe(), " -> ",
             dst.describe());
    dst.copy_from(src);
}

void CpuBackend::fill(Tensor& x, double value) {
    MT_CHECK(x.device().type == DeviceType::cpu && x.is_contiguous(),
             "fill: x must be a contiguous CPU tensor, got ", x.describe());
    const int64_t n = x.numel();
    if (value == 0.0) {  // every dtype's zero is all zero bits
        std::memset(x.raw_data(), 0, size_t(x.nbytes()));
        return;
    }
    if (x.dtype() == DType::bf16 || x.dtype() == DType::f16) {
        const uint16_t bits =
            x.dtype() == DType::bf16 ? k::float_to_bf16(float(value)) : float_to_half(float(value));
        uint16_t* p = static_cast<uint16_t*>(x.raw_data());
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
        for (int64_t i = 0; i < n; ++i) p[i] = bits;
        return;
    }
    detail::check_float("fill", "x", x);
    detail::with_float(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T* p = detail::out_t<T>(x);
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMin)
        for (int64_t i = 0; i < n; ++i) p[i] = T(value);
    });
}

void CpuBackend::cast(const Tensor& src, Tensor& dst) {
    convert(src, dst);
}

void CpuBackend::gemm(Transpose ta, Transpose tb, float alpha, const Tensor& a, const Tensor& b,
                      float beta, Tensor& c) {
    if (a.dtype() == DType::f64) {
        gemm_f64(ta, tb, alpha, a, b, beta, c);
        return;
    }
    if (a.dtype() == DType::bf16) {
        gemm_bf16_tensors(ta, tb, alpha, a, b, beta, c);
        return;
    }
    if (any_half({&a, &b, &c})) {  // f16: this CPU has no f16 arithmetic; products in f32
        HalfAsFloat h;
        gemm(ta, tb, alpha, h.in(a), h.in(b), beta, h.inout(c));
        return h.finish();
    }
    Matrix A = as_matrix(a, "A"), B = as_matrix(b, "B"), C = as_matrix(c, "C");
    int64_t m = ta == Transpose::yes ? A.cols : A.rows;
    int64_t k = ta == Transpose::yes ? A.rows : A.cols;
    int64_t kb = tb == Transpose::yes ? B.cols : B.rows;
    int64_t n = tb == Transpose::yes ? B.rows : B.cols;
    MT_CHECK(k == kb && C.rows == m && C.cols == n, "gemm: shapes do not agree: op(A) is ", m, "x",
             k, ", op(B) is ", kb, "x", n, ", C is ", C.rows, "x", C.cols);
    if (m == 0 || n == 0) return;
    if (ta == Transpose::no && tb == Transpose::yes && m <= kSkinnyRows && k > 0) {
        skinny_gemm_nt(m, n, k, alpha, A.data, A.ld, B.data, B.ld, beta, const_cast<float*>(C.data),
                       C.ld);
        return;
    }
    parallel_blas_gemm(ta == Transpose::yes, tb == Transpose::yes, m, n, k, alpha, A.data, A.ld,
                       B.data, B.ld, beta, const_cast<float*>(C.data), C.ld);
}

void CpuBackend::grouped_gemm_nt(const Tensor& x, const std::vector<int64_t>& rows,
                                 const std::vector<Tensor>& weights, Tensor& y) {
    const bool f32 = x.dtype() == DType::f32 && y.dtype() == DType::f32 && !weights.empty() &&
                     std::all_of(weights.begin(), weights.end(), [&](const Tensor& w) {
                         return w.dtype() == DType::f32 && w.shape() == weights[0].shape();
                     });
    const bool skinny =
        std::all_of(rows.begin(), rows.end(), [](int64_t r) { return r >= 0 && r <= kSkinnyRows; });
    if (!f32 || !skinny || rows.size() != weights.size() || x.dim() != 2 || y.dim() != 2)
        return Backend::grouped_gemm_nt(x, rows, weights, y);
    Matrix X = as_matrix(x, "x"), Y = as_matrix(y, "y");
    std::vector<Matrix> W;
    for (const Tensor& w : weights) W.push_back(as_matrix(w, "a weight"));
    const int64_t n = W[0].rows, k = W[0].cols;
    MT_CHECK(X.cols == k && Y.cols == n && X.rows == Y.rows, "grouped_gemm_nt: x is ", X.rows, "x",
             X.cols, ", the weights ", n, "x", k, ", y ", Y.rows, "x", Y.cols);
    MT_CHECK(std::all_of(W.begin(), W.end(), [&](const Matrix& w) { return w.ld == W[0].ld; }),
             "grouped_gemm_nt: the weights' row strides differ");
    std::vector<SkinnyGroup> groups;
    int64_t begin = 0;
    for (size_t j = 0; j < rows.size(); ++j) {
        groups.push_back(
            {rows[j], X.data + begin * X.ld, W[j].data, const_cast<float*>(Y.data) + begin * Y.ld});
        begin += rows[j];
    }
    MT_CHECK(begin == X.rows, "grouped_gemm_nt: the groups hold ", begin, " of x's ", X.rows,
             " rows");
    grouped_skinny_gemm_nt(groups, n, k, X.ld, W[0].ld, Y.ld);
}

void CpuBackend::gemm_bf16_tensors(Transpose ta, Transpose tb, float alpha, const Tensor& a,
                                   const Tensor& b, float beta, Tensor& c) {
    // A and B bf16; C f32 (weight gradients accumulate in fp32, Megatron's main_grad) or bf16.
    auto matrix = [](const Tensor& t, const char* what) {
        MT_CHECK(t.dim() == 2 && t.device().type == DeviceType::cpu && t.strides()[1] == 1 &&
                     t.strides()[0] >= std::max<int64_t>(1, t.shape()[1]),
                 "gemm: ", what, " must be a 2-D CPU matrix with unit column stride, got ",
                 t.describe());
    };
    matrix(a, "A"), matrix(b, "B"), matrix(c, "C");
    MT_CHECK(b.dtype() == DType::bf16 && (c.dtype() == DType::f32 || c.dtype() == DType::bf16),
             "gemm: a bf16 A needs a bf16 B and an f32 or bf16 C, got ", b.describe(), " and ",
             c.describe());
    const bool at = ta == Transpose::yes, bt = tb == Transpose::yes;
    const int64_t m = at ? a.size(1) : a.size(0), k = at ? a.size(0) : a.size(1);
    const int64_t kb = bt ? b.size(1) : b.size(0), n = bt ? b.size(0) : b.size(1);
    MT_CHECK(k == kb && c.size(0) == m && c.size(1) == n, "gemm: shapes do not agree: op(A) is ", m,
             "x", k, ", op(B) is ", kb, "x", n, ", C is ", c.describe());
    if (m == 0 || n == 0) return;
    gemm_bf16(at, bt, m, n, k, alpha, static_cast<const uint16_t*>(a.raw_data()), a.strides()[0],
              static_cast<const uint16_t*>(b.raw_data()), b.strides()[0], beta, c.raw_data(),
              c.strides()[0], c.dtype() == DType::bf16);
}

void CpuBackend::gemm_batched(Transpose ta, Transpose tb, float alpha, const Tensor& a,
                              const Tensor& b, float beta, Tensor& c) {
    MT_CHECK(a.dim() == 3 && b.dim() == 3 && c.dim() == 3,
             "gemm_batched: 3-D tensors expected, got ", a.describe(), ", ", b.describe(), ", ",
             c.describe());
    MT_CHECK(a.size(0) == b.size(0) && a.size(0) == c.size(0),
             "gemm_batched: batch sizes differ: ", a.describe(), ", ", b.describe(), ", ",
             c.describe());
    for (int64_t i = 0; i < a.size(0); ++i) {
        Tensor ci = c.select(0, i);
        gemm(ta, tb, alpha, a.select(0, i), b.select(0, i), beta, ci);
    }
}

}  // namespace mt::cpu

namespace mt {

std::unique_ptr<Backend> make_cpu_backend() {
    // Reads MT_CPU_ISA here, where a bad value is an error for the tool to report, rather than
    // in the first kernel's parallel region.
    cpu::cpu_features();
    return std::make_unique<cpu::CpuBackend>();
}

}  // namespace mt
