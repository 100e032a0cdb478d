// CPU traversal of inference attention over a KV cache: one OpenMP task per (batch, head,
// query); each scores its visible keys, takes a stable softmax and sums the values (an f32
// cache through the vector kernels of key_value_rows.h, in runs of consecutive slots). Decoding
// reads one query per head, so the work is the cache read and the loops stay simple. A bf16
// cache is read as it is, widened key by key (a step's queries and output go through f32): a
// widened copy of the whole cache at every step and layer cost more than the attention.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "cpu_backend.h"
#include "half_as_float.h"
#include "key_value_rows.h"
#include "lane_dot.h"
#include "mt/kernels/hd.h"
#include "op_support.h"
#include "vector_exp.h"

namespace mt::cpu {

using detail::check_float;
using detail::check_float_shape;
using detail::in_t;
using detail::kParallelMin;
using detail::out_t;
using detail::with_float;

namespace {

using detail::Bf16;
using detail::Element;

// Keys 0 .. keys - 1 of a row, key s at slot (first + s) % C: the slots run on and wrap once, so
// they come in at most two runs of consecutive slots; fn(s, slot, run) takes each.
template <class F>
void slot_runs(int64_t first, int64_t keys, int64_t C, F fn) {
    for (int64_t s = 0, slot = first % C; s < keys; slot = 0) {
        const int64_t run = std::min(keys - s, C - slot);
        fn(s, slot, run);
        s += run;
    }
}

// T: the queries', output's and bias's type; S: the cache's (T, or bf16 with T float).
template <class T, class S>
void cached(const T* q, const S* kc, const S* vc, const T* bias, const T* sink, T* out, int64_t B,
            int64_t Tq, int64_t nq, int64_t ng, int64_t hd, int64_t C, int64_t past, int64_t window,
            T scale) {
    using E = Element<S>;
    // An f32 cache with f32 queries: the vector kernels of key_value_rows.h.
    constexpr bool kF32 = std::is_same_v<T, float> && std::is_same_v<S, float>;
    const int64_t per_group = nq / ng, tasks = B * nq * Tq;
#pragma omp parallel if (tasks * (past + Tq) * hd >= kParallelMin)
    {
        std::vector<T> p(size_t(std::min(past + Tq, C)));  // a row's keys: at most the slots
#pragma omp for schedule(static)
        for (int64_t task = 0; task < tasks; ++task) {
            const int64_t t = task % Tq, h = (task / Tq) % nq, b = task / (Tq * nq);
            // Keys [first, past + t]: all of them, or the window's.
            const int64_t g = h / per_group, end = past + t + 1;
            const int64_t first = window >= 0 ? std::max<int64_t>(0, end - 1 - window) : 0;
            const int64_t keys = end - first;
            const T* qr = q + ((b * Tq + t) * nq + h) * hd;
            const T* bias_row = bias ? bias + (h * Tq + t) * (past + Tq) + first : nullptr;
            const auto key_rows = [&](int64_t slot) { return kc + ((b * C + slot) * ng + g) * hd; };
            const auto value_rows = [&](int64_t slot) {
                return vc + ((b * C + slot) * ng + g) * hd;
            };
            slot_runs(first, keys, C, [&](int64_t s0, int64_t slot, int64_t run) {
                if constexpr (kF32)
                    key_dots(qr, key_rows(slot), ng * hd, run, hd, scale, p.data() + s0);
                else
                    for (int64_t j = 0; j < run; ++j)
                        p[size_t(s0 + j)] = scale * lane_dot(qr, key_rows(slot + j), hd);
            });
            if (bias_row)
                for (int64_t s = 0; s < keys; ++s) p[size_t(s)] += bias_row[s];
            // An attention sink joins the softmax as one more logit with no value.
            const T m = std::max(lane_max(p.data(), keys, k::neg_inf<T>()),
                                 sink ? sink[h] : k::neg_inf<T>());
            T l = sink ? k::exp(sink[h] - m) : T(0);
            if constexpr (std::is_same_v<T, float>)
                l += exp_shifted(p.data(), -m, p.data(), keys);
            else
                for (int64_t s = 0; s < keys; ++s) l += p[size_t(s)] = k::exp(p[size_t(s)] - m);
            T* o = out + ((b * Tq + t) * nq + h) * hd;
            std::fill(o, o + hd, T(0));
            for (int64_t s = 0; s < keys; ++s) p[size_t(s)] /= l;
            slot_runs(first, keys, C, [&](int64_t s0, int64_t slot, int64_t run) {
                if constexpr (kF32)
                    weighted_values(p.data() + s0, value_rows(slot), ng * hd, run, hd, o);
                else
                    for (int64_t j = 0; j < run; ++j) {
                        const S* vr = value_rows(slot + j);
                        for (int64_t i = 0; i < hd; ++i) o[i] += p[size_t(s0 + j)] * E::load(vr[i]);
                    }
            });
        }
    }
}

}  // namespace

void CpuBackend::attention_cached(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                                  int64_t past, int64_t window, double scale, const Tensor& bias,
                                  const Tensor& sink, Tensor& out) {
    const bool bf16_cache = k_cache.dtype() == DType::bf16 && v_cache.dtype() == DType::bf16;
    if (any_half({&q, &out, &bias, &sink}) || (any_half({&k_cache, &v_cache}) && !bf16_cache)) {
        HalfAsFloat h;  // the caches only when they are not both bf16 (f16: widened)
        attention_cached(h.in(q), bf16_cache ? k_cache : h.in(k_cache),
                         bf16_cache ? v_cache : h.in(v_cache), past, window, scale, h.in(bias),
                         h.in(sink), h.out(out));
        return h.finish();
    }
    const char* op = "attention_cached";
    check_float(op, "q", q);
    MT_CHECK(!bf16_cache || q.dtype() == DType::f32, op,
             ": a bf16 cache takes f32 (or bf16) queries, got ", q.describe());
    MT_CHECK(q.dim() == 4, op, ": q must be (B, Tq, nq, hd), got ", q.describe());
    const int64_t B = q.size(0), Tq = q.size(1), nq = q.size(2), hd = q.size(3);
    const DType cache_dtype = bf16_cache ? DType::bf16 : q.dtype();
    MT_CHECK(k_cache.dim() == 4 && k_cache.size(0) == B && k_cache.size(3) == hd &&
                 k_cache.size(2) > 0 && nq % k_cache.size(2) == 0,
             op, ": k_cache must be (B, C, ng, hd) with ng dividing nq for q ", q.describe(),
             ", got ", k_cache.describe());
    const int64_t C = k_cache.size(1), ng = k_cache.size(2);
    MT_CHECK(past >= 0 && (past + Tq <= C || (window >= 0 && window + Tq <= C)), op, ": positions ",
             past, " + ", Tq, " exceed the cache's ", C, " slots",
             window >= 0 ? " (a ring of the window's keys and the new positions)" : "");
    detail::check_float_or_bf16_shape(op, "k_cache", k_cache, k_cache.shape(), cache_dtype);
    detail::check_float_or_bf16_shape(op, "v_cache", v_cache, k_cache.shape(), cache_dtype);
    check_float_shape(op, "out", out, q.shape(), q.dtype());
    if (bias.defined())
        MT_CHECK(bias.is_contiguous(), op, ": bias must be contiguous, got ", bias.describe());
    if (bias.defined()) check_float_shape(op, "bias", bias, {nq, Tq, past + Tq}, q.dtype());
    if (sink.defined()) {
        MT_CHECK(sink.is_contiguous(), op, ": sink must be contiguous, got ", sink.describe());
        check_float_shape(op, "sink", sink, {nq}, q.dtype());
    }
    if (bf16_cache)
        return cached(in_t<float>(q), in_t<Bf16>(k_cache), in_t<Bf16>(v_cache),
                      bias.defined() ? in_t<float>(bias) : nullptr,
                      sink.defined() ? in_t<float>(sink) : nullptr, out_t<float>(out), B, Tq, nq,
                      ng, hd, C, past, window, float(scale));
    with_float(q.dtype(), [&](auto zero) {
        using T = decltype(zero);
        cached(in_t<T>(q), in_t<T>(k_cache), in_t<T>(v_cache),
               bias.defined() ? in_t<T>(bias) : nullptr, sink.defined() ? in_t<T>(sink) : nullptr,
               out_t<T>(out), B, Tq, nq, ng, hd, C, past, window, T(scale));
    });
}

}  // namespace mt::cpu
