// SelfAttention: split the fused QKV output per query group, rotate q and k, attend, project;
// backward runs the same steps in reverse and reassembles the fused QKV gradient.
#include "mt/nn/attention.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "mt/nn/gathered_attention.h"
#include "mt/nn/ring_attention.h"

namespace mt::nn {

namespace {

// The (B, T, ng, (nq/ng + 2) hd) view of the fused projection and its q, k, v column ranges.
struct QkvLayout {
    int64_t B, T, nq, ng, hd;
    int64_t q_cols() const { return nq / ng * hd; }
    Shape grouped() const { return {B, T, ng, q_cols() + 2 * hd}; }
};

Tensor q_part(const QkvLayout& l, const Tensor& grouped) {
    return grouped.slice(3, 0, l.q_cols());
}
Tensor k_part(const QkvLayout& l, const Tensor& grouped) {
    return grouped.slice(3, l.q_cols(), l.q_cols() + l.hd);
}
Tensor v_part(const QkvLayout& l, const Tensor& grouped) {
    return grouped.slice(3, l.q_cols() + l.hd, l.q_cols() + 2 * l.hd);
}

// This tensor-parallel rank's draw of the layer's attention dropout over q's scores, into c:
// each rank drops out its own heads, its part of the whole layer's draw.
void draw_attention_dropout(const TransformerConfig& config, const Tensor& q, DropoutContext& ctx,
                            ops::AttentionConfig& c) {
    const DropoutDraw d =
        draw_dropout(ctx, config.attention_dropout, int64_t(ops::attention_dropout_counters(q)),
                     config.tp.rank(), config.tp.size());
    c.dropout = d.applied ? d.p : 0.0f;
    c.seed = d.seed;
    c.offset = d.offset;
}

}  // namespace

SelfAttention::SelfAttention(const std::string& prefix, const TransformerConfig& config,
                             Backend& backend)
    : config_(config),
      nq_(config.num_attention_heads / config.tp.size()),
      ng_(config.query_groups() / config.tp.size()),
      hd_(config.head_dim()),
      qkv_(join_name(prefix, "linear_qkv"), config.hidden_size,
           (config.num_attention_heads + 2 * config.query_groups()) * config.head_dim(),
           config.add_bias_linear || config.add_qkv_bias, config.dtype,
           ShardSpec{ShardSpec::Kind::column, 0, config.query_groups()}, backend, config.tp),
      proj_(join_name(prefix, "linear_proj"), config.num_attention_heads * config.head_dim(),
            config.hidden_size, config.add_bias_linear, config.dtype,
            ShardSpec{ShardSpec::Kind::row, 1, 1}, backend, config.tp),
      backend_(&backend) {
    qkv_.use_fp8(config.fp8);
    proj_.use_fp8(config.fp8);
    const int64_t heads = config.num_attention_heads, groups = config.query_groups();
    MT_CHECK(heads > 0 && groups > 0 && heads % groups == 0, "SelfAttention: ", heads,
             " attention heads are not a multiple of ", groups, " query groups");
    // Megatron: each tensor-parallel rank holds whole query groups (and their heads).
    MT_CHECK(groups % config.tp.size() == 0, "SelfAttention: ", groups,
             " query groups (--num-query-groups, or the heads without GQA) do not split across ",
             config.tp.size(), " tensor-parallel ranks (--tensor-model-parallel-size)");
    MT_CHECK(hd_ > 0, "SelfAttention: head dim must be > 0");
    if (config.softmax_type == SoftmaxType::learnable) {
        // Megatron's DotProductAttention: one offset per head, split with the heads, 1-D (no
        // weight decay), drawn by init_method.
        softmax_offset_.emplace(make_parameter(
            backend, join_name(prefix, "core_attention.softmax_offset"), {heads}, config.dtype,
            ShardSpec{ShardSpec::Kind::column, 0, 1}, false, config.tp));
        softmax_offset_->init.kind = ParameterInit::Kind::normal;
    } else if (config.softmax_type == SoftmaxType::off_by_one) {
        zero_sink_ = backend.empty({nq_}, upcast_dtype(config.dtype));
        backend.fill(zero_sink_, 0.0);
    }
    if (config.qk_l2_norm) {
        // Megatron's L2Norm: x rsqrt(mean(x^2) + 1e-6), an RMSNorm whose weight stays 1 (not a
        // parameter: collect_qk_norm_parameters leaves it out).
        const ops::NormConfig l2{1e-6f, false};
        q_norm_.emplace(NormKind::rms_norm, "q_l2_norm", "", hd_, l2, config.dtype, backend);
        k_norm_.emplace(NormKind::rms_norm, "k_l2_norm", "", hd_, l2, config.dtype, backend);
    } else if (config.qk_layernorm) {
        // Replicated over the tensor-parallel ranks, each of which normalises its own heads.
        auto norm = [&](const char* name) {
            const std::string p = join_name(prefix, name);
            Norm n(config.normalization, p + ".weight", p + ".bias", hd_, config.norm, config.dtype,
                   backend, config.tp);
            n.weight().grad_partial_over_tp = config.tp.active();
            if (Parameter* b = n.bias()) b->grad_partial_over_tp = config.tp.active();
            return n;
        };
        q_norm_.emplace(norm("q_layernorm"));
        k_norm_.emplace(norm("k_layernorm"));
    }
}

ops::RopeTables SelfAttention::rope_tables(int64_t first, int64_t count) const {
    if (!config_.rotary) return {};
    const int64_t end = first + count;
    const int64_t kept = rope_.cos.defined() ? rope_.cos.size(0) : 0;
    if (kept < end) {
        // Megatron: dim = int(kv_channels * rotary_percent). Doubling keeps decoding's
        // one-position-at-a-time growth from recomputing the tables at every step.
        ops::RopeConfig rope = config_.rope;
        rope.rotary_dim = int64_t(double(hd_) * double(config_.rotary_percent));
        rope_ = backend_->rope_tables(std::max(end, 2 * kept), rope,
                                      upcast_dtype(config_.dtype));  // f32 tables for bf16
    }
    return {rope_.cos.slice(0, first, end), rope_.sin.slice(0, first, end), rope_.interleaved};
}

Tensor SelfAttention::forward(const Tensor& x, DropoutContext& ctx, Saved* saved,
                              const AttentionMask& mask, const KvSlot& cache) const {
    MT_CHECK(x.dim() == 3, "SelfAttention: x must be (B, T, H), got ", x.describe());
    MT_CHECK(!cache.cached() || (!saved && mask.causal && !mask.document_start.defined() &&
                                 !mask.key_length.defined() && !ctx.training),
             "SelfAttention: a KV cache is for inference only (no saved state, a plain causal "
             "mask, no dropout)");
    Saved local;
    Saved& s = saved ? *saved : local;
    // With sequence parallelism x is this rank's part of the sequence, qkv the whole sequence.
    Tensor qkv = qkv_.forward(x, saved ? &s.qkv : nullptr);
    const QkvLayout l{qkv.size(0), qkv.size(1), nq_, ng_, hd_};
    Tensor grouped = qkv.view(l.grouped());
    s.q = backend_->contiguous(q_part(l, grouped)).view({l.B, l.T, nq_, hd_});
    s.k = backend_->contiguous(k_part(l, grouped));
    s.v = backend_->contiguous(v_part(l, grouped));
    if (q_norm_) {
        s.q = q_norm_->forward(s.q, saved ? &s.q_norm : nullptr);
        s.k = k_norm_->forward(s.k, saved ? &s.k_norm : nullptr);
    }
    if (config_.rotary && !cache.rows.empty()) {
        MT_CHECK(int64_t(cache.pasts.size()) == l.B,
                 "SelfAttention: continuous batching needs each row's position");
        for (int64_t b = 0; b < l.B; ++b) {  // each row from its own position
            const ops::RopeTables tables = rope_tables(cache.pasts[size_t(b)], l.T);
            Tensor q = s.q.slice(0, b, b + 1), k = s.k.slice(0, b, b + 1);
            backend_->rope_forward(q, tables, q);
            backend_->rope_forward(k, tables, k);
        }
    } else if (config_.rotary) {
        ops::RopeTables tables =
            cache.layer ? rope_tables(cache.past, l.T) : sequence_rope_tables(l.T);
        backend_->rope_forward(s.q, tables, s.q);
        backend_->rope_forward(s.k, tables, s.k);
    }
    if (!cache.rows.empty()) return attend_rows(s.q, s.k, s.v, cache);
    if (cache.layer) return attend_cached(s.q, s.k, s.v, cache, mask.bias);
    attend(s, ctx, mask);
    return proj_.forward(s.out.view({l.B, l.T, nq_ * hd_}), saved ? &s.proj : nullptr);
}

ops::AttentionConfig attention_config(const TransformerConfig& config, double scale,
                                      const Tensor& q, DropoutContext& ctx,
                                      const AttentionMask& mask, Backend& backend) {
    const int64_t B = q.size(0), T = q.size(1);
    ops::AttentionConfig c;
    c.scale = scale;
    c.causal = mask.causal;
    c.window = config.attention_window;
    c.block = config.attention_block;
    draw_attention_dropout(config, q, ctx, c);
    if (const Tensor& starts = mask.document_start; starts.defined()) {
        MT_CHECK(starts.dtype() == DType::i32 && starts.shape() == Shape({B, T}),
                 "attention: document_start must be i32 (", B, ", ", T, "), got ",
                 starts.describe());
        c.document_start = backend.contiguous(starts);
    }
    if (const Tensor& lengths = mask.key_length; lengths.defined()) {
        MT_CHECK(lengths.dtype() == DType::i32 && lengths.shape() == Shape({B}),
                 "attention: key_length must be i32 (", B, "), got ", lengths.describe());
        c.key_length = backend.contiguous(lengths);
    }
    c.bias = mask.bias;
    c.bias_grad = mask.bias_grad;
    return c;
}

void SelfAttention::attend(Saved& s, DropoutContext& ctx, const AttentionMask& mask) const {
    const int64_t B = s.q.size(0), T = s.q.size(1);
    const double scale = scores_scale();
    s.out = backend_->empty(s.q.shape(), s.q.dtype());
    s.lse = backend_->empty({B, nq_, T}, upcast_dtype(s.q.dtype()));  // f32 for bf16
    if (config_.cp.active()) {
        MT_CHECK(mask.causal && !mask.document_start.defined() && !mask.key_length.defined() &&
                     !mask.bias.defined(),
                 "not supported yet: --context-parallel-size with a mask other than causal "
                 "(bidirectional, --reset-attention-mask, padding, an attention bias)");
        if (config_.attention_window >= 0 || config_.softmax_type != SoftmaxType::vanilla) {
            // A window or sinks: the whole sequence's keys gathered (no ring steps kept).
            MT_CHECK(!ctx.training || config_.attention_dropout == 0,
                     "not supported yet: attention dropout with --context-parallel-size and "
                     "--window-size or --softmax-type");
            s.attention = attention_config(config_, scale, s.q, ctx, mask, *backend_);
            s.attention.sink = sink();
            s.ring.clear();
            gathered_attention_forward(*backend_, config_.cp, s.q, s.k, s.v, s.attention, s.out,
                                       s.lse);
            return;
        }
        // Each ring step draws its own dropout counters.
        s.attention = ops::AttentionConfig{};
        s.attention.scale = scale;
        s.attention.causal = true;
        s.attention.block = config_.attention_block;
        s.ring.assign(size_t(config_.cp.size()), s.attention);
        for (ops::AttentionConfig& step : s.ring) draw_attention_dropout(config_, s.q, ctx, step);
        ring_attention_forward(*backend_, config_.cp, s.q, s.k, s.v, s.ring, s.out, s.lse);
        return;
    }
    s.attention = attention_config(config_, scale, s.q, ctx, mask, *backend_);
    s.attention.sink = sink();
    backend_->attention_forward(s.q, s.k, s.v, s.attention, s.out, s.lse);
}

double SelfAttention::scores_scale() const {
    return config_.softmax_scale > 0 ? config_.softmax_scale : 1.0 / std::sqrt(double(hd_));
}

Tensor SelfAttention::sink() const {
    const DType dtype = upcast_dtype(config_.dtype);
    if (!softmax_offset_) return zero_sink_;  // undefined with --softmax-type vanilla
    if (softmax_offset_->value.dtype() == dtype) return softmax_offset_->value;
    Tensor wide = backend_->empty({nq_}, dtype);
    backend_->cast(softmax_offset_->value, wide);
    return wide;
}

ops::RopeTables SelfAttention::sequence_rope_tables(int64_t length) const {
    if (!config_.cp.active() || !config_.rotary) return rope_tables(0, length);
    if (chunks_rope_.cos.defined() && chunks_rope_.cos.size(0) == length) return chunks_rope_;
    const int64_t chunk = length / 2;
    const ops::RopeTables first = rope_tables(config_.cp.first_chunk_start(length), chunk);
    const ops::RopeTables second = rope_tables(config_.cp.second_chunk_start(length), chunk);
    ops::RopeTables out{backend_->empty({length, first.cos.size(1)}, first.cos.dtype()),
                        backend_->empty({length, first.sin.size(1)}, first.sin.dtype()),
                        first.interleaved};
    for (auto [from_first, from_second, to] : {std::tuple{&first.cos, &second.cos, &out.cos},
                                               std::tuple{&first.sin, &second.sin, &out.sin}}) {
        Tensor low = to->slice(0, 0, chunk), high = to->slice(0, chunk, length);
        backend_->copy(*from_first, low);
        backend_->copy(*from_second, high);
    }
    chunks_rope_ = out;
    return out;
}

Tensor SelfAttention::attend_cached(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const KvSlot& cache, const Tensor& bias) const {
    const int64_t B = q.size(0), T = q.size(1);
    Tensor out = backend_->empty(q.shape(), q.dtype());
    store_and_attend(q, k, v, cache, bias, out);
    return proj_.forward(out.view({B, T, nq_ * hd_}), nullptr);
}

Tensor SelfAttention::attend_rows(const Tensor& q, const Tensor& k, const Tensor& v,
                                  const KvSlot& cache) const {
    const int64_t B = q.size(0), T = q.size(1);
    MT_CHECK(int64_t(cache.rows.size()) == B && int64_t(cache.pasts.size()) == B,
             "SelfAttention: continuous batching reads positions of each of ", cache.rows.size(),
             " rows, got ", q.describe());
    Tensor out = backend_->empty(q.shape(), q.dtype());
    for (int64_t b = 0; b < B; ++b) {
        Tensor row_out = out.slice(0, b, b + 1);
        store_and_attend(q.slice(0, b, b + 1), k.slice(0, b, b + 1), v.slice(0, b, b + 1),
                         KvSlot{cache.rows[size_t(b)], cache.pasts[size_t(b)]}, Tensor(), row_out);
    }
    return proj_.forward(out.view({B, T, nq_ * hd_}), nullptr);
}

void SelfAttention::store_and_attend(const Tensor& q, const Tensor& k, const Tensor& v,
                                     const KvSlot& cache, const Tensor& bias, Tensor& out) const {
    const int64_t B = q.size(0), T = q.size(1), past = cache.past;
    KvState& state = *cache.layer;
    const int64_t window = config_.attention_window;
    MT_CHECK(state.k.dim() == 4 && state.k.size(0) == B && state.k.size(2) == ng_ &&
                 state.k.size(3) == hd_ && state.k.dtype() == q.dtype() &&
                 past + T <= state.capacity,
             "SelfAttention: the KV cache ", state.k.describe(), " of ", state.capacity,
             " positions does not hold ", B, " rows of ", past, " + ", T, " positions of ", ng_,
             " groups x ", hd_);
    // Queries past.. read the window before them: the ring must hold it and the new positions.
    if (past > 0 && past + T > state.k.size(1) && window + T > state.k.size(1))
        grow_ring(state, past, std::min(state.capacity, window + T));
    write_ring(state, k, v, past);
    const Tensor& kc = state.k;
    const Tensor& vc = state.v;
    const double scale = scores_scale();
    if (cache.past == 0 && T > 1) {
        // Prefill: nothing cached before, so the block-wise causal kernel of training applies
        // (its row log-sum-exps are not needed).
        ops::AttentionConfig config;
        config.scale = scale;
        config.window = config_.attention_window;
        config.block = config_.attention_block;
        config.bias = bias;
        config.sink = sink();
        Tensor lse = backend_->empty({B, nq_, T}, upcast_dtype(q.dtype()));
        backend_->attention_forward(q, k, v, config, out, lse);
    } else {
        backend_->attention_cached(q, kc, vc, past, window, scale, bias, sink(), out);
    }
}

Tensor SelfAttention::backward(const Tensor& dy, const Saved& saved) {
    const QkvLayout l{saved.q.size(0), saved.q.size(1), nq_, ng_, hd_};
    Tensor dout = backend_->contiguous(proj_.backward(dy, saved.proj)).view(saved.out.shape());
    Tensor dq = backend_->empty(saved.q.shape(), saved.q.dtype());
    Tensor dk = backend_->empty(saved.k.shape(), saved.k.dtype());
    Tensor dv = backend_->empty(saved.v.shape(), saved.v.dtype());
    ops::AttentionConfig config = saved.attention;
    if (softmax_offset_) {
        config.sink_grad = backend_->empty({nq_}, upcast_dtype(config_.dtype));
        backend_->fill(config.sink_grad, 0.0);
    }
    if (config_.cp.active() && !saved.ring.empty())
        ring_attention_backward(*backend_, config_.cp, saved.q, saved.k, saved.v, saved.out,
                                saved.lse, dout, saved.ring, dq, dk, dv);
    else if (config_.cp.active())
        gathered_attention_backward(*backend_, config_.cp, saved.q, saved.k, saved.v, dout, config,
                                    dq, dk, dv);
    else
        backend_->attention_backward(saved.q, saved.k, saved.v, saved.out, saved.lse, dout, config,
                                     dq, dk, dv);
    if (softmax_offset_) backend_->axpy(1.0f, config.sink_grad, softmax_offset_->grad);
    if (config_.rotary) {
        ops::RopeTables tables = sequence_rope_tables(l.T);
        backend_->rope_backward(dq, tables, dq);
        backend_->rope_backward(dk, tables, dk);
    }
    if (q_norm_) {
        dq = q_norm_->backward(dq, saved.q_norm);
        dk = k_norm_->backward(dk, saved.k_norm);
    }
    Tensor dgrouped = backend_->empty(l.grouped(), dq.dtype());
    Tensor dq_part = q_part(l, dgrouped), dk_part = k_part(l, dgrouped),
           dv_part = v_part(l, dgrouped);
    backend_->copy(dq.view({l.B, l.T, ng_, l.q_cols()}), dq_part);
    backend_->copy(dk, dk_part);
    backend_->copy(dv, dv_part);
    return qkv_.backward(dgrouped.view({l.B, l.T, (nq_ + 2 * ng_) * hd_}), saved.qkv);
}

void SelfAttention::collect_parameters(std::vector<Parameter*>& out) {
    collect_softmax_offset(out);
    qkv_.collect_parameters(out);
    proj_.collect_parameters(out);
    collect_qk_norm_parameters(out);
}

void SelfAttention::write_ring(KvState& state, const Tensor& k, const Tensor& v,
                               int64_t past) const {
    const int64_t T = k.size(1), slots = state.k.size(1);
    // Only the last `slots` positions stay (a prefill longer than a window's ring attends over
    // its own keys), in at most two runs of slots.
    for (int64_t p = std::max(past, past + T - slots); p < past + T;) {
        const int64_t slot = p % slots, run = std::min(past + T - p, slots - slot);
        Tensor k_to = state.k.slice(1, slot, slot + run), v_to = state.v.slice(1, slot, slot + run);
        backend_->copy(k.slice(1, p - past, p - past + run), k_to);
        backend_->copy(v.slice(1, p - past, p - past + run), v_to);
        p += run;
    }
}

void SelfAttention::grow_ring(KvState& state, int64_t past, int64_t slots) const {
    const int64_t old = state.k.size(1);
    KvState grown;
    grown.k = backend_->empty({state.k.size(0), slots, ng_, hd_}, state.k.dtype());
    grown.v = backend_->empty({state.k.size(0), slots, ng_, hd_}, state.k.dtype());
    grown.capacity = state.capacity;
    for (int64_t p = std::max<int64_t>(0, past - old); p < past; ++p) {
        Tensor k_to = grown.k.slice(1, p % slots, p % slots + 1);
        Tensor v_to = grown.v.slice(1, p % slots, p % slots + 1);
        backend_->copy(state.k.slice(1, p % old, p % old + 1), k_to);
        backend_->copy(state.v.slice(1, p % old, p % old + 1), v_to);
    }
    state = std::move(grown);
}

std::unique_ptr<KvState> SelfAttention::make_state(int64_t batch, int64_t capacity) const {
    MT_CHECK(batch > 0 && capacity > 0,
             "SelfAttention: a KV state needs a positive batch and "
             "capacity (batch ",
             batch, ", capacity ", capacity, ")");
    auto state = std::make_unique<KvState>();
    // A windowed layer keeps the window and the position being read (decoding's one).
    const int64_t window = config_.attention_window;
    const int64_t slots = window >= 0 ? std::min(capacity, window + 1) : capacity;
    state->k = backend_->empty({batch, slots, ng_, hd_}, config_.dtype);
    state->v = backend_->empty({batch, slots, ng_, hd_}, config_.dtype);
    state->capacity = capacity;
    return state;
}

void SelfAttention::collect_qk_norm_parameters(std::vector<Parameter*>& out) {
    if (!q_norm_ || config_.qk_l2_norm) return;
    q_norm_->collect_parameters(out);
    k_norm_->collect_parameters(out);
}

}  // namespace mt::nn
