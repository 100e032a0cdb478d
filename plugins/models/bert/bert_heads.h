// The modules BERT puts after its encoder, in Megatron-core's names: the Pooler ([CLS] state
// -> dense -> tanh), the BertLMHead (dense -> erf GeLU -> LayerNorm, ahead of the output layer),
// and a linear head over the pooled state scored with cross-entropy (the binary sentence-order
// head; the finetuning tasks' classification and multiple-choice heads, with their dropout).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mt/backend.h"
#include "mt/nn/dropout.h"
#include "mt/nn/linear.h"
#include "mt/nn/norm.h"
#include "mt/nn/transformer_config.h"

namespace mt::plugins::bert {

class Pooler {
  public:
    struct Saved {
        nn::Linear::Saved dense;
        Tensor pre_tanh;  // (B, H)
        Shape hidden_shape;
    };
    // "pooler.dense" (H, H) with a bias.
    Pooler(const nn::TransformerConfig& config, Backend& backend);
    // hidden (B, T, H) (sequence parallel: this rank's shard) -> tanh(dense(hidden[:, 0])) (B, H).
    Tensor forward(const Tensor& hidden, Saved* saved) const;
    // dpooled (B, H) -> dhidden shaped like hidden, zero but at position 0.
    Tensor backward(const Tensor& dpooled, const Saved& saved);
    void collect_parameters(std::vector<nn::Parameter*>& out) { dense_.collect_parameters(out); }

  private:
    nn::Linear dense_;
    Backend* backend_;
    nn::TensorParallel tp_;
};

class LmHead {
  public:
    struct Saved {
        nn::Linear::Saved dense;
        Tensor pre_gelu;
        nn::Norm::Saved norm;
    };
    // "lm_head.dense" (H, H) with a bias, "lm_head.layer_norm" (the encoder's norm settings).
    LmHead(const nn::TransformerConfig& config, Backend& backend);
    Tensor forward(const Tensor& hidden, Saved* saved) const;
    Tensor backward(const Tensor& dy, const Saved& saved);
    void collect_parameters(std::vector<nn::Parameter*>& out);

  private:
    nn::Linear dense_;
    nn::Norm norm_;
    Backend* backend_;
};

// logits = linear(dropout(pooled)) and, against integer targets, the per-row cross-entropy.
class PooledHead {
  public:
    struct Saved {
        nn::DropoutDraw dropout;
        nn::Linear::Saved linear;
        Tensor logits, targets, lse;  // the scored logits (any (N, K) view), (N), (N)
        Shape out_shape;              // the linear's output shape
    };
    // `name` ("binary_head", "classification_head", "multichoice_head"): (K, H) with a bias;
    // dropout: applied to the pooled state first (the task heads' hidden dropout; 0 for none).
    PooledHead(const std::string& name, int64_t classes, float dropout,
               const nn::TransformerConfig& config, Backend& backend);
    // pooled (N, H) -> logits (N, K) in f32 (an f64 model: f64).
    Tensor logits(const Tensor& pooled, nn::DropoutContext& ctx, Saved* saved) const;
    // The cross-entropy of logits (N, K) against targets (N) i64, each in [0, K).
    Tensor losses(const Tensor& logits, const Tensor& targets, Saved& saved) const;
    // dlosses (N) -> dpooled (N, H).
    Tensor backward(const Tensor& dlosses, const Saved& saved);
    void collect_parameters(std::vector<nn::Parameter*>& out) { linear_.collect_parameters(out); }

  private:
    nn::Linear linear_;
    float dropout_;
    Backend* backend_;
};

}  // namespace mt::plugins::bert
