// CrossAttention: q from the decoder stream, k and v from one projection of the encoder's
// output, the block-wise attention kernel over the encoder's tokens; backward hands the encoder
// output's gradient to the model through EncoderContext::grad. Also its sublayer.
#include "mt/nn/cross_attention.h"

#include <cmath>

#include "mt/error.h"

namespace mt::nn {

CrossAttention::CrossAttention(const std::string& prefix, const TransformerConfig& config,
                               Backend& backend)
    : config_(config),
      nq_(config.num_attention_heads / config.tp.size()),
      hd_(config.head_dim()),
      q_(join_name(prefix, "linear_q"), config.hidden_size,
         config.num_attention_heads * config.head_dim(), config.add_bias_linear, config.dtype,
         ShardSpec{ShardSpec::Kind::column, 0, 1}, backend, config.tp),
      // Rows [k; v] of each head: whole heads per tensor-parallel rank, as linear_qkv's groups.
      kv_(join_name(prefix, "linear_kv"), config.hidden_size,
          2 * config.num_attention_heads * config.head_dim(), config.add_bias_linear, config.dtype,
          ShardSpec{ShardSpec::Kind::column, 0, config.num_attention_heads}, backend, config.tp),
      proj_(join_name(prefix, "linear_proj"), config.num_attention_heads * config.head_dim(),
            config.hidden_size, config.add_bias_linear, config.dtype,
            ShardSpec{ShardSpec::Kind::row, 1, 1}, backend, config.tp),
      backend_(&backend) {
    const int64_t heads = config.num_attention_heads;
    // Megatron-core's CrossAttention raises for grouped-query attention.
    MT_CHECK(config.query_groups() == heads,
             "not supported: grouped-query attention (--num-query-groups ", config.query_groups(),
             " for ", heads,
             " heads) in cross-attention, as Megatron-core's CrossAttention refuses it");
    MT_CHECK(heads > 0 && heads % config.tp.size() == 0, "CrossAttention: ", heads,
             " attention heads do not split across ", config.tp.size(),
             " tensor-parallel ranks (--tensor-model-parallel-size)");
    MT_CHECK(!config.cp.active(),
             "not supported yet: --context-parallel-size with cross-attention");
    MT_CHECK(hd_ > 0, "CrossAttention: head dim must be > 0");
}

void CrossAttention::project_kv(const Tensor& states, Linear::Saved* saved, Tensor& k,
                                Tensor& v) const {
    const Tensor kv = kv_.forward(states, saved);  // sequence parallel: the whole of Tk
    const Tensor heads = kv.view({kv.size(0), kv.size(1), nq_, 2 * hd_});
    k = backend_->contiguous(heads.slice(3, 0, hd_));
    v = backend_->contiguous(heads.slice(3, hd_, 2 * hd_));
}

Tensor CrossAttention::forward(const Tensor& x, DropoutContext& ctx, Saved* saved,
                               const EncoderContext& encoder, CrossKvState* cache) const {
    MT_CHECK(x.dim() == 3, "CrossAttention: x must be (B, T, H), got ", x.describe());
    MT_CHECK(encoder.states.defined() && encoder.states.dim() == 3 &&
                 encoder.states.size(0) == x.size(0) && encoder.states.size(2) == x.size(2),
             "CrossAttention: the encoder's states must be (", x.size(0), ", Tk, ", x.size(2),
             "), got ", encoder.states.defined() ? encoder.states.describe() : "none");
    MT_CHECK(!cache || (!saved && !ctx.training),
             "CrossAttention: a KV cache is for inference only (no saved state, no dropout)");
    Saved local;
    Saved& s = saved ? *saved : local;
    const Tensor q = q_.forward(x, saved ? &s.q_proj : nullptr);
    const int64_t B = q.size(0), Tq = q.size(1);
    s.q = q.view({B, Tq, nq_, hd_});
    if (cache && cache->k.defined()) {
        s.k = cache->k;
        s.v = cache->v;
    } else {
        project_kv(encoder.states, saved ? &s.kv_proj : nullptr, s.k, s.v);
        if (cache) {
            // Kept in the attention's compute dtype (f32 for bf16): the attention would
            // otherwise widen all of the encoder's keys and values again at every step.
            cache->k = backend_->cast_to(s.k, upcast_dtype(s.k.dtype()));
            cache->v = backend_->cast_to(s.v, upcast_dtype(s.v.dtype()));
            s.k = cache->k;
            s.v = cache->v;
        }
    }
    s.attention = ops::AttentionConfig{};
    s.attention.scale = 1.0 / std::sqrt(double(hd_));
    s.attention.causal = false;
    s.attention.block = config_.attention_block;
    if (const Tensor& lengths = encoder.key_length; lengths.defined()) {
        MT_CHECK(lengths.dtype() == DType::i32 && lengths.shape() == Shape({B}),
                 "CrossAttention: key_length must be i32 (", B, "), got ", lengths.describe());
        s.attention.key_length = backend_->contiguous(lengths);
    }
    // Each tensor-parallel rank drops out its own heads: its part of the whole layer's draw.
    const DropoutDraw draw = draw_dropout(
        ctx, config_.attention_dropout, int64_t(ops::attention_dropout_counters(s.q, s.k.size(1))),
        config_.tp.rank(), config_.tp.size());
    s.attention.dropout = draw.applied ? draw.p : 0.0f;
    s.attention.seed = draw.seed;
    s.attention.offset = draw.offset;
    s.out = backend_->empty(s.q.shape(), s.q.dtype());
    s.lse = backend_->empty({B, nq_, Tq}, upcast_dtype(s.q.dtype()));  // f32 for bf16
    backend_->attention_forward(s.q, s.k, s.v, s.attention, s.out, s.lse);
    s.context_grad = encoder.grad;
    return proj_.forward(s.out.view({B, Tq, nq_ * hd_}), saved ? &s.proj : nullptr);
}

Tensor CrossAttention::backward(const Tensor& dy, const Saved& saved) {
    const int64_t B = saved.q.size(0), Tq = saved.q.size(1), Tk = saved.k.size(1);
    const Tensor dout =
        backend_->contiguous(proj_.backward(dy, saved.proj)).view(saved.out.shape());
    Tensor dq = backend_->empty(saved.q.shape(), saved.q.dtype());
    Tensor dk = backend_->empty(saved.k.shape(), saved.k.dtype());
    Tensor dv = backend_->empty(saved.v.shape(), saved.v.dtype());
    backend_->attention_backward(saved.q, saved.k, saved.v, saved.out, saved.lse, dout,
                                 saved.attention, dq, dk, dv);
    Tensor dkv = backend_->empty({B, Tk, nq_, 2 * hd_}, dk.dtype());
    Tensor dk_part = dkv.slice(3, 0, hd_), dv_part = dkv.slice(3, hd_, 2 * hd_);
    backend_->copy(dk, dk_part);
    backend_->copy(dv, dv_part);
    const Tensor dstates = kv_.backward(dkv.view({B, Tk, 2 * nq_ * hd_}), saved.kv_proj);
    MT_CHECK(saved.context_grad, "CrossAttention: backward needs EncoderContext::grad");
    Tensor& grad = *saved.context_grad;
    if (!grad.defined()) {
        grad = backend_->contiguous(dstates);
    } else {
        backend_->add(grad, backend_->contiguous(dstates), grad);
    }
    return q_.backward(dq.view({B, Tq, nq_ * hd_}), saved.q_proj);
}

void CrossAttention::collect_parameters(std::vector<Parameter*>& out) {
    proj_.collect_parameters(out);
    q_.collect_parameters(out);
    kv_.collect_parameters(out);
}

namespace {

class CrossAttentionSublayer final : public Sublayer {
  public:
    struct State final : ModuleState {
        CrossAttention::Saved saved;
    };

    CrossAttentionSublayer(const std::string& prefix, const TransformerConfig& config,
                           Backend& backend)
        : attention_(join_name(prefix, "cross_attention"), config, backend) {}

    Tensor forward(const Tensor& x, DropoutContext& ctx, std::unique_ptr<ModuleState>* saved,
                   bool keep_input, const SublayerContext& in) const override {
        MT_CHECK(in.encoder,
                 "cross-attention needs the encoder's output (a decoder layer of an "
                 "encoder-decoder model)");
        auto* cache = static_cast<CrossKvState*>(in.state);
        if (cache && in.past == 0) *cache = CrossKvState{};  // a new request: a new encoder output
        if (!saved) return attention_.forward(x, ctx, nullptr, *in.encoder, cache);
        auto state = std::make_unique<State>();
        Tensor y = attention_.forward(x, ctx, &state->saved, *in.encoder, cache);
        if (!keep_input) state->saved.q_proj = {};
        *saved = std::move(state);
        return y;
    }
    Tensor backward(const Tensor& dy, const ModuleState& saved, const Tensor& input) override {
        const auto& state = static_cast<const State&>(saved);
        if (!input.defined()) return attention_.backward(dy, state.saved);
        CrossAttention::Saved rebuilt = state.saved;
        rebuilt.q_proj = attention_.linear_q().saved_for(input);
        return attention_.backward(dy, rebuilt);
    }
    void collect_parameters(std::vector<Parameter*>& out, Norm* fused_norm) override {
        MT_CHECK(!fused_norm, "CrossAttention: its norm is a module of its own");
        attention_.collect_parameters(out);
    }
    std::unique_ptr<SublayerState> make_state(int64_t, int64_t) const override {
        return attention_.make_state();
    }
    bool decodes_rows() const override { return false; }  // not supported yet

  private:
    CrossAttention attention_;
};

}  // namespace

SublayerSpec cross_attention_sublayer() {
    return {[](const std::string& prefix, const TransformerConfig& config, Backend& backend) {
                return std::unique_ptr<Sublayer>(
                    std::make_unique<CrossAttentionSublayer>(prefix, config, backend));
            },
            "", "pre_cross_attn_layernorm", "", false};
}

}  // namespace mt::nn
