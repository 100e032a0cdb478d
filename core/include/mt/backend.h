// Backend: one compute device. Owns allocation and host<->device copies and runs the closed
// set of ops (GEMM now; elementwise, row ops and attention join as the layers arrive).
// The CPU backend lives in core (OpenBLAS); the CUDA one is the plugin backend/cuda.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "mt/api.h"
#include "mt/tensor.h"

namespace mt {

enum class Transpose : uint8_t { no, yes };

class MT_API Backend {
  public:
    virtual ~Backend() = default;
    virtual std::string_view name() const = 0;
    virtual Device device() const = 0;

    // Uninitialised storage of `bytes` on this backend's device.
    virtual std::shared_ptr<Storage> allocate(int64_t bytes) = 0;
    // Contiguous copy between any two devices this backend can reach (host <-> its device).
    virtual void copy(const Tensor& src, Tensor& dst) = 0;
    // Waits until all queued work on the device is done.
    virtual void synchronize() = 0;

    // C = alpha * op(A) @ op(B) + beta * C for 2-D row-major f32 tensors (leading strides
    // may exceed the row length). op = transpose when the flag says so.
    virtual void gemm(Transpose ta, Transpose tb, float alpha, const Tensor& a, const Tensor& b,
                      float beta, Tensor& c) = 0;
    // Batched over the leading dimension of 3-D tensors: C[i] = alpha op(A[i]) op(B[i]) + beta
    // C[i].
    virtual void gemm_batched(Transpose ta, Transpose tb, float alpha, const Tensor& a,
                              const Tensor& b, float beta, Tensor& c) = 0;

    // A new tensor on this device.
    Tensor empty(const Shape& shape, DType dtype);
};

// The CPU backend (OpenBLAS + OpenMP), always available.
MT_API std::unique_ptr<Backend> make_cpu_backend();

}  // namespace mt
