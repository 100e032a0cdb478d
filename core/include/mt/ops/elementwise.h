// Elementwise ops on CPU tensors (f32 or f64, contiguous): activations forward/backward by enum,
// SwiGLU on the split fc1 output, and the plain arithmetic the layers need. The math of each
// activation lives once in mt/kernels/activations.h; these functions are the CPU traversal.
// Outputs are preallocated by the caller and may alias inputs of the same shape.
#pragma once

#include <cstdint>

#include "mt/api.h"
#include "mt/tensor.h"

namespace mt::ops {

enum class UnaryOp : uint8_t {
    gelu,      // tanh approximation (Megatron bias_gelu, --openai-gelu)
    gelu_erf,  // exact erf GELU (F.gelu)
    silu,
    relu,
    squared_relu,  // --squared-relu
};

MT_API const char* unary_op_name(UnaryOp op);

// y = op(x). x, y: any shape, equal.
MT_API void unary_forward(UnaryOp op, const Tensor& x, Tensor& y);
// dx = op'(x) * dy. x, dy, dx: equal shapes (x is the forward's input).
MT_API void unary_backward(UnaryOp op, const Tensor& x, const Tensor& dy, Tensor& dx);

// SwiGLU as Megatron splits it: x (..., 2F) = [gate | up] along the last dim, y (..., F) =
// silu(gate) * up. Backward writes dx (..., 2F) = [d_gate | d_up] from x and dy (..., F).
MT_API void swiglu_forward(const Tensor& x, Tensor& y);
MT_API void swiglu_backward(const Tensor& x, const Tensor& dy, Tensor& dx);

// y = a + b (equal shapes).
MT_API void add(const Tensor& a, const Tensor& b, Tensor& y);
// y = alpha * x.
MT_API void scale(const Tensor& x, float alpha, Tensor& y);
// y += alpha * x (gradient accumulation).
MT_API void axpy(float alpha, const Tensor& x, Tensor& y);

}  // namespace mt::ops
