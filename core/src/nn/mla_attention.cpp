// MultiLatentAttention: the query and latent key/value projections, the shared rope key
// broadcast to every head, one attention kernel call over heads padded to equal size, and the
// backward of each step in reverse (the rope key's gradient summed over the heads).
#include "mt/nn/mla_attention.h"

#include <algorithm>
#include <cmath>

#include "mt/nn/attention.h"
#include "mt/nn/tensor_parallel.h"
#include "mt/parallel/collectives.h"

namespace mt::nn {

namespace {

const TransformerConfig& checked(const TransformerConfig& c) {
    const MlaConfig& m = c.mla;
    MT_CHECK(m.kv_lora_rank > 0 && m.qk_head_dim > 0 && m.qk_pos_emb_head_dim > 0 &&
                 m.v_head_dim > 0 && m.q_lora_rank >= 0,
             "--multi-latent-attention: --kv-lora-rank (", m.kv_lora_rank, "), --qk-head-dim (",
             m.qk_head_dim, "), --qk-pos-emb-head-dim (", m.qk_pos_emb_head_dim,
             ") and --v-head-dim (", m.v_head_dim, ") must be positive, --q-lora-rank (",
             m.q_lora_rank, ") too when given");
    MT_CHECK(m.qk_pos_emb_head_dim % 2 == 0, "--qk-pos-emb-head-dim ", m.qk_pos_emb_head_dim,
             ": the rotary part must have an even size");
    const int tp = c.tp.size();
    MT_CHECK(c.num_attention_heads % tp == 0 &&
                 (m.kv_lora_rank + m.qk_pos_emb_head_dim) % tp == 0 && m.q_lora_rank % tp == 0,
             "--multi-latent-attention: --num-attention-heads (", c.num_attention_heads,
             "), --kv-lora-rank + --qk-pos-emb-head-dim (", m.kv_lora_rank + m.qk_pos_emb_head_dim,
             ") and --q-lora-rank (", m.q_lora_rank,
             ") must be divisible by --tensor-model-parallel-size (", tp,
             "): Megatron splits the down-projections' outputs too");
    MT_CHECK(!c.cp.active(),
             "not supported yet: --multi-latent-attention with --context-parallel-size > 1");
    return c;
}

}  // namespace

MultiLatentAttention::MultiLatentAttention(const std::string& prefix,
                                           const TransformerConfig& config, Backend& backend)
    : config_(checked(config)),
      mla_(config.mla),
      nq_(config.num_attention_heads / config.tp.size()),
      dq_(mla_.q_head_dim()),
      dv_(mla_.v_head_dim),
      d_(std::max(dq_, dv_)),
      kv_down_(join_name(prefix, "linear_kv_down_proj"), config.hidden_size,
               mla_.kv_lora_rank + mla_.qk_pos_emb_head_dim, false, config.dtype,
               ShardSpec{ShardSpec::Kind::column, 0, 1}, backend, config.tp),
      kv_up_(join_name(prefix, "linear_kv_up_proj"), mla_.kv_lora_rank,
             config.num_attention_heads * (mla_.qk_head_dim + dv_), false, config.dtype,
             ShardSpec{ShardSpec::Kind::column, 0, 1}, backend, config.tp),
      proj_(join_name(prefix, "linear_proj"), config.num_attention_heads * dv_, config.hidden_size,
            config.add_bias_linear, config.dtype, ShardSpec{ShardSpec::Kind::row, 1, 1}, backend,
            config.tp),
      backend_(&backend) {
    const ShardSpec column{ShardSpec::Kind::column, 0, 1};
    if (mla_.q_lora_rank > 0) {
        q_down_.emplace(join_name(prefix, "linear_q_down_proj"), config.hidden_size,
                        mla_.q_lora_rank, false, config.dtype, column, backend, config.tp);
        q_up_.emplace(join_name(prefix, "linear_q_up_proj"), mla_.q_lora_rank,
                      config.num_attention_heads * dq_, false, config.dtype, column, backend,
                      config.tp);
    } else {
        q_down_.emplace(join_name(prefix, "linear_q_proj"), config.hidden_size,
                        config.num_attention_heads * dq_, false, config.dtype, column, backend,
                        config.tp);
    }
    if (config.qk_layernorm) {
        // Transformer Engine fuses each norm into the up-projection after it.
        auto norm = [&](const char* module, const char* fused_into, int64_t size) {
            const bool te = config.norm_naming == NormNaming::transformer_engine;
            const std::string base = join_name(prefix, te ? fused_into : module);
            return Norm(config.normalization, join_name(base, te ? "layer_norm_weight" : "weight"),
                        join_name(base, te ? "layer_norm_bias" : "bias"), size, config.norm,
                        config.dtype, backend, config.tp);
        };
        if (mla_.q_lora_rank > 0)
            q_norm_.emplace(norm("q_layernorm", "linear_q_up_proj", mla_.q_lora_rank));
        kv_norm_.emplace(norm("kv_layernorm", "linear_kv_up_proj", mla_.kv_lora_rank));
    }
    // MultiLatentAttention.__init__: the softmax scale takes YaRN's mscale squared whichever
    // rope type; the rope part rotates neighbours (MLA de-interleaves before rotate-half).
    const double m = ops::yarn_mscale(mla_.rotary_scaling_factor, mla_.mscale);
    softmax_scale_ = m * m / std::sqrt(double(dq_));
    rope_.base = config.rope.base;
    rope_.interleaved = true;
    if (mla_.yarn) {
        rope_.rotary_dim = mla_.qk_pos_emb_head_dim;
        rope_.yarn_scaling_factor = mla_.rotary_scaling_factor;
        rope_.yarn_original_max_positions = mla_.original_max_positions;
        rope_.yarn_beta_fast = mla_.beta_fast;
        rope_.yarn_beta_slow = mla_.beta_slow;
        rope_.table_scale =
            ops::yarn_concentration(mla_.rotary_scaling_factor, mla_.mscale, mla_.mscale_all_dim);
    } else {
        rope_.rotary_dim =
            int64_t(double(mla_.qk_pos_emb_head_dim) * double(config.rotary_percent)) / 2 * 2;
        MT_CHECK(rope_.rotary_dim > 0, "--rotary-percent ", config.rotary_percent,
                 " leaves no rotary dimension of --qk-pos-emb-head-dim ", mla_.qk_pos_emb_head_dim);
    }
}

ops::RopeTables MultiLatentAttention::rope_tables(int64_t first, int64_t count) const {
    const int64_t end = first + count;
    const int64_t kept = tables_.cos.defined() ? tables_.cos.size(0) : 0;
    if (kept < end)
        tables_ = backend_->rope_tables(std::max(end, 2 * kept), rope_,
                                        upcast_dtype(config_.dtype));  // f32 tables for bf16
    return {tables_.cos.slice(0, first, end), tables_.sin.slice(0, first, end), true};
}

Tensor MultiLatentAttention::queries(const Tensor& x, Saved* saved, int64_t first) const {
    Tensor q;  // (B, T, nq * q head)
    if (q_up_) {
        // Gathered, then back to this rank's sequence part under sequence parallelism.
        Tensor compressed = scatter_to_sequence_parallel(
            config_.tp,
            gather_features(config_.tp, q_down_->forward(x, saved ? &saved->q_down : nullptr)));
        if (q_norm_) compressed = q_norm_->forward(compressed, saved ? &saved->q_norm : nullptr);
        q = q_up_->forward(compressed, saved ? &saved->q_up : nullptr);
    } else {
        q = q_down_->forward(x, saved ? &saved->q_down : nullptr);
    }
    return rotated_queries(q, q.size(0), q.size(1), first);
}

Tensor MultiLatentAttention::rotated_queries(const Tensor& projected, int64_t B, int64_t T,
                                             int64_t first) const {
    Tensor q = backend_->contiguous(projected).view({B, T, nq_, dq_});
    Tensor rope_part = q.slice(3, mla_.qk_head_dim, dq_);
    Tensor rotated = backend_->contiguous(rope_part);
    backend_->rope_forward(rotated, rope_tables(first, T), rotated);
    backend_->copy(rotated, rope_part);
    return q;
}

std::pair<Tensor, Tensor> MultiLatentAttention::latent_and_rope_key(const Tensor& x, Saved* saved,
                                                                    int64_t first) const {
    // Every position's features gathered: the latent back to this rank's sequence part under
    // sequence parallelism, the rope key kept whole.
    const int64_t r = mla_.kv_lora_rank;
    Tensor combined =
        gather_features(config_.tp, kv_down_.forward(x, saved ? &saved->kv_down : nullptr));
    const int64_t B = combined.size(0), T = combined.size(1);
    Tensor latent =
        scatter_to_sequence_parallel(config_.tp, backend_->contiguous(combined.slice(2, 0, r)));
    if (kv_norm_) latent = kv_norm_->forward(latent, saved ? &saved->kv_norm : nullptr);
    Tensor rope_key = backend_->contiguous(combined.slice(2, r, r + mla_.qk_pos_emb_head_dim))
                          .view({B, T, 1, mla_.qk_pos_emb_head_dim});
    backend_->rope_forward(rope_key, rope_tables(first, T), rope_key);
    return {latent, rope_key};
}

Tensor MultiLatentAttention::padded(const Tensor& x) const {
    if (x.size(3) == d_) return backend_->contiguous(x);
    Tensor out = backend_->zeros({x.size(0), x.size(1), x.size(2), d_}, x.dtype());
    Tensor head = out.slice(3, 0, x.size(3));
    backend_->copy(x, head);
    return out;
}

std::pair<Tensor, Tensor> MultiLatentAttention::keys_and_values(const Tensor& projected,
                                                                const Tensor& rope_key) const {
    const int64_t qk = mla_.qk_head_dim, B = rope_key.size(0), L = rope_key.size(1);
    Tensor kv = backend_->contiguous(projected).view({B, L, nq_, qk + dv_});
    Tensor k = backend_->zeros({B, L, nq_, d_}, kv.dtype());
    Tensor k_head = k.slice(3, 0, qk);
    backend_->copy(kv.slice(3, 0, qk), k_head);
    for (int64_t h = 0; h < nq_; ++h) {  // every head reads the one rope key
        Tensor k_rope = k.slice(2, h, h + 1).slice(3, qk, dq_);
        backend_->copy(rope_key, k_rope);
    }
    return {k, padded(kv.slice(3, qk, qk + dv_))};
}

Tensor MultiLatentAttention::forward(const Tensor& x, DropoutContext& ctx, Saved* saved,
                                     const AttentionMask& mask, MlaState* state,
                                     int64_t past) const {
    MT_CHECK(x.dim() == 3, "MultiLatentAttention: x must be (B, T, H), got ", x.describe());
    MT_CHECK(!state || (!saved && mask.causal && !mask.document_start.defined() &&
                        !mask.key_length.defined() && !ctx.training),
             "MultiLatentAttention: an inference state is for inference only (no saved state, "
             "a plain causal mask, no dropout)");
    MT_CHECK(!state || !config_.tp.sequence_split(),
             "MultiLatentAttention: inference runs without sequence parallelism");
    const int64_t first = state ? past : 0;
    Tensor q = queries(x, saved, first);
    const int64_t B = q.size(0), T = q.size(1);  // the whole sequence
    auto [latent, rope_key] = latent_and_rope_key(x, saved, first);
    if (state) {
        Tensor& cache = state->latent_and_rope_key;
        const int64_t r = mla_.kv_lora_rank;
        MT_CHECK(cache.dim() == 4 && cache.size(0) == B && past + T <= cache.size(1),
                 "MultiLatentAttention: the inference state ", cache.describe(), " does not hold ",
                 B, " rows of ", past, " + ", T, " positions");
        Tensor latent_new = cache.slice(1, past, past + T).slice(3, 0, r);
        Tensor rope_new = cache.slice(1, past, past + T).slice(3, r, r + mla_.qk_pos_emb_head_dim);
        backend_->copy(latent.view({B, T, 1, r}), latent_new);
        backend_->copy(rope_key, rope_new);
        // A prompt's first piece attends over itself as training does; later pieces and
        // decoding steps over the cached latents.
        if (past > 0 || T == 1)
            return proj_.forward(attend_latents(q, *state, past, mask), nullptr);
    }
    Saved local;
    Saved& s = saved ? *saved : local;
    s.q = padded(q);
    std::tie(s.k, s.v) =
        keys_and_values(kv_up_.forward(latent, saved ? &s.kv_up : nullptr), rope_key);
    s.attention = attention_config(config_, softmax_scale_, s.q, ctx, mask, *backend_);
    s.out = backend_->empty(s.q.shape(), s.q.dtype());
    s.lse = backend_->empty({B, nq_, T}, upcast_dtype(s.q.dtype()));  // f32 for bf16
    backend_->attention_forward(s.q, s.k, s.v, s.attention, s.out, s.lse);
    if (saved && config_.recompute_mla_up_proj) {
        // --recompute-modules mla_up_proj: the backward rebuilds q, k and v from the
        // up-projections' inputs (kept for their weight gradients anyway) and the rope key.
        s.rope_key = rope_key;
        s.q = s.k = s.v = Tensor();
    }
    Tensor out = backend_->contiguous(s.out.slice(3, 0, dv_)).view({B, T, nq_ * dv_});
    return proj_.forward(out, saved ? &s.proj : nullptr);
}

Tensor MultiLatentAttention::attend_latents(const Tensor& q, const MlaState& state, int64_t past,
                                            const AttentionMask& mask) const {
    // Each head's key part is W_uk c and its value W_uv c for its rows W_uk, W_uv of
    // linear_kv_up_proj and a position's latent c, so q_nope . W_uk c = (W_uk^T q_nope) . c and
    // the value sum is W_uv (sum p c): one attention of every head over the cached
    // [c | rope key] (as both keys and values; the values' rope part is dropped), with the
    // queries [W_uk^T q_nope | q_rope] (DeepSeek-V2's absorbed form).
    const int64_t B = q.size(0), T = q.size(1), qk = mla_.qk_head_dim, r = mla_.kv_lora_rank;
    const int64_t width = r + mla_.qk_pos_emb_head_dim;
    const Tensor up = kv_up_.weight().value.view({nq_, qk + dv_, r});
    const Tensor up_key = up.slice(1, 0, qk), up_value = up.slice(1, qk, qk + dv_);
    Tensor query = backend_->empty({B, T, nq_, width}, q.dtype());
    Tensor query_latent = query.view({B * T, nq_, width}).transpose(0, 1).slice(2, 0, r);
    backend_->gemm_batched(Transpose::no, Transpose::no, 1.0f,
                           q.view({B * T, nq_, dq_}).transpose(0, 1).slice(2, 0, qk), up_key, 0.0f,
                           query_latent);
    Tensor query_rope = query.slice(3, r, width);
    backend_->copy(q.slice(3, qk, dq_), query_rope);
    const Tensor& cache = state.latent_and_rope_key;
    Tensor attended = backend_->empty(query.shape(), query.dtype());
    backend_->attention_cached(query, cache, cache, past, -1, softmax_scale_, mask.bias, Tensor(),
                               attended);
    Tensor out = backend_->empty({B, T, nq_, dv_}, q.dtype());
    Tensor out_heads = out.view({B * T, nq_, dv_}).transpose(0, 1);
    backend_->gemm_batched(Transpose::no, Transpose::yes, 1.0f,
                           attended.view({B * T, nq_, width}).transpose(0, 1).slice(2, 0, r),
                           up_value, 0.0f, out_heads);
    return out.view({B, T, nq_ * dv_});
}

MultiLatentAttention::Saved MultiLatentAttention::with_up_projections(const Saved& saved) const {
    if (saved.q.defined()) return saved;
    Saved s = saved;
    const int64_t B = s.out.size(0), T = s.out.size(1);
    s.q = padded(
        rotated_queries(q_up_ ? q_up_->output_of(s.q_up) : q_down_->output_of(s.q_down), B, T, 0));
    std::tie(s.k, s.v) = keys_and_values(kv_up_.output_of(s.kv_up), s.rope_key);
    return s;
}

Tensor MultiLatentAttention::backward(const Tensor& dy, const Saved& kept) {
    const Saved s = with_up_projections(kept);
    const int64_t B = s.q.size(0), T = s.q.size(1), qk = mla_.qk_head_dim;
    const int64_t rope_dim = mla_.qk_pos_emb_head_dim, r = mla_.kv_lora_rank;
    const DType dtype = s.q.dtype();
    Tensor dout = padded(backend_->contiguous(proj_.backward(dy, s.proj)).view({B, T, nq_, dv_}));
    Tensor dq = backend_->empty(s.q.shape(), dtype);
    Tensor dk = backend_->empty(s.k.shape(), dtype);
    Tensor dv = backend_->empty(s.v.shape(), dtype);
    backend_->attention_backward(s.q, s.k, s.v, s.out, s.lse, dout, s.attention, dq, dk, dv);
    const ops::RopeTables tables = rope_tables(0, T);

    // The rope key fed every head: its gradient is their sum (in f32 for a bf16 model), over
    // the heads of every tensor-parallel rank. (By our reading, Megatron 0.13's column-parallel
    // path keeps only each rank's own heads' part, in that rank's slice of the features.)
    const DType sum_dtype = upcast_dtype(dtype);
    Tensor drope = backend_->zeros({B, T, 1, rope_dim}, sum_dtype);
    for (int64_t h = 0; h < nq_; ++h)
        backend_->axpy(
            1.0f,
            backend_->cast_to(backend_->contiguous(dk.slice(2, h, h + 1).slice(3, qk, dq_)),
                              sum_dtype),
            drope);
    if (config_.tp.active()) config_.tp.group->all_reduce(drope, ReduceOp::sum);
    backend_->rope_backward(drope, tables, drope);

    // linear_kv_up_proj's output gradient: each head's key part, then its value.
    Tensor dkv = backend_->empty({B, T, nq_, qk + dv_}, dtype);
    Tensor dkv_key = dkv.slice(3, 0, qk), dkv_value = dkv.slice(3, qk, qk + dv_);
    backend_->copy(dk.slice(3, 0, qk), dkv_key);
    backend_->copy(dv.slice(3, 0, dv_), dkv_value);
    Tensor dlatent = kv_up_.backward(dkv.view({B, T, nq_ * (qk + dv_)}), s.kv_up);
    if (kv_norm_) dlatent = kv_norm_->backward(dlatent, s.kv_norm);
    dlatent = scatter_to_sequence_parallel_backward(config_.tp, dlatent);
    Tensor dcombined = backend_->empty({B, T, r + rope_dim}, dtype);
    Tensor dcombined_latent = dcombined.slice(2, 0, r);
    Tensor dcombined_rope = dcombined.slice(2, r, r + rope_dim);
    backend_->copy(dlatent, dcombined_latent);
    backend_->copy(backend_->cast_to(drope, dtype).view({B, T, rope_dim}), dcombined_rope);
    Tensor dx = kv_down_.backward(gather_features_backward(config_.tp, dcombined), s.kv_down);

    // The queries: the rope part rotated back, then their projections.
    Tensor dq_heads = backend_->contiguous(dq.slice(3, 0, dq_));
    Tensor dq_rope = dq_heads.slice(3, qk, dq_);
    Tensor dq_rotated = backend_->contiguous(dq_rope);
    backend_->rope_backward(dq_rotated, tables, dq_rotated);
    backend_->copy(dq_rotated, dq_rope);
    Tensor dqflat = dq_heads.view({B, T, nq_ * dq_});
    Tensor dx_q;
    if (q_up_) {
        Tensor dcompressed = q_up_->backward(dqflat, s.q_up);
        if (q_norm_) dcompressed = q_norm_->backward(dcompressed, s.q_norm);
        dcompressed = scatter_to_sequence_parallel_backward(config_.tp, dcompressed);
        dx_q = q_down_->backward(gather_features_backward(config_.tp, dcompressed), s.q_down);
    } else {
        dx_q = q_down_->backward(dqflat, s.q_down);
    }
    Tensor sum = backend_->empty(dx.shape(), dx.dtype());
    backend_->add(backend_->contiguous(dx), backend_->contiguous(dx_q), sum);
    return sum;
}

void MultiLatentAttention::restore_input(Saved& saved, const Tensor& x) const {
    saved.q_down = q_down_->saved_for(x);
    saved.kv_down = kv_down_.saved_for(x);
}

void MultiLatentAttention::drop_input(Saved& saved) {
    saved.q_down = {};
    saved.kv_down = {};
}

void MultiLatentAttention::collect_parameters(std::vector<Parameter*>& out) {
    const bool te = config_.norm_naming == NormNaming::transformer_engine;
    proj_.collect_parameters(out);
    q_down_->collect_parameters(out);
    if (q_up_) {
        if (te && q_norm_) q_norm_->collect_parameters(out);
        q_up_->collect_parameters(out);
    }
    kv_down_.collect_parameters(out);
    if (te && kv_norm_) kv_norm_->collect_parameters(out);
    kv_up_.collect_parameters(out);
    if (!te) {
        if (q_norm_) q_norm_->collect_parameters(out);
        if (kv_norm_) kv_norm_->collect_parameters(out);
    }
}

std::unique_ptr<MlaState> MultiLatentAttention::make_state(int64_t batch, int64_t capacity) const {
    MT_CHECK(batch > 0 && capacity > 0,
             "MultiLatentAttention: an inference state needs a positive batch and capacity "
             "(batch ",
             batch, ", capacity ", capacity, ")");
    auto state = std::make_unique<MlaState>();
    state->latent_and_rope_key = backend_->empty(
        {batch, capacity, 1, mla_.kv_lora_rank + mla_.qk_pos_emb_head_dim}, config_.dtype);
    return state;
}

}  // namespace mt::nn
