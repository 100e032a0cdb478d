#include "mt/nn/ring_attention.h"

#include <memory>
#include <utility>

#include "mt/error.h"

namespace mt::nn {

namespace {

// What step i computes: `keys` is the rank whose chunks it holds.
enum class StepKind {
    own,      // i = 0: both chunks, causal
    earlier,  // an earlier rank: all queries to its first chunk
    later,    // a later rank: the second chunk's queries to both of its chunks
};

StepKind step_kind(const ContextParallel& cp, int step) {
    if (step == 0) return StepKind::own;
    const int keys = (cp.rank() - step + cp.size()) % cp.size();
    return keys < cp.rank() ? StepKind::earlier : StepKind::later;
}

// Step i's attention config: causal at step 0 only; past it every query sees every key it is
// given (an earlier rank's first chunk, or a later rank's both chunks for the second chunk's
// queries), so no mask and no score is computed for a key no query sees.
ops::AttentionConfig step_config(const ops::AttentionConfig& given, StepKind kind) {
    ops::AttentionConfig c = given;
    c.causal = kind == StepKind::own;
    c.document_start = Tensor();
    c.key_length = Tensor();
    return c;
}

// One half (along `dim`, the sequence's: its first or second chunk) of x, contiguous.
Tensor half_of(Backend& backend, const Tensor& x, int64_t dim, bool second) {
    const int64_t half = x.size(dim) / 2;
    const Tensor part = x.slice(dim, second ? half : 0, second ? x.size(dim) : half);
    Tensor out = backend.empty(part.shape(), part.dtype());
    backend.copy(part, out);
    return out;
}

// Copies a half-sized step result into x's second (second = false: first) half along `dim`,
// where it adds to the whole (the other half is the caller's).
void place_half(Backend& backend, const Tensor& half_value, int64_t dim, bool second, Tensor& x) {
    const int64_t half = x.size(dim) / 2;
    Tensor target = x.slice(dim, second ? half : 0, second ? x.size(dim) : half);
    backend.copy(half_value, target);
}

// Keys and values (and, in the backward, their gradients) passed to the next rank while the
// current ones are worked on; `received` holds the previous rank's once wait() returns.
struct Exchange {
    std::vector<Tensor> received;
    std::vector<std::unique_ptr<CommRequest>> requests;
    void wait() {
        for (auto& r : requests) r->wait();
        requests.clear();
    }
};

// Posts send[i] to the next rank and the receive of a tensor shaped like it from the previous
// one, tagged first_tag + i (exchanges in flight together need tags of their own).
Exchange pass_on(Backend& backend, const ContextParallel& cp, const std::vector<Tensor>& send,
                 int first_tag = 0) {
    const int next = (cp.rank() + 1) % cp.size(),
              previous = (cp.rank() + cp.size() - 1) % cp.size();
    Exchange e;
    for (size_t i = 0; i < send.size(); ++i) {
        e.received.push_back(backend.empty(send[i].shape(), send[i].dtype()));
        e.requests.push_back(cp.group->irecv(e.received[i], previous, first_tag + int(i)));
        e.requests.push_back(cp.group->isend(send[i], next, first_tag + int(i)));
    }
    return e;
}

}  // namespace

void ring_attention_forward(Backend& backend, const ContextParallel& cp, const Tensor& q,
                            const Tensor& k, const Tensor& v,
                            const std::vector<ops::AttentionConfig>& steps, Tensor& out,
                            Tensor& lse) {
    MT_CHECK(int(steps.size()) == cp.size(), "ring attention: ", steps.size(), " steps for ",
             cp.size(), " ranks");
    const int64_t T = q.size(1);
    MT_CHECK(T % 2 == 0, "ring attention: the local sequence (", T, ") is not two chunks");
    Tensor keys = k, values = v;
    // A step's partial result for all rows (a later step's first half stays unused).
    Tensor part = backend.empty(out.shape(), out.dtype());
    Tensor part_lse = backend.empty(lse.shape(), lse.dtype());
    // The later steps' queries and their results, made at the first of them.
    Tensor q_second, half_out, half_lse;
    for (int i = 0; i < cp.size(); ++i) {
        Exchange exchange;
        if (i + 1 < cp.size()) exchange = pass_on(backend, cp, {keys, values});
        const StepKind kind = step_kind(cp, i);
        const ops::AttentionConfig config = step_config(steps[size_t(i)], kind);
        if (kind == StepKind::own) {
            backend.attention_forward(q, keys, values, config, out, lse);
        } else if (kind == StepKind::earlier) {
            backend.attention_forward(q, half_of(backend, keys, 1, false),
                                      half_of(backend, values, 1, false), config, part, part_lse);
            backend.attention_merge(out, lse, part, part_lse, 0, T);
        } else {
            if (!q_second.defined()) {
                q_second = half_of(backend, q, 1, true);
                half_out = backend.empty(q_second.shape(), out.dtype());
                half_lse = backend.empty({lse.size(0), lse.size(1), T / 2}, lse.dtype());
            }
            backend.attention_forward(q_second, keys, values, config, half_out, half_lse);
            place_half(backend, half_out, 1, true, part);
            place_half(backend, half_lse, 2, true, part_lse);
            backend.attention_merge(out, lse, part, part_lse, T / 2, T);
        }
        exchange.wait();
        if (i + 1 < cp.size()) {
            keys = exchange.received[0];
            values = exchange.received[1];
        }
    }
}

void ring_attention_backward(Backend& backend, const ContextParallel& cp, const Tensor& q,
                             const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                             const Tensor& dout, const std::vector<ops::AttentionConfig>& steps,
                             Tensor& dq, Tensor& dk, Tensor& dv) {
    MT_CHECK(int(steps.size()) == cp.size(), "ring attention: ", steps.size(), " steps for ",
             cp.size(), " ranks");
    // The later steps' second-chunk rows, made at the first of them.
    Tensor q_second, out_second, lse_second, dout_second, dq_second;
    Tensor keys = k, values = v;
    Tensor dkeys = backend.zeros(k.shape(), k.dtype()),
           dvalues = backend.zeros(v.shape(), v.dtype());
    // A step's gradients over all rows: a half-sized step's fill one half, the other stays 0
    // (dq's first half for the later steps, dk's and dv's second for the earlier ones, which
    // never share a buffer: they keep zeros once written).
    Tensor step_dq = backend.empty(q.shape(), q.dtype());
    Tensor step_dk = backend.empty(k.shape(), k.dtype()),
           step_dv = backend.empty(v.shape(), v.dtype());
    Tensor later_dq, earlier_dk, earlier_dv, half_dk, half_dv;  // made at their first step
    backend.fill(dq, 0.0);
    for (int i = 0; i < cp.size(); ++i) {
        // The keys and values move on while this step works on them; their gradients so far
        // follow after it. After the last step the gradients go home (the next rank owns the
        // keys held then).
        const bool last = i + 1 == cp.size();
        Exchange keys_exchange;
        if (!last) keys_exchange = pass_on(backend, cp, {keys, values});
        const StepKind kind = step_kind(cp, i);
        const ops::AttentionConfig config = step_config(steps[size_t(i)], kind);
        const Tensor *add_dq = &step_dq, *add_dk = &step_dk, *add_dv = &step_dv;
        if (kind == StepKind::own) {
            backend.attention_backward(q, keys, values, out, lse, dout, config, step_dq, step_dk,
                                       step_dv);
        } else if (kind == StepKind::earlier) {
            if (!earlier_dk.defined()) {
                earlier_dk = backend.zeros(k.shape(), k.dtype());
                earlier_dv = backend.zeros(v.shape(), v.dtype());
                half_dk =
                    backend.empty({k.size(0), k.size(1) / 2, k.size(2), k.size(3)}, k.dtype());
                half_dv = backend.empty(half_dk.shape(), v.dtype());
            }
            backend.attention_backward(q, half_of(backend, keys, 1, false),
                                       half_of(backend, values, 1, false), out, lse, dout, config,
                                       step_dq, half_dk, half_dv);
            place_half(backend, half_dk, 1, false, earlier_dk);
            place_half(backend, half_dv, 1, false, earlier_dv);
            add_dk = &earlier_dk;
            add_dv = &earlier_dv;
        } else {
            if (!q_second.defined()) {
                q_second = half_of(backend, q, 1, true);
                out_second = half_of(backend, out, 1, true);
                lse_second = half_of(backend, lse, 2, true);
                dout_second = half_of(backend, dout, 1, true);
                dq_second = backend.empty(q_second.shape(), q.dtype());
                later_dq = backend.zeros(q.shape(), q.dtype());
            }
            backend.attention_backward(q_second, keys, values, out_second, lse_second, dout_second,
                                       config, dq_second, step_dk, step_dv);
            place_half(backend, dq_second, 1, true, later_dq);
            add_dq = &later_dq;
        }
        backend.axpy(1.0f, *add_dq, dq);
        backend.axpy(1.0f, *add_dk, dkeys);
        backend.axpy(1.0f, *add_dv, dvalues);
        Exchange grads_exchange = pass_on(backend, cp, {dkeys, dvalues}, /*first_tag=*/2);
        keys_exchange.wait();
        grads_exchange.wait();
        if (!last) {
            keys = keys_exchange.received[0];
            values = keys_exchange.received[1];
        }
        dkeys = grads_exchange.received[0];
        dvalues = grads_exchange.received[1];
    }
    backend.copy(dkeys, dk);
    backend.copy(dvalues, dv);
}

}  // namespace mt::nn
