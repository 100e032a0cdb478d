// SelfAttention: Megatron's self-attention (causal for GPT, over padding for BERT: see
// AttentionMask) with the fused QKV projection
// ("<prefix>.linear_qkv", rows grouped per query group: [q heads of the group, k, v]),
// multi-head or grouped-query, optional per-head norms of q and k ("<prefix>.q_layernorm",
// "<prefix>.k_layernorm"), optional rotary embeddings on q and k, block-wise softmax attention
// with dropout, then "<prefix>.linear_proj".
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/attention_mask.h"
#include "mt/nn/dropout.h"
#include "mt/nn/inference_state.h"
#include "mt/nn/linear.h"
#include "mt/nn/norm.h"
#include "mt/nn/transformer_config.h"

namespace mt::nn {

// Self-attention's inference state: the keys and values of the positions read, (B, slots, ng,
// hd) each (this rank's groups with tensor parallelism), position s at slot s % slots. Without a
// sliding window there is a slot per position; with one, only the window's (slots grow when a
// step adds more positions than the ring holds beyond the window).
struct KvState final : SublayerState {
    Tensor k, v;
    int64_t capacity = 0;  // the positions the state may reach
    int64_t bytes() const override { return held_bytes(k) + held_bytes(v); }
};

// Where inference keeps one layer's keys and values: the new tokens' go to positions past ..
// past+T-1 of layer's tensors, and attention reads positions 0 .. past+T-1.
struct KvSlot {
    KvState* layer = nullptr;  // null: no cache (training, scoring)
    int64_t past = 0;
    // Instead of one layer: a step of continuous batching, row b's new tokens going to rows[b]
    // from position pasts[b] on (each a batch-1 state of its own request).
    std::span<KvState* const> rows = {};
    std::span<const int64_t> pasts = {};

    bool cached() const { return layer || !rows.empty(); }
};

// The attention kernel's settings for a training or scoring pass of q (B, T, nq, hd) under
// `mask` (causal or not, documents, padding, bias) with `scale` and this tensor-parallel rank's
// draw of the layer's attention dropout; without context parallelism.
MT_API ops::AttentionConfig attention_config(const TransformerConfig& config, double scale,
                                             const Tensor& q, DropoutContext& ctx,
                                             const AttentionMask& mask, Backend& backend);

class MT_API SelfAttention {
  public:
    struct Saved {
        Linear::Saved qkv;
        Norm::Saved q_norm, k_norm;      // --qk-layernorm
        Tensor q;                        // (B, T, nq, hd) after rotary
        Tensor k;                        // (B, T, ng, hd) after rotary
        Tensor v;                        // (B, T, ng, hd)
        Tensor out;                      // (B, T, nq, hd) attention output, before linear_proj
        Tensor lse;                      // (B, nq, T) row log-sum-exp of the scaled scores
        ops::AttentionConfig attention;  // scale, block and the dropout draw (seed, offset)
        std::vector<ops::AttentionConfig> ring;  // context parallelism: each ring step's
        Linear::Saved proj;
    };

    // linear_qkv ((nq + 2 ng) hd, H), column-parallel in ng groups; linear_proj (H, nq hd),
    // row-parallel. Biases: qkv when add_bias_linear or add_qkv_bias; proj when add_bias_linear.
    SelfAttention(const std::string& prefix, const TransformerConfig& config, Backend& backend);

    // x (B, T, H) -> (B, T, H) attending as `mask` says (with context parallelism: x holds this
    // rank's two chunks of the sequence, the mask is causal without documents or padding).
    // Attention dropout draws B nq T T counters from ctx. With a cache (inference: saved null, a
    // causal mask with at most a bias, no dropout) x holds positions cache.past .. and attends
    // over the cached keys too.
    Tensor forward(const Tensor& x, DropoutContext& ctx, Saved* saved,
                   const AttentionMask& mask = {}, const KvSlot& cache = {}) const;
    // dy (B, T, H) -> dx (B, T, H); qkv/proj grads +=.
    Tensor backward(const Tensor& dy, const Saved& saved);

    // The learned softmax offsets, linear_qkv's parameters, then the q and k norms'
    // (Megatron-core's order).
    void collect_parameters(std::vector<Parameter*>& out);
    Linear& linear_qkv() { return qkv_; }
    Linear& linear_proj() { return proj_; }
    // core_attention.softmax_offset (--softmax-type learnable; none otherwise): Megatron's
    // Attention builds its core_attention before linear_proj and linear_qkv.
    void collect_softmax_offset(std::vector<Parameter*>& out) {
        if (softmax_offset_) out.push_back(&*softmax_offset_);
    }
    // The q and k norms' parameters (none without --qk-layernorm).
    void collect_qk_norm_parameters(std::vector<Parameter*>& out);
    // An empty KV state for `batch` rows of up to `capacity` positions.
    std::unique_ptr<KvState> make_state(int64_t batch, int64_t capacity) const;

  private:
    // The rotary tables for positions [first, first + count) (empty tensors without rope):
    // rows of tables kept for the longest length seen, so decoding does not recompute the
    // cos/sin of every earlier position at each step.
    ops::RopeTables rope_tables(int64_t first, int64_t count) const;
    // Those of a training sequence of `length` tokens held here: positions 0 .. length-1, or
    // with context parallelism this rank's two chunks of the whole sequence (made once per
    // length and kept).
    ops::RopeTables sequence_rope_tables(int64_t length) const;
    // Attention of a training sequence (s.q, s.k, s.v set) into s.out and s.lse: one kernel
    // call, or the ring over the context-parallel ranks.
    void attend(Saved& s, DropoutContext& ctx, const AttentionMask& mask) const;
    // The new positions past.. of k and v (B, T, ng, hd) into the state's ring.
    void write_ring(KvState& state, const Tensor& k, const Tensor& v, int64_t past) const;
    // The state's ring made `slots` long, the positions before `past` it held kept.
    void grow_ring(KvState& state, int64_t past, int64_t slots) const;
    // Inference: stores k and v (B, T, ng, hd) in the cache and attends q over it (plus the
    // mask's bias, (nq, T, past + T), when defined).
    Tensor attend_cached(const Tensor& q, const Tensor& k, const Tensor& v, const KvSlot& cache,
                         const Tensor& bias) const;
    // The same for continuous batching's rows (cache.rows): each row's new position stored in
    // its own state and attended over it.
    Tensor attend_rows(const Tensor& q, const Tensor& k, const Tensor& v,
                       const KvSlot& cache) const;
    // attend_cached's attention into out (q's shape), without the output projection.
    void store_and_attend(const Tensor& q, const Tensor& k, const Tensor& v, const KvSlot& cache,
                          const Tensor& bias, Tensor& out) const;

    // The attention sink of this rank's heads for a pass (undefined with --softmax-type
    // vanilla), in the attention's accumulation dtype.
    Tensor sink() const;
    // The scores' scale: --softmax-scale, or 1/sqrt(head dim).
    double scores_scale() const;

    TransformerConfig config_;
    int64_t nq_, ng_, hd_;
    // --softmax-type learnable: core_attention.softmax_offset (this rank's heads); off-by-one:
    // its zeros, made once.
    std::optional<Parameter> softmax_offset_;
    Tensor zero_sink_;
    Linear qkv_, proj_;
    std::optional<Norm> q_norm_, k_norm_;  // --qk-layernorm
    Backend* backend_;
    mutable ops::RopeTables rope_;         // see rope_tables()
    mutable ops::RopeTables chunks_rope_;  // see sequence_rope_tables(): context parallelism
};

}  // namespace mt::nn
