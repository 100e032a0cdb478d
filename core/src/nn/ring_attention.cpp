#include "mt/nn/ring_attention.h"

#include <memory>
#include <utility>

#include "mt/error.h"

namespace mt::nn {

namespace {

// What step i computes: `keys` is the rank whose chunks it holds.
enum class StepKind {
    own,      // i = 0: both chunks, causal
    earlier,  // an earlier rank: all queries to its first chunk (keys past it are cut)
    later,    // a later rank: the second chunk's queries to both of its chunks
};

StepKind step_kind(const ContextParallel& cp, int step) {
    if (step == 0) return StepKind::own;
    const int keys = (cp.rank() - step + cp.size()) % cp.size();
    return keys < cp.rank() ? StepKind::earlier : StepKind::later;
}

// Step i's attention config: non-causal past step 0; an earlier rank's keys cut to its first
// chunk by key lengths.
ops::AttentionConfig step_config(const ops::AttentionConfig& given, StepKind kind, int64_t batch,
                                 int64_t length) {
    ops::AttentionConfig c = given;
    c.causal = kind == StepKind::own;
    c.document_start = Tensor();
    c.key_length = Tensor();
    if (kind == StepKind::earlier)
        c.key_length =
            host_tensor(std::vector<int32_t>(size_t(batch), int32_t(length / 2)), {batch});
    return c;
}

// x with its second half (along `dim`) in both halves: the later-rank step runs the second
// chunk's rows twice so its queries and keys have the same length (the kernel's contract); the
// first copy's results are dropped.
Tensor second_half_twice(Backend& backend, const Tensor& x, int64_t dim) {
    const int64_t n = x.size(dim), half = n / 2;
    Tensor out = backend.empty(x.shape(), x.dtype());
    const Tensor second = x.slice(dim, half, n);
    Tensor low = out.slice(dim, 0, half), high = out.slice(dim, half, n);
    backend.copy(second, low);
    backend.copy(second, high);
    return out;
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
    const int64_t B = q.size(0), T = q.size(1);
    MT_CHECK(T % 2 == 0, "ring attention: the local sequence (", T, ") is not two chunks");
    Tensor keys = k, values = v;
    Tensor part = backend.empty(out.shape(), out.dtype());
    Tensor part_lse = backend.empty(lse.shape(), lse.dtype());
    Tensor q_later;  // the later-rank steps' queries, made at the first of them
    for (int i = 0; i < cp.size(); ++i) {
        Exchange exchange;
        if (i + 1 < cp.size()) exchange = pass_on(backend, cp, {keys, values});
        const StepKind kind = step_kind(cp, i);
        const ops::AttentionConfig config = step_config(steps[size_t(i)], kind, B, T);
        if (kind == StepKind::own) {
            backend.attention_forward(q, keys, values, config, out, lse);
        } else if (kind == StepKind::earlier) {
            backend.attention_forward(q, keys, values, config, part, part_lse);
            backend.attention_merge(out, lse, part, part_lse, 0, T);
        } else {
            if (!q_later.defined()) q_later = second_half_twice(backend, q, 1);
            backend.attention_forward(q_later, keys, values, config, part, part_lse);
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
    const int64_t B = q.size(0), T = q.size(1);
    // The later-rank steps see the second chunk's rows twice; only the second copy carries a
    // gradient (the first's dout is zero, so it adds nothing to dk and dv).
    Tensor q_later, out_later, lse_later, dout_later;
    Tensor keys = k, values = v;
    Tensor dkeys = backend.zeros(k.shape(), k.dtype()),
           dvalues = backend.zeros(v.shape(), v.dtype());
    Tensor step_dq = backend.empty(q.shape(), q.dtype());
    Tensor step_dk = backend.empty(k.shape(), k.dtype()),
           step_dv = backend.empty(v.shape(), v.dtype());
    backend.fill(dq, 0.0);
    for (int i = 0; i < cp.size(); ++i) {
        // The keys and values move on while this step works on them; their gradients so far
        // follow after it. After the last step the gradients go home (the next rank owns the
        // keys held then).
        const bool last = i + 1 == cp.size();
        Exchange keys_exchange;
        if (!last) keys_exchange = pass_on(backend, cp, {keys, values});
        const StepKind kind = step_kind(cp, i);
        const ops::AttentionConfig config = step_config(steps[size_t(i)], kind, B, T);
        if (kind == StepKind::later) {
            if (!q_later.defined()) {
                q_later = second_half_twice(backend, q, 1);
                out_later = second_half_twice(backend, out, 1);
                lse_later = second_half_twice(backend, lse, 2);
                dout_later = backend.zeros(dout.shape(), dout.dtype());
                Tensor high = dout_later.slice(1, T / 2, T);
                backend.copy(dout.slice(1, T / 2, T), high);
            }
            backend.attention_backward(q_later, keys, values, out_later, lse_later, dout_later,
                                       config, step_dq, step_dk, step_dv);
        } else {
            backend.attention_backward(q, keys, values, out, lse, dout, config, step_dq, step_dk,
                                       step_dv);
        }
        backend.axpy(1.0f, step_dq, dq);  // the later steps' first half is zero
        backend.axpy(1.0f, step_dk, dkeys);
        backend.axpy(1.0f, step_dv, dvalues);
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
