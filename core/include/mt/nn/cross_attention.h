// CrossAttention: Megatron-core's CrossAttention, a decoder layer's attention over the encoder's
// output (T5): "<prefix>.linear_q" on the decoder stream, "<prefix>.linear_kv" on the encoder
// output (rows [k; v] per head), bidirectional attention over the encoder's tokens (its padding
// masked), then "<prefix>.linear_proj". Megatron refuses grouped-query attention here: one
// key/value head per query head.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/dropout.h"
#include "mt/nn/inference_state.h"
#include "mt/nn/layer_spec.h"
#include "mt/nn/linear.h"
#include "mt/nn/transformer_config.h"

namespace mt::nn {

// Cross-attention's inference state: the keys and values of the encoder's output, (B, Tk, nq,
// hd) each (this rank's heads), projected by the first step of a request and read by every
// later one; in the attention's compute dtype (upcast_dtype: f32 for a bf16 model).
struct CrossKvState final : SublayerState {
    Tensor k, v;
    int64_t bytes() const override { return held_bytes(k) + held_bytes(v); }
};

class MT_API CrossAttention {
  public:
    struct Saved {
        Linear::Saved q_proj, kv_proj;
        Tensor q;                        // (B, Tq, nq, hd)
        Tensor k, v;                     // (B, Tk, nq, hd)
        Tensor out;                      // (B, Tq, nq, hd) before linear_proj
        Tensor lse;                      // (B, nq, Tq)
        ops::AttentionConfig attention;  // scale, padding and the dropout draw
        Linear::Saved proj;
        Tensor* context_grad = nullptr;  // the encoder output's gradient (EncoderContext::grad)
    };

    // linear_q (nq hd, H) and linear_kv (2 nq hd, H) column-parallel by heads, linear_proj
    // (H, nq hd) row-parallel; biases with add_bias_linear.
    CrossAttention(const std::string& prefix, const TransformerConfig& config, Backend& backend);

    // x (B, Tq, H), the decoder stream -> (B, Tq, H), attending over `encoder` (its states
    // (B, Tk, H); sequence parallel: this rank's shard of both). Attention dropout draws
    // B nq Tq Tk counters from ctx. With `cache` (inference: saved null, no dropout) the keys
    // and values come from it, projected from the encoder's states when it is empty.
    Tensor forward(const Tensor& x, DropoutContext& ctx, Saved* saved,
                   const EncoderContext& encoder, CrossKvState* cache = nullptr) const;
    // dy -> dx; the encoder states' gradient is added to *saved.context_grad; linear grads +=.
    Tensor backward(const Tensor& dy, const Saved& saved);

    // Megatron-core's order: linear_proj, linear_q, linear_kv.
    void collect_parameters(std::vector<Parameter*>& out);
    Linear& linear_q() { return q_; }
    std::unique_ptr<CrossKvState> make_state() const { return std::make_unique<CrossKvState>(); }

  private:
    // The encoder states' keys and values (B, Tk, nq, hd) each, from one projection.
    void project_kv(const Tensor& states, Linear::Saved* saved, Tensor& k, Tensor& v) const;

    TransformerConfig config_;
    int64_t nq_, hd_;
    Linear q_, kv_, proj_;
    Backend* backend_;
};

}  // namespace mt::nn
