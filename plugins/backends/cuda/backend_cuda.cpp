#include "backend_cuda.h"

#include "cuda_check.h"

namespace mt::plugins::cuda {

namespace {

// cuBLAS is column-major: a row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T,
// so the operands swap and the leading dimensions are the row strides.
struct DeviceMatrix {
    const float* data;
    int64_t rows, cols, ld;
};

DeviceMatrix as_matrix(const Tensor& t, Device device, const char* what) {
    MT_CHECK(t.device() == device, "cuda gemm: ", what, " is on ", t.device().str(), ", not ",
             device.str());
    MT_CHECK(t.dtype() == DType::f32 && t.dim() == 2 && t.strides()[1] == 1, "cuda gemm: ", what,
             " must be a 2-D f32 matrix with unit column stride, got ", t.describe());
    return {static_cast<const float*>(t.raw_data()), t.shape()[0], t.shape()[1], t.strides()[0]};
}

cudaMemcpyKind copy_kind(Device src, Device dst) {
    bool s = src.type == DeviceType::cuda, d = dst.type == DeviceType::cuda;
    return s ? (d ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
             : (d ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
}

class CudaBackend final : public Backend {
  public:
    explicit CudaBackend(int index) : device_{DeviceType::cuda, index} {
        int count = device_count();
        MT_CHECK(index >= 0 && index < count, "CUDA device ", index, " does not exist (", count,
                 " visible)");
        MT_CUDA_CHECK(cudaSetDevice(index));
        MT_CUBLAS_CHECK(cublasCreate(&cublas_));
    }
    ~CudaBackend() override { cublasDestroy(cublas_); }

    std::string_view name() const override { return "cuda"; }
    Device device() const override { return device_; }

    std::shared_ptr<Storage> allocate(int64_t bytes) override {
        MT_CUDA_CHECK(cudaSetDevice(device_.index));
        auto st = std::make_shared<Storage>();
        if (bytes > 0) MT_CUDA_CHECK(cudaMalloc(&st->data, static_cast<size_t>(bytes)));
        st->bytes = bytes;
        st->device = device_;
        st->deleter = [](void* p) { cudaFree(p); };
        return st;
    }

    void copy(const Tensor& src, Tensor& dst) override {
        MT_CHECK(src.shape() == dst.shape() && src.dtype() == dst.dtype(),
                 "cuda copy: ", src.describe(), " into ", dst.describe());
        MT_CHECK(src.is_contiguous() && dst.is_contiguous(),
                 "cuda copy: both tensors must be contiguous");
        MT_CUDA_CHECK(cudaMemcpy(dst.raw_data(), src.raw_data(), static_cast<size_t>(src.nbytes()),
                                 copy_kind(src.device(), dst.device())));
    }

    void synchronize() override { MT_CUDA_CHECK(cudaDeviceSynchronize()); }

    void gemm(Transpose ta, Transpose tb, float alpha, const Tensor& a, const Tensor& b, float beta,
              Tensor& c) override {
        DeviceMatrix A = as_matrix(a, device_, "A"), B = as_matrix(b, device_, "B"),
                     C = as_matrix(c, device_, "C");
        int64_t m = ta == Transpose::yes ? A.cols : A.rows;
        int64_t k = ta == Transpose::yes ? A.rows : A.cols;
        int64_t kb = tb == Transpose::yes ? B.cols : B.rows;
        int64_t n = tb == Transpose::yes ? B.rows : B.cols;
        MT_CHECK(k == kb && C.rows == m && C.cols == n, "cuda gemm: shapes do not agree: op(A) is ",
                 m, "x", k, ", op(B) is ", kb, "x", n, ", C is ", C.rows, "x", C.cols);
        if (m == 0 || n == 0) return;
        MT_CUBLAS_CHECK(cublasSgemm(cublas_, tb == Transpose::yes ? CUBLAS_OP_T : CUBLAS_OP_N,
                                    ta == Transpose::yes ? CUBLAS_OP_T : CUBLAS_OP_N,
                                    static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
                                    &alpha, B.data, static_cast<int>(B.ld), A.data,
                                    static_cast<int>(A.ld), &beta, const_cast<float*>(C.data),
                                    static_cast<int>(C.ld)));
    }

    void gemm_batched(Transpose ta, Transpose tb, float alpha, const Tensor& a, const Tensor& b,
                      float beta, Tensor& c) override {
        MT_CHECK(a.dim() == 3 && b.dim() == 3 && c.dim() == 3 && a.size(0) == b.size(0) &&
                     a.size(0) == c.size(0),
                 "cuda gemm_batched: 3-D tensors with one batch size expected, got ", a.describe(),
                 ", ", b.describe(), ", ", c.describe());
        for (int64_t i = 0; i < a.size(0); ++i) {
            Tensor ci = c.select(0, i);
            gemm(ta, tb, alpha, a.select(0, i), b.select(0, i), beta, ci);
        }
    }

  private:
    Device device_;
    cublasHandle_t cublas_ = nullptr;
};

}  // namespace

int device_count() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
    return count;
}

std::unique_ptr<Backend> make_cuda_backend(int device_index) {
    return std::make_unique<CudaBackend>(device_index);
}

}  // namespace mt::plugins::cuda
