// MultiLatentAttention: megatron-core's MLASelfAttention (DeepSeek-V2/V3). Queries come from
// the hidden states through a low-rank pair ("<prefix>.linear_q_down_proj", the q norm,
// "<prefix>.linear_q_up_proj") or one projection ("<prefix>.linear_q_proj"); keys and values
// through a compressed latent ("<prefix>.linear_kv_down_proj" gives the latent and one shared
// rope key, the kv norm, "<prefix>.linear_kv_up_proj" gives each head's key part and value).
// Each query and key head is [qk_head_dim without rope | qk_pos_emb_head_dim rotated]; the
// rotation pairs neighbours (MLA's de-interleaving before rotate-half pairs them so) under
// YaRN's frequencies and mscale; then causal attention and "<prefix>.linear_proj".
#pragma once

#include <memory>
#include <optional>
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

// Multi-latent attention's inference state: per position the normalised latent, then the
// rotated rope key: (B, capacity, 1, kv_lora_rank + qk_pos_emb_head_dim), the keys and values
// of one query group in the absorbed form (attend_latents).
struct MlaState final : SublayerState {
    Tensor latent_and_rope_key;
    int64_t bytes() const override { return held_bytes(latent_and_rope_key); }
};

class MT_API MultiLatentAttention {
  public:
    struct Saved {
        Linear::Saved q_down, q_up, kv_down, kv_up, proj;  // q_down: linear_q_proj without lora
        Norm::Saved q_norm, kv_norm;
        // (B, T, nq, D) with D = max(q head, v head) (the shorter ones zero-padded, so one
        // kernel with equal head sizes runs them); out before linear_proj.
        Tensor q, k, v, out;
        Tensor lse;  // (B, nq, T)
        // With --recompute-modules mla_up_proj: q, k and v are dropped, and the rotated rope
        // key (B, T, 1, rope dim) kept to rebuild them.
        Tensor rope_key;
        ops::AttentionConfig attention;
    };

    // The module's linears over config.tp as Megatron 0.13's specs split them (the up-
    // projections column-parallel by heads, the down-projections column-parallel with their
    // outputs gathered, linear_proj row-parallel), and the q and kv norms when
    // config.qk_layernorm (Megatron's MLA specs have none otherwise). Not supported yet: context
    // parallelism.
    MultiLatentAttention(const std::string& prefix, const TransformerConfig& config,
                         Backend& backend);

    // x (B, T, H) -> (B, T, H) under `mask`. With `state` (inference: saved null, a causal mask
    // without documents, no dropout) x holds positions past .. past + T - 1 and attends over the
    // cached positions too.
    Tensor forward(const Tensor& x, DropoutContext& ctx, Saved* saved, const AttentionMask& mask,
                   MlaState* state = nullptr, int64_t past = 0) const;
    // dy (B, T, H) -> dx (B, T, H); every parameter grad +=.
    Tensor backward(const Tensor& dy, const Saved& saved);
    // What forward keeps of x (the input of its first linears), rebuilt for selective recompute.
    void restore_input(Saved& saved, const Tensor& x) const;
    // What forward keeps without x.
    static void drop_input(Saved& saved);

    // Megatron's state-dict order: linear_proj, the q linears, the kv linears, then the q and kv
    // norms (Transformer Engine's names put each norm before its up-projection's weight).
    void collect_parameters(std::vector<Parameter*>& out);
    std::unique_ptr<MlaState> make_state(int64_t batch, int64_t capacity) const;

  private:
    // The rope tables of positions [first, first + count), kept for the longest length seen.
    ops::RopeTables rope_tables(int64_t first, int64_t count) const;
    // q (B, T, nq, q head) from x, its rope part rotated for positions from `first`.
    Tensor queries(const Tensor& x, Saved* saved, int64_t first) const;
    // The queries' up-projection (B, T, nq * q head) or (B T, ...) as (B, T, nq, q head), its
    // rope part rotated for positions from `first`.
    Tensor rotated_queries(const Tensor& projected, int64_t B, int64_t T, int64_t first) const;
    // The normalised latent (B, T, kv_lora_rank) and the rotated rope key (B, T, 1, rope dim).
    std::pair<Tensor, Tensor> latent_and_rope_key(const Tensor& x, Saved* saved,
                                                  int64_t first) const;
    // Padded (B, L, nq, D) keys and values from linear_kv_up_proj's output for L positions
    // ((B, L, ...) or (B L, ...)) and their rope keys (B, L, 1, rope dim).
    std::pair<Tensor, Tensor> keys_and_values(const Tensor& projected,
                                              const Tensor& rope_key) const;
    // `saved` with q, k and v rebuilt when --recompute-modules mla_up_proj dropped them.
    Saved with_up_projections(const Saved& saved) const;
    Tensor padded(const Tensor& x) const;  // (B, T, nq, d) -> (B, T, nq, D), zeros after d
    // Queries q (B, T, nq, q head) at positions past .. past + T - 1 over the state's latents
    // (written up to past + T): the attention's output (B, T, nq * v head) before linear_proj.
    Tensor attend_latents(const Tensor& q, const MlaState& state, int64_t past,
                          const AttentionMask& mask) const;

    TransformerConfig config_;
    MlaConfig mla_;
    int64_t nq_, dq_, dv_, d_;  // heads, q/k head, v head, the padded head
    double softmax_scale_;
    ops::RopeConfig rope_;
    std::optional<Linear> q_down_, q_up_;  // q_down_ alone: linear_q_proj
    Linear kv_down_, kv_up_, proj_;
    std::optional<Norm> q_norm_, kv_norm_;  // --qk-layernorm
    Backend* backend_;
    mutable ops::RopeTables tables_;
};

}  // namespace mt::nn
