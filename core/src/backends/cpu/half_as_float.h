// bf16 and f16 tensors through the f32 CPU ops: inputs are widened to f32 copies, outputs are
// computed in f32 scratch and narrowed back (round to nearest even) by finish(). Megatron computes
// the norms, softmax, loss and elementwise math of bf16 activations in fp32 as well; the GEMM is
// the one op with its own bf16 path (gemm_bf16.h).
#pragma once

#include <deque>
#include <initializer_list>
#include <utility>

#include "mt/tensor.h"

namespace mt::cpu {

// True when one of the tensors (undefined ones ignored) is f16 or bf16.
bool any_half(std::initializer_list<const Tensor*> tensors);
// True when one of them is f16 (the ops with a native bf16 path widen only those).
bool any_f16(std::initializer_list<const Tensor*> tensors);

class HalfAsFloat {
  public:
    // `t` itself unless it is f16 / bf16; then an f32 copy.
    const Tensor& in(const Tensor& t);
    // `t` itself unless it is f16 / bf16; then f32 scratch, for an op that overwrites all of
    // it, that finish() narrows back into t.
    Tensor& out(Tensor& t);
    // The same with t's contents widened first, for an op that adds into its output.
    Tensor& inout(Tensor& t);
    // Writes every out() and inout() back into its tensor.
    void finish();

  private:
    std::deque<Tensor> inputs_;  // deque: references stay valid
    std::deque<std::pair<Tensor*, Tensor>> outputs_;
    Tensor& output(Tensor& t, bool widen);
};

// dst = src converted (equal shapes, dst contiguous): between f32, f64, f16 and bf16.
void convert(const Tensor& src, Tensor& dst);

}  // namespace mt::cpu
