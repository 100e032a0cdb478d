// Every intermediate is a float, as in DeepSpeed's f32 gate (a double for f64 models, whose
// gradients the tests check by finite differences).
#include "gshard_gating.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "mt/error.h"

namespace mt::nn {

namespace {

// torch.argmax: the first largest.
template <class R>
int32_t argmax(const R* row, int64_t n) {
    int32_t best = 0;
    for (int32_t e = 1; e < int32_t(n); ++e)
        if (row[e] > row[best]) best = e;
    return best;
}

// DeepSpeed's _capacity: ceil(tokens / experts (a Python float) x factor (an f32 tensor)), at
// least min_capacity.
int64_t gshard_capacity(int64_t tokens, int64_t experts, double factor, int64_t min_capacity) {
    const float scaled = float(double(tokens) / double(experts)) * float(factor);
    return std::max(int64_t(std::ceil(scaled)), min_capacity);
}

template <class R>
Routing route_in(const RouterConfig& c, const std::vector<double>& logits,
                 const std::vector<double>& uniforms, bool training) {
    const GShardGating& g = c.gshard;
    const int64_t E = c.num_experts, N = int64_t(logits.size()) / E, K = c.topk;
    MT_CHECK(K == 1 || K == 2, "DeepSpeed's MoE gate: top-", K, " is not supported yet");
    MT_CHECK(uniforms.empty() || uniforms.size() == logits.size(),
             "DeepSpeed's MoE gate: ", uniforms.size(), " random numbers for ", logits.size(),
             " logits");
    Routing r;
    r.tokens = N;
    r.experts = E;
    r.probs.assign(size_t(N * E), 0.0);
    r.map.assign(size_t(N * E), 0);
    r.scores.assign(size_t(N * E), 0.0);
    r.top.assign(size_t(N * K), 0);
    // gates = softmax(logits) in f32.
    std::vector<R> gates(size_t(N * E));
    for (int64_t t = 0; t < N; ++t) {
        const double* l = &logits[size_t(t * E)];
        R* p = &gates[size_t(t * E)];
        R m = -std::numeric_limits<R>::infinity();
        for (int64_t e = 0; e < E; ++e) m = std::max(m, R(l[e]));
        R sum = 0;
        for (int64_t e = 0; e < E; ++e) sum += (p[e] = std::exp(R(l[e]) - m));
        for (int64_t e = 0; e < E; ++e) r.scores[size_t(t * E + e)] = p[e] = p[e] / sum;
    }
    // The choices: the most probable expert; top-2's second the largest other logit, with
    // Gumbel noise when sampled.
    std::vector<R> row(static_cast<size_t>(E));
    std::vector<int64_t> first(size_t(E), 0), counts(size_t(E), 0);
    for (int64_t t = 0; t < N; ++t) {
        const int32_t e1 = argmax(&gates[size_t(t * E)], E);
        r.top[size_t(t * K)] = e1;
        ++first[size_t(e1)];
        ++counts[size_t(e1)];
        if (K == 1) continue;
        for (int64_t e = 0; e < E; ++e) {
            R l = R(logits[size_t(t * E + e)]);
            if (g.sample_second_expert && !uniforms.empty())
                l += -std::log(-std::log(R(uniforms[size_t(t * E + e)])));
            row[size_t(e)] = e == e1 ? -std::numeric_limits<R>::infinity() : l;
        }
        const int32_t e2 = argmax(row.data(), E);
        r.top[size_t(t * K + 1)] = e2;
        ++counts[size_t(e2)];
    }
    r.tokens_per_expert = counts;
    // Each expert's capacity: as configured, or (without dropping) its busiest expert's load.
    const double factor = training ? g.train_capacity_factor : g.eval_capacity_factor;
    int64_t capacity = *std::max_element(counts.begin(), counts.end());
    if (g.drop_tokens)
        capacity = gshard_capacity(N, E, factor * double(K), g.min_capacity);
    else if (K == 1)
        capacity = std::min(capacity, N);
    // Which choices an expert keeps: top-1 the `capacity` with the largest random keys (random
    // token selection; by position without keys), top-2 by position, every first choice before
    // the second ones.
    std::vector<uint8_t> kept(size_t(N * K), 1);
    if (K == 1) {
        MT_CHECK(N >= g.min_capacity,
                 "No. of tokens (batch-size) should be greater than min_capacity. Either set "
                 "min_capacity to 0 or increase your batch size. (DeepSpeed's MoE gate: ",
                 N, " tokens, --moe-min-capacity ", g.min_capacity, ")");
        std::vector<int64_t> tokens;
        for (int64_t e = 0; e < E; ++e) {
            if (counts[size_t(e)] <= capacity) continue;
            tokens.clear();
            for (int64_t t = 0; t < N; ++t)
                if (r.top[size_t(t)] == e) tokens.push_back(t);
            if (!uniforms.empty())
                std::stable_sort(tokens.begin(), tokens.end(), [&](int64_t a, int64_t b) {
                    return uniforms[size_t(a * E + e)] > uniforms[size_t(b * E + e)];
                });
            for (size_t i = size_t(capacity); i < tokens.size(); ++i) kept[size_t(tokens[i])] = 0;
        }
    } else {
        std::vector<int64_t> location(first.begin(), first.end());  // second choices start here
        std::vector<int64_t> first_location(size_t(E), 0);
        for (int64_t t = 0; t < N; ++t) {
            const int32_t e1 = r.top[size_t(t * 2)], e2 = r.top[size_t(t * 2 + 1)];
            kept[size_t(t * 2)] = first_location[size_t(e1)]++ < capacity;
            kept[size_t(t * 2 + 1)] = location[size_t(e2)]++ < capacity;
        }
    }
    // The weights: top-1 its expert's probability, top-2 the kept two renormalised.
    for (int64_t t = 0; t < N; ++t) {
        const R* p = &gates[size_t(t * E)];
        if (K == 1) {
            const int32_t e = r.top[size_t(t)];
            if (!kept[size_t(t)]) continue;
            r.probs[size_t(t * E + e)] = p[e];
            r.map[size_t(t * E + e)] = 1;
            continue;
        }
        const int32_t e1 = r.top[size_t(t * 2)], e2 = r.top[size_t(t * 2 + 1)];
        const R g1 = kept[size_t(t * 2)] ? p[e1] : R(0),
                g2 = kept[size_t(t * 2 + 1)] ? p[e2] : R(0);
        const R denom = std::max(g1 + g2, R(std::numeric_limits<float>::epsilon()));
        if (kept[size_t(t * 2)]) {
            r.probs[size_t(t * E + e1)] = g1 / denom;
            r.map[size_t(t * E + e1)] = 1;
        }
        if (kept[size_t(t * 2 + 1)]) {
            r.probs[size_t(t * E + e2)] = g2 / denom;
            r.map[size_t(t * E + e2)] = 1;
        }
    }
    // l_aux = E · Σ_e mean_t(gates) · mean_t(first choices) (top-2: mean_e(...) · E², the same),
    // before any dropping; its gradient reaches the gates only. (Megatron-DeepSpeed's evaluation
    // leaves it out of its validation losses.)
    if (training && c.aux_loss_coeff != 0) {
        std::vector<R> me(size_t(E), R(0));
        for (int64_t t = 0; t < N; ++t)
            for (int64_t e = 0; e < E; ++e) me[size_t(e)] += gates[size_t(t * E + e)];
        R loss = 0;
        std::vector<R> ce(static_cast<size_t>(E));
        for (int64_t e = 0; e < E; ++e) {
            ce[size_t(e)] = R(first[size_t(e)]) / R(N);
            loss += me[size_t(e)] / R(N) * ce[size_t(e)];
        }
        r.aux_loss = double(loss * R(E)) * c.aux_loss_coeff;
        r.loss_weights.assign(size_t(N * E), 0.0);
        for (int64_t t = 0; t < N; ++t)
            for (int64_t e = 0; e < E; ++e)
                r.loss_weights[size_t(t * E + e)] =
                    c.aux_loss_coeff * double(E) * double(ce[size_t(e)]) / double(N);
    }
    return r;
}

}  // namespace

Routing gshard_route(const RouterConfig& c, const std::vector<double>& logits,
                     const std::vector<double>& uniforms, bool training, bool f64) {
    return f64 ? route_in<double>(c, logits, uniforms, training)
               : route_in<float>(c, logits, uniforms, training);
}

std::vector<double> gshard_route_backward(const RouterConfig& c, const Routing& r,
                                          const std::vector<double>& dprobs, double aux_scale) {
    const int64_t E = r.experts, N = r.tokens, K = c.topk;
    std::vector<double> dlogits(size_t(N * E), 0.0);
    std::vector<double> dgates(static_cast<size_t>(E));
    for (int64_t t = 0; t < N; ++t) {
        const double* p = &r.scores[size_t(t * E)];
        std::fill(dgates.begin(), dgates.end(), 0.0);
        if (!r.loss_weights.empty())
            for (int64_t e = 0; e < E; ++e)
                dgates[size_t(e)] = aux_scale * r.loss_weights[size_t(t * E + e)];
        if (K == 1) {
            const int32_t e = r.top[size_t(t)];
            if (r.map[size_t(t * E + e)]) dgates[size_t(e)] += dprobs[size_t(t * E + e)];
        } else {
            // w_i = g_i / (g_1 + g_2) over the kept choices: dg_i = (dw_i - Σ_j w_j dw_j) / d.
            const int32_t e1 = r.top[size_t(t * 2)], e2 = r.top[size_t(t * 2 + 1)];
            const bool k1 = r.map[size_t(t * E + e1)], k2 = r.map[size_t(t * E + e2)];
            const double g1 = k1 ? p[e1] : 0.0, g2 = k2 ? p[e2] : 0.0;
            const double d = g1 + g2;
            if (d > double(std::numeric_limits<float>::epsilon())) {
                const double w1 = g1 / d, w2 = g2 / d;
                const double dw1 = k1 ? dprobs[size_t(t * E + e1)] : 0.0;
                const double dw2 = k2 ? dprobs[size_t(t * E + e2)] : 0.0;
                const double mean = w1 * dw1 + w2 * dw2;
                if (k1) dgates[size_t(e1)] += (dw1 - mean) / d;
                if (k2) dgates[size_t(e2)] += (dw2 - mean) / d;
            } else {
                const double eps = double(std::numeric_limits<float>::epsilon());
                if (k1) dgates[size_t(e1)] += dprobs[size_t(t * E + e1)] / eps;
                if (k2) dgates[size_t(e2)] += dprobs[size_t(t * E + e2)] / eps;
            }
        }
        // Through the softmax.
        double dot = 0;
        for (int64_t e = 0; e < E; ++e) dot += p[e] * dgates[size_t(e)];
        for (int64_t e = 0; e < E; ++e)
            dlogits[size_t(t * E + e)] = p[e] * (dgates[size_t(e)] - dot);
    }
    return dlogits;
}

}  // namespace mt::nn
