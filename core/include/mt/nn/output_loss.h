// OutputLoss: the output layer (logits = h W^T, W (V, H)) fused with per-token cross-entropy,
// computed over chunks of rows so the (B T, V) logits are never all live: the forward keeps
// only each row's log-sum-exp; the backward recomputes each chunk's logits.
#pragma once

#include <cstdint>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/parameter.h"

namespace mt::nn {

class MT_API OutputLoss {
  public:
    struct Saved {
        Tensor hidden;   // (N, H) the forward's input rows
        Tensor targets;  // (N) token ids
        Tensor lse;      // (N) log-sum-exp of each row's logits
    };

    // The weight is "output_layer.weight" (V, H, vocab-parallel), or, with tied embeddings
    // (Megatron's default), the word embedding `tied` (its grad receives the output's grad).
    // chunk_rows: rows of logits live at once.
    OutputLoss(int64_t vocab, int64_t hidden, Parameter* tied, int64_t chunk_rows, DType dtype,
               Backend& backend);

    // hidden (B, T, H), targets (B, T) i64/i32 -> losses (B, T) = lse - logit[target].
    Tensor forward(const Tensor& hidden, const Tensor& targets, Saved* saved) const;
    // Inference: hidden (B, T, H) -> logits (B, T, V) = hidden W^T.
    Tensor logits(const Tensor& hidden) const;
    // dlosses (B, T) -> dhidden (B, T, H); weight.grad += dlogits^T h, chunk by chunk.
    Tensor backward(const Tensor& dlosses, const Saved& saved);

    // The owned weight only (a tied weight belongs to the embedding).
    void collect_parameters(std::vector<Parameter*>& out);
    Parameter& weight() { return tied_ ? *tied_ : weight_; }

  private:
    const Parameter& weight_param() const { return tied_ ? *tied_ : weight_; }

    int64_t vocab_, hidden_, chunk_rows_;
    Parameter* tied_;
    Parameter weight_;
    Backend* backend_;
};

}  // namespace mt::nn
