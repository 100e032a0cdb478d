// Linear: y = x W^T + b with W stored (out, in) as Megatron and PyTorch do; the building block
// of QKV, projection, MLP and output layers. Forward saves its input; backward accumulates
// the weight and bias grads and returns dx.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/parameter.h"

namespace mt::nn {

class MT_API Linear {
  public:
    // Saved tensors share storage with the forward's tensors (no copies): a caller must not
    // overwrite x in place before the backward.
    struct Saved {
        Tensor input;  // (N, in): the forward's x, flattened
    };

    // Parameters "<name>.weight" (out, in) and, when bias, "<name>.bias" (out) (no decay).
    Linear(const std::string& name, int64_t in, int64_t out, bool bias, DType dtype,
           ShardSpec shard, Backend& backend);

    // x (..., in), e.g. (N, in) or (B, T, in) -> y (..., out). saved may be null (inference).
    Tensor forward(const Tensor& x, Saved* saved) const;
    // dy (..., out) -> dx (..., in). weight.grad += dy^T x; bias.grad += sum over rows of dy.
    Tensor backward(const Tensor& dy, const Saved& saved);

    void collect_parameters(std::vector<Parameter*>& out);
    Parameter& weight() { return weight_; }
    Parameter* bias() { return has_bias_ ? &bias_ : nullptr; }
    int64_t in_features() const { return in_; }
    int64_t out_features() const { return out_; }

  private:
    int64_t in_, out_;
    bool has_bias_;
    Parameter weight_, bias_;
    Backend* backend_;
};

// x's shape with the last dimension replaced by `last`.
MT_API Shape with_last_dim(const Shape& shape, int64_t last);

}  // namespace mt::nn
