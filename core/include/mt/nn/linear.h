// Linear: y = x W^T + b with W stored (out, in) as Megatron and PyTorch do; the building block
// of QKV, projection, MLP and output layers. Forward saves its input; backward accumulates
// the weight and bias grads and returns dx. Split over a tensor-parallel group it is Megatron's
// ColumnParallelLinear (column shard) or RowParallelLinear (row shard).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/fp8_config.h"
#include "mt/nn/parameter.h"
#include "mt/nn/tensor_parallel.h"

namespace mt::nn {

class MT_API Linear {
  public:
    // Saved tensors share storage with the forward's tensors (no copies): a caller must not
    // overwrite x in place before the backward.
    struct Saved {
        Tensor input;  // (N, in): the GEMM's input, flattened (sequence parallel: gathered)
        Tensor input_fp8;  // in FP8: that input quantized and read back (f32), for dW
    };

    // Parameters "<name>.weight" (out, in) and, when bias, "<name>.bias" (out) (no decay); in
    // and out are the whole layer's. Over `tp`, a column shard keeps out/tp rows of the weight
    // (and of the bias), a row shard in/tp columns (the bias stays whole, added after the sum).
    Linear(const std::string& name, int64_t in, int64_t out, bool bias, DType dtype,
           ShardSpec shard, Backend& backend, TensorParallel tp = {});

    // x (..., in) -> y (..., out), e.g. (N, in) or (B, T, in); saved may be null (inference).
    // Column shard: x replicated (sequence parallel: this rank's sequence shard of (B, T, in)),
    // y this rank's out/tp features of every position. Row shard: x this rank's in/tp features,
    // y summed over the ranks (sequence parallel: this rank's sequence shard).
    Tensor forward(const Tensor& x, Saved* saved) const;
    // dy shaped like y -> dx shaped like x. weight.grad += dy^T x; bias.grad += dy's column sums.
    Tensor backward(const Tensor& dy, const Saved& saved);
    // What forward(x, &saved) keeps, without the product: the input of a recomputed norm.
    Saved saved_for(const Tensor& x) const;
    // forward's output again from what it kept, (N, out) for the N saved rows: the same numbers,
    // for a module that recomputes its activations (not for a row shard, whose sum crosses ranks).
    Tensor output_of(const Saved& saved) const;

    // Runs the GEMMs in FP8 (fp8.enabled) as Transformer Engine's linears do under
    // fp8_autocast: forward y = q(x) q(W)^T, backward dx = q(dy) q(W) and dW += q(dy)^T q(x),
    // each operand quantized with its current amax (tensorwise, mt/nn/fp8.h), with the scales
    // of this linear's meters in fp8.scaling (mt/nn/fp8_scaling.h), or in blocks along
    // the dimension each GEMM sums over (mxfp8, blockwise: so x, W and dy are each quantized two
    // ways; the blockwise recipe's 128 x 128 weight tiles serve both); the products summed in
    // f32 and y, dx rounded to the activations' dtype; the bias and its grad stay in that dtype
    // (bgrad from the unquantized dy, as TE's cast + dbias). Within a model's pass the weight
    // is quantized once (each way) and reused.
    void use_fp8(const Fp8Config& fp8);

    // The delayed recipe's meters of this linear (null otherwise).
    const Fp8LinearMeters* fp8_meters() const { return meters_.get(); }

    void collect_parameters(std::vector<Parameter*>& out);
    Parameter& weight() { return weight_; }
    const Parameter& weight() const { return weight_; }
    Parameter* bias() { return has_bias_ ? &bias_ : nullptr; }
    // This rank's weight shape is (out_features, in_features).
    int64_t in_features() const { return in_; }
    int64_t out_features() const { return out_; }

  private:
    // x2 (N, in) times the weight: (N, out), before any bias or reduction. In FP8, the
    // quantized operands go to *saved when given.
    Tensor product(const Tensor& x2, Saved* saved = nullptr) const;
    // The FP8 operands, quantized as the recipe says (read back in f32). down_columns: for a
    // GEMM that sums over the operand's rows (MXFP8's blocks run down its columns; the other
    // recipes quantize both uses alike).
    Tensor fp8_quantized(const Tensor& t, Fp8Meter* meter, ops::Fp8Type type, bool weight,
                         bool down_columns) const;
    Tensor fp8_input(const Tensor& x2, bool down_columns = false) const;
    Tensor fp8_weight_operand(bool down_columns = false) const;
    Tensor fp8_grad(const Tensor& dy2, bool down_columns = false) const;
    bool block_scaled() const {
        return fp8_.recipe == Fp8Recipe::mxfp8 || fp8_.recipe == Fp8Recipe::blockwise;
    }
    bool column() const;
    // What the FP8 weight is quantized from: the f32 main param with --fp8-param-gather, else
    // the weight's value.
    const Tensor& fp8_weight() const {
        return weight_.fp8_main.defined() ? weight_.fp8_main : weight_.value;
    }
    // The layer's input as the GEMM sees it: gathered along the sequence when column-parallel
    // under sequence parallelism.
    Tensor gathered(const Tensor& x) const;
    bool row() const;

    int64_t in_, out_;  // local
    bool has_bias_;
    Parameter weight_, bias_;
    Backend* backend_;
    TensorParallel tp_;
    Fp8Config fp8_;
    std::shared_ptr<Fp8LinearMeters> meters_;  // delayed scaling's
    // The weight quantized in the pass fp8_.scaling counts (0: none), for the GEMMs that sum
    // over its columns and (block scaling) its rows.
    mutable Tensor weight_fp8_, weight_fp8_down_;
    mutable uint64_t weight_pass_ = 0, weight_down_pass_ = 0;
};

// x's shape with the last dimension replaced by `last`.
MT_API Shape with_last_dim(const Shape& shape, int64_t last);

}  // namespace mt::nn
