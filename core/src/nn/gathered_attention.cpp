#include "mt/nn/gathered_attention.h"

#include "mt/error.h"
#include "mt/nn/parameter.h"

namespace mt::nn {

namespace {

// The whole sequence (B, cp·T, ...) of every rank's two chunks of x (B, T, ...), in order.
Tensor gather_sequence(Backend& backend, const ContextParallel& cp, const Tensor& x) {
    const int64_t B = x.size(0), T = x.size(1), L = T / 2;
    Shape all = x.shape();
    all[0] *= cp.size();
    Tensor gathered = backend.empty(all, x.dtype());
    cp.group->all_gather(backend.contiguous(x), gathered);
    Shape whole = x.shape();
    whole[1] *= cp.size();
    Tensor out = backend.empty(whole, x.dtype());
    for (int r = 0; r < cp.size(); ++r) {
        const Tensor rank = gathered.slice(0, r * B, (r + 1) * B);
        for (int c = 0; c < 2; ++c) {
            const int64_t start = cp.chunk_start(r, c, T);
            Tensor to = out.slice(1, start, start + L);
            backend.copy(rank.slice(1, c * L, (c + 1) * L), to);
        }
    }
    return out;
}

// One chunk's attention over the keys up to it: queries (B, p + L, nq, hd) whose last L rows
// are the chunk's (the rows before are zeros, their outputs dropped: the kernel takes as many
// queries as keys), over the first p + L keys.
struct ChunkAttention {
    Tensor q, k, v, out, lse;
};

ChunkAttention chunk_attention(Backend& backend, const Tensor& q_chunk, const Tensor& keys,
                               const Tensor& values, int64_t start,
                               const ops::AttentionConfig& config) {
    const int64_t B = q_chunk.size(0), L = q_chunk.size(1), n = start + L;
    ChunkAttention a;
    Shape qs = q_chunk.shape();
    qs[1] = n;
    a.q = backend.zeros(qs, q_chunk.dtype());
    Tensor rows = a.q.slice(1, start, n);
    backend.copy(q_chunk, rows);
    a.k = backend.contiguous(keys.slice(1, 0, n));
    a.v = backend.contiguous(values.slice(1, 0, n));
    a.out = backend.empty(qs, q_chunk.dtype());
    a.lse = backend.empty({B, q_chunk.size(2), n}, upcast_dtype(q_chunk.dtype()));
    backend.attention_forward(a.q, a.k, a.v, config, a.out, a.lse);
    return a;
}

void check(const ContextParallel& cp, const Tensor& q, const ops::AttentionConfig& config) {
    MT_CHECK(cp.active() && q.size(1) % 2 == 0, "gathered attention: the local sequence (",
             q.size(1), ") is not two chunks of a context-parallel group");
    MT_CHECK(config.causal && config.dropout == 0 && !config.document_start.defined() &&
                 !config.key_length.defined() && !config.bias.defined(),
             "not supported yet: --context-parallel-size with a sliding window or attention "
             "sinks and attention dropout, document resets, padding or an attention bias");
}

}  // namespace

void gathered_attention_forward(Backend& backend, const ContextParallel& cp, const Tensor& q,
                                const Tensor& k, const Tensor& v,
                                const ops::AttentionConfig& config, Tensor& out, Tensor& lse) {
    check(cp, q, config);
    const int64_t T = q.size(1), L = T / 2;
    const Tensor keys = gather_sequence(backend, cp, k), values = gather_sequence(backend, cp, v);
    for (int c = 0; c < 2; ++c) {
        const int64_t p = cp.chunk_start(cp.rank(), c, T);
        const ChunkAttention a =
            chunk_attention(backend, q.slice(1, c * L, (c + 1) * L), keys, values, p, config);
        Tensor out_rows = out.slice(1, c * L, (c + 1) * L);
        Tensor lse_rows = lse.slice(2, c * L, (c + 1) * L);
        backend.copy(a.out.slice(1, p, p + L), out_rows);
        backend.copy(a.lse.slice(2, p, p + L), lse_rows);
    }
}

void gathered_attention_backward(Backend& backend, const ContextParallel& cp, const Tensor& q,
                                 const Tensor& k, const Tensor& v, const Tensor& dout,
                                 const ops::AttentionConfig& config, Tensor& dq, Tensor& dk,
                                 Tensor& dv) {
    check(cp, q, config);
    const int64_t T = q.size(1), L = T / 2;
    const Tensor keys = gather_sequence(backend, cp, k), values = gather_sequence(backend, cp, v);
    Tensor dkeys = backend.zeros(keys.shape(), keys.dtype());
    Tensor dvalues = backend.zeros(values.shape(), values.dtype());
    for (int c = 0; c < 2; ++c) {
        const int64_t p = cp.chunk_start(cp.rank(), c, T), n = p + L;
        const ChunkAttention a =
            chunk_attention(backend, q.slice(1, c * L, (c + 1) * L), keys, values, p, config);
        // The dropped rows get no gradient, so they add nothing to the keys' and values'.
        Tensor da = backend.zeros(a.out.shape(), a.out.dtype());
        Tensor d_rows = da.slice(1, p, n);
        backend.copy(dout.slice(1, c * L, (c + 1) * L), d_rows);
        Tensor dq_all = backend.empty(a.q.shape(), a.q.dtype());
        Tensor dk_part = backend.empty(a.k.shape(), a.k.dtype());
        Tensor dv_part = backend.empty(a.v.shape(), a.v.dtype());
        backend.attention_backward(a.q, a.k, a.v, a.out, a.lse, da, config, dq_all, dk_part,
                                   dv_part);
        Tensor dq_rows = dq.slice(1, c * L, (c + 1) * L);
        backend.copy(dq_all.slice(1, p, n), dq_rows);
        Tensor dk_to = dkeys.slice(1, 0, n), dv_to = dvalues.slice(1, 0, n);
        backend.add(backend.contiguous(dk_to), dk_part, dk_part);
        backend.add(backend.contiguous(dv_to), dv_part, dv_part);
        backend.copy(dk_part, dk_to);
        backend.copy(dv_part, dv_to);
    }
    // Every rank's queries reached these keys: their gradients summed, each rank its chunks.
    cp.group->all_reduce(dkeys, ReduceOp::sum);
    cp.group->all_reduce(dvalues, ReduceOp::sum);
    for (int c = 0; c < 2; ++c) {
        const int64_t p = cp.chunk_start(cp.rank(), c, T);
        Tensor dk_rows = dk.slice(1, c * L, (c + 1) * L), dv_rows = dv.slice(1, c * L, (c + 1) * L);
        backend.copy(dkeys.slice(1, p, p + L), dk_rows);
        backend.copy(dvalues.slice(1, p, p + L), dv_rows);
    }
}

}  // namespace mt::nn
