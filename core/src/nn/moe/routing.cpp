// TopKRouter's routing and its backward, written once over the real type R (float as torch's
// float32 router, double for f64 runs): every intermediate is rounded to R where torch's would be.
#include "mt/nn/moe/routing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "gshard_gating.h"
#include "mt/error.h"
#include "mt/parallel/collectives.h"

namespace mt::nn {

namespace {

// torch.topk's order: larger values first, ties to the lower index.
std::vector<int32_t> top_indices(const double* row, int64_t n, int64_t k) {
    std::vector<int32_t> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int32_t a, int32_t b) {
        return row[a] > row[b] || (row[a] == row[b] && a < b);
    });
    idx.resize(size_t(k));
    return idx;
}

template <class R>
struct Router {
    const RouterConfig& c;
    int64_t N, E, K;

    // Softmax of one row in R (torch.softmax(..., dtype=float32) for float).
    void softmax(const double* x, int64_t n, double* y) const {
        R m = -std::numeric_limits<R>::infinity();
        for (int64_t i = 0; i < n; ++i) m = std::max(m, R(x[i]));
        R sum = 0;
        for (int64_t i = 0; i < n; ++i) sum += (y[i] = R(std::exp(R(x[i]) - m)));
        for (int64_t i = 0; i < n; ++i) y[i] = R(R(y[i]) / sum);
    }
    static R sigmoid(double x) { return R(1) / (R(1) + R(std::exp(-R(x)))); }

    // compute_topk: plain top-k, or DeepSeek's group-limited top-k (the groups whose best
    // topk/group_topk scores sum highest, then the top-k within them).
    std::vector<int32_t> select(const double* row) const {
        if (c.group_topk <= 0) return top_indices(row, E, K);
        const int64_t G = c.num_groups, per = E / G;
        std::vector<double> group_score(static_cast<size_t>(G));
        for (int64_t g = 0; g < G; ++g) {
            std::vector<double> in(row + g * per, row + (g + 1) * per);
            std::vector<int32_t> best = top_indices(in.data(), per, K / c.group_topk);
            R sum = 0;
            for (int32_t i : best) sum += R(in[size_t(i)]);
            group_score[size_t(g)] = sum;
        }
        std::vector<int32_t> groups = top_indices(group_score.data(), G, c.group_topk);
        std::vector<double> masked(size_t(E), -std::numeric_limits<double>::infinity());
        for (int32_t g : groups)
            std::copy(row + g * per, row + (g + 1) * per, masked.begin() + g * per);
        return top_indices(masked.data(), E, K);
    }

    // topk_softmax_with_capacity's top-k part: r.top, r.top_values and the scaled probs.
    void top_k(const std::vector<double>& logits, const std::vector<double>& bias, Routing& r,
               std::vector<double>& gates) const {
        r.top.resize(size_t(N * K));
        r.top_values.resize(size_t(N * K));
        r.scores.assign(size_t(N * E), 0.0);
        std::vector<double> buffer(static_cast<size_t>(E));
        for (int64_t t = 0; t < N; ++t) {
            const double* l = &logits[size_t(t * E)];
            double* s = &r.scores[size_t(t * E)];
            std::vector<int32_t> top;
            std::vector<double> p(static_cast<size_t>(K));
            if (c.score_function == ScoreFunction::softmax && !c.pre_softmax) {
                top = select(l);
                std::vector<double> chosen(static_cast<size_t>(K));
                for (int64_t j = 0; j < K; ++j) chosen[size_t(j)] = l[top[size_t(j)]];
                softmax(chosen.data(), K, p.data());
            } else if (c.score_function == ScoreFunction::softmax) {
                softmax(l, E, s);
                top = select(s);
                for (int64_t j = 0; j < K; ++j) p[size_t(j)] = s[top[size_t(j)]];
            } else {
                for (int64_t e = 0; e < E; ++e) s[e] = sigmoid(l[e]);
                if (!bias.empty()) {
                    for (int64_t e = 0; e < E; ++e)
                        buffer[size_t(e)] = R(R(s[e]) + R(bias[size_t(e)]));
                    top = select(buffer.data());
                } else {
                    top = select(s);
                }
                R sum = 0;
                for (int64_t j = 0; j < K; ++j) sum += R(s[top[size_t(j)]]);
                for (int64_t j = 0; j < K; ++j)
                    p[size_t(j)] =
                        K > 1 ? R(R(s[top[size_t(j)]]) / R(sum + R(1e-20))) : R(s[top[size_t(j)]]);
            }
            for (int64_t j = 0; j < K; ++j) {
                r.top[size_t(t * K + j)] = top[size_t(j)];
                // What the probs' backward differentiates: the softmax output (post-softmax) or
                // the chosen scores (pre-softmax, sigmoid).
                r.top_values[size_t(t * K + j)] =
                    c.score_function == ScoreFunction::softmax && !c.pre_softmax
                        ? p[size_t(j)]
                        : s[top[size_t(j)]];
                const double scaled = c.topk_scaling_factor > 0
                                          ? R(R(p[size_t(j)]) * R(c.topk_scaling_factor))
                                          : p[size_t(j)];
                gates[size_t(t * E + top[size_t(j)])] = scaled;
                r.map[size_t(t * E + top[size_t(j)])] = 1;
            }
        }
    }

    // The capacity mask of each expert's column: `capacity` tokens by the drop policy.
    std::vector<uint8_t> capacity_mask(const Routing& r, const std::vector<double>& gates,
                                       int64_t capacity) const {
        std::vector<uint8_t> mask(size_t(N * E), 0);
        std::vector<double> column(static_cast<size_t>(N));
        for (int64_t e = 0; e < E; ++e) {
            for (int64_t t = 0; t < N; ++t)
                column[size_t(t)] = c.drop_policy == DropPolicy::probs ? gates[size_t(t * E + e)]
                                                                       : r.map[size_t(t * E + e)];
            for (int32_t t : top_indices(column.data(), N, std::min(capacity, N)))
                mask[size_t(t * E + e)] = 1;
        }
        return mask;
    }

    // sinkhorn(): the balanced assignment sinkhorn routing selects by (no gradient).
    std::vector<double> sinkhorn(const std::vector<double>& logits) const {
        std::vector<R> cost(static_cast<size_t>(N * E)), d0(size_t(N), R(1)), d1(size_t(E), R(1));
        for (size_t i = 0; i < cost.size(); ++i) cost[i] = std::exp(R(logits[i]));
        const R eps = R(1e-8);
        for (R error = R(1e9); error > R(1e-4);) {
            for (int64_t t = 0; t < N; ++t) {
                R sum = 0;
                for (int64_t e = 0; e < E; ++e) sum += d1[size_t(e)] * cost[size_t(t * E + e)];
                d0[size_t(t)] = (R(1) / R(N)) * R(1) / (sum + eps);
            }
            std::vector<R> next(static_cast<size_t>(E));
            for (int64_t e = 0; e < E; ++e) {
                R sum = 0;
                for (int64_t t = 0; t < N; ++t) sum += d0[size_t(t)] * cost[size_t(t * E + e)];
                next[size_t(e)] = (R(1) / R(E)) * R(1) / (sum + eps);
            }
            R diff = 0;
            for (int64_t e = 0; e < E; ++e) diff += std::abs(d1[size_t(e)] - next[size_t(e)]);
            error = diff / R(E);
            d1 = next;
        }
        std::vector<double> out(static_cast<size_t>(N * E));
        for (int64_t t = 0; t < N; ++t)
            for (int64_t e = 0; e < E; ++e)
                out[size_t(t * E + e)] = d1[size_t(e)] * cost[size_t(t * E + e)] * d0[size_t(t)];
        return out;
    }

    // Sinkhorn routing (TopKRouter.sinkhorn_load_balancing): chosen by the balanced assignment
    // in training, by the scores otherwise; probs are the scores (sigmoid for top-1, softmax
    // else) of the chosen experts.
    void route_sinkhorn(const std::vector<double>& logits, bool training, Routing& r) const {
        std::vector<double> balanced = training ? sinkhorn(logits) : std::vector<double>{};
        r.scores.assign(size_t(N * E), 0.0);
        r.top.resize(size_t(N * K));
        for (int64_t t = 0; t < N; ++t) {
            double* s = &r.scores[size_t(t * E)];
            if (K == 1)
                for (int64_t e = 0; e < E; ++e) s[e] = sigmoid(logits[size_t(t * E + e)]);
            else
                softmax(&logits[size_t(t * E)], E, s);
            std::vector<int32_t> top = top_indices(training ? &balanced[size_t(t * E)] : s, E, K);
            for (int64_t j = 0; j < K; ++j) {
                const int32_t e = top[size_t(j)];
                r.top[size_t(t * K + j)] = e;
                r.map[size_t(t * E + e)] = 1;
                r.probs[size_t(t * E + e)] = s[e];
            }
        }
    }

    // compute_routing_scores_for_aux_loss: scores of every expert and the top-k map by them.
    std::vector<uint8_t> loss_scores(const std::vector<double>& logits, Routing& r) const {
        r.loss_scores.assign(size_t(N * E), 0.0);
        std::vector<uint8_t> map(size_t(N * E), 0);
        for (int64_t t = 0; t < N; ++t) {
            double* s = &r.loss_scores[size_t(t * E)];
            if (c.score_function == ScoreFunction::softmax) {
                softmax(&logits[size_t(t * E)], E, s);
            } else {
                R sum = 0;
                for (int64_t e = 0; e < E; ++e) sum += R(s[e] = sigmoid(logits[size_t(t * E + e)]));
                for (int64_t e = 0; e < E; ++e) s[e] = R(R(s[e]) / R(sum + R(1e-20)));
            }
            for (int32_t e : top_indices(s, E, K)) map[size_t(t * E + e)] = 1;
        }
        return map;
    }

    // The load-balancing loss and its weights d loss / d loss_scores.
    void balance_loss(const std::vector<double>& logits, const RoutingShape& shape,
                      Routing& r) const {
        std::vector<uint8_t> map = loss_scores(logits, r);
        r.loss_weights.assign(size_t(N * E), 0.0);
        const double coeff = c.aux_loss_coeff;
        if (c.load_balancing == LoadBalancing::aux_loss) {
            // switch_load_balancing_loss_func: the token counts of every sequence part.
            std::vector<double> counts(size_t(E), 0.0);
            for (int64_t t = 0; t < N; ++t)
                for (int64_t e = 0; e < E; ++e) counts[size_t(e)] += map[size_t(t * E + e)];
            int64_t parts = 1;
            if (shape.sequence_partition && shape.sequence_partition->size() > 1) {
                parallel::all_reduce_values(*shape.sequence_partition, counts, ReduceOp::sum);
                parts = shape.sequence_partition->size();
            }
            const double tokens = double(N * parts);
            const R scale = R(double(E) * coeff / (tokens * tokens * double(K)));
            R sum = 0;
            for (int64_t e = 0; e < E; ++e) {
                R column = 0;
                for (int64_t t = 0; t < N; ++t) column += R(r.loss_scores[size_t(t * E + e)]);
                sum += column * R(counts[size_t(e)]);
                for (int64_t t = 0; t < N; ++t)
                    r.loss_weights[size_t(t * E + e)] = R(R(counts[size_t(e)]) * scale);
            }
            r.aux_loss = double(sum * scale);
        } else {
            // sequence_load_balancing_loss_func over each sequence (a batch column of [s, b]).
            // A sequence split over the partition (sequence or context parallelism): each rank's
            // share of the loss is its tokens' scores times the whole sequence's costs (Megatron
            // gathers the scores and keeps its own counts; the shares sum to the same loss).
            const int64_t S = shape.seq, B = shape.batch;
            std::vector<double> counts(size_t(B * E), 0.0);
            for (int64_t s = 0; s < S; ++s)
                for (int64_t b = 0; b < B; ++b)
                    for (int64_t e = 0; e < E; ++e)
                        counts[size_t(b * E + e)] += map[size_t((s * B + b) * E + e)];
            int64_t whole = S;  // the whole sequence's length
            if (shape.sequence_partition && shape.sequence_partition->size() > 1) {
                parallel::all_reduce_values(*shape.sequence_partition, counts, ReduceOp::sum);
                whole *= shape.sequence_partition->size();
            }
            const R norm = R(double(whole * K) / double(E));
            R loss = 0;
            for (int64_t b = 0; b < B; ++b)
                for (int64_t e = 0; e < E; ++e) {
                    R sum = 0;
                    for (int64_t s = 0; s < S; ++s)
                        sum += R(r.loss_scores[size_t((s * B + b) * E + e)]);
                    const R cost = R(counts[size_t(b * E + e)]) / norm;
                    loss += cost * (sum / R(whole));
                    for (int64_t s = 0; s < S; ++s)
                        r.loss_weights[size_t((s * B + b) * E + e)] =
                            R(cost * R(coeff) / R(double(B * whole)));
                }
            r.aux_loss = double(loss / R(B) * R(coeff));
        }
    }

    // z_loss_func: mean of the squared log-sum-exps, its coefficient over the sequence parts.
    void z_loss(const std::vector<double>& logits, const RoutingShape& shape, Routing& r) const {
        const int parts = shape.sequence_partition ? shape.sequence_partition->size() : 1;
        const double coeff = c.z_loss_coeff / parts;
        r.lse.resize(size_t(N));
        R sum = 0;
        for (int64_t t = 0; t < N; ++t) {
            R m = -std::numeric_limits<R>::infinity(), s = 0;
            for (int64_t e = 0; e < E; ++e) m = std::max(m, R(logits[size_t(t * E + e)]));
            for (int64_t e = 0; e < E; ++e) s += std::exp(R(logits[size_t(t * E + e)]) - m);
            const R lse = m + std::log(s);
            r.lse[size_t(t)] = lse;
            sum += lse * lse;
        }
        r.z_loss = double(sum / R(N) * R(coeff));
        r.z_scale = coeff / double(N);
    }

    Routing route(const std::vector<double>& logits, const RoutingShape& shape,
                  const std::vector<double>& bias, bool training) const {
        Routing r;
        r.tokens = N;
        r.experts = E;
        r.probs.assign(size_t(N * E), 0.0);
        r.map.assign(size_t(N * E), 0);
        if (training && c.z_loss_coeff > 0) z_loss(logits, shape, r);
        if (c.load_balancing == LoadBalancing::sinkhorn) {
            route_sinkhorn(logits, training, r);
        } else {
            std::vector<double> gates(size_t(N * E), 0.0);
            top_k(logits, bias, r, gates);
            if (c.capacity_factor > 0) {
                const int64_t capacity = expert_capacity(N * K, E, c.capacity_factor);
                std::vector<uint8_t> keep = capacity_mask(r, gates, capacity);
                for (size_t i = 0; i < keep.size(); ++i)
                    r.map[i] = c.pad_to_capacity ? keep[i] : uint8_t(r.map[i] & keep[i]);
            }
            for (size_t i = 0; i < gates.size(); ++i) r.probs[i] = r.map[i] ? gates[i] : 0.0;
            const bool balancing = c.load_balancing == LoadBalancing::aux_loss ||
                                   c.load_balancing == LoadBalancing::seq_aux_loss;
            if (training && balancing && c.aux_loss_coeff != 0) balance_loss(logits, shape, r);
        }
        r.tokens_per_expert.assign(size_t(E), 0);
        for (int64_t t = 0; t < N; ++t)
            for (int64_t j = 0; j < K; ++j) ++r.tokens_per_expert[size_t(r.top[size_t(t * K + j)])];
        return r;
    }

    // y ⊙ (dy − Σ y·dy): the softmax's backward over one row.
    static void softmax_backward(const double* y, const double* dy, int64_t n, double* dx) {
        R dot = 0;
        for (int64_t i = 0; i < n; ++i) dot += R(y[i]) * R(dy[i]);
        for (int64_t i = 0; i < n; ++i) dx[i] += R(R(y[i]) * (R(dy[i]) - dot));
    }
    // The backward of s / (Σ s + 1e-20) over one row, added to ds.
    static void normalize_backward(const double* s, const double* dp, int64_t n, double* ds) {
        R sum = 0, dot = 0;
        for (int64_t i = 0; i < n; ++i) sum += R(s[i]);
        sum += R(1e-20);
        for (int64_t i = 0; i < n; ++i) dot += R(dp[i]) * R(s[i]);
        for (int64_t i = 0; i < n; ++i) ds[i] += R(dp[i]) / sum - dot / (sum * sum);
    }

    std::vector<double> backward(const std::vector<double>& logits, const Routing& r,
                                 const std::vector<double>& dprobs, double aux_scale) const {
        std::vector<double> dl(size_t(N * E), 0.0);
        std::vector<double> dtop(static_cast<size_t>(K)), dsel(static_cast<size_t>(K)),
            row(static_cast<size_t>(E));
        for (int64_t t = 0; t < N; ++t) {
            double* d = &dl[size_t(t * E)];
            const double* s = &r.scores[size_t(t * E)];
            if (c.load_balancing == LoadBalancing::sinkhorn) {
                for (int64_t e = 0; e < E; ++e)
                    row[size_t(e)] = r.map[size_t(t * E + e)] ? dprobs[size_t(t * E + e)] : 0.0;
                if (K == 1)
                    for (int64_t e = 0; e < E; ++e)
                        d[e] += R(row[size_t(e)]) * R(s[e]) * (R(1) - R(s[e]));
                else
                    softmax_backward(s, row.data(), E, d);
                continue;
            }
            // d probs of the chosen experts (zero where capacity dropped them), before scaling.
            for (int64_t j = 0; j < K; ++j) {
                const int32_t e = r.top[size_t(t * K + j)];
                const double g = r.map[size_t(t * E + e)] ? dprobs[size_t(t * E + e)] : 0.0;
                dtop[size_t(j)] =
                    c.topk_scaling_factor > 0 ? R(R(g) * R(c.topk_scaling_factor)) : g;
            }
            const double* v = &r.top_values[size_t(t * K)];
            if (c.score_function == ScoreFunction::softmax && !c.pre_softmax) {
                std::fill(dsel.begin(), dsel.end(), 0.0);
                softmax_backward(v, dtop.data(), K, dsel.data());
                for (int64_t j = 0; j < K; ++j) d[r.top[size_t(t * K + j)]] += dsel[size_t(j)];
            } else if (c.score_function == ScoreFunction::softmax) {
                std::fill(row.begin(), row.end(), 0.0);
                for (int64_t j = 0; j < K; ++j)
                    row[size_t(r.top[size_t(t * K + j)])] = dtop[size_t(j)];
                softmax_backward(s, row.data(), E, d);
            } else {
                std::fill(dsel.begin(), dsel.end(), 0.0);
                if (K > 1)
                    normalize_backward(v, dtop.data(), K, dsel.data());
                else
                    dsel[0] = dtop[0];
                for (int64_t j = 0; j < K; ++j) {
                    const int32_t e = r.top[size_t(t * K + j)];
                    d[e] += R(dsel[size_t(j)]) * R(s[e]) * (R(1) - R(s[e]));
                }
            }
        }
        if (!r.loss_weights.empty()) add_balance_loss_backward(logits, r, aux_scale, dl);
        if (!r.lse.empty()) {
            std::vector<double> p(static_cast<size_t>(E));
            for (int64_t t = 0; t < N; ++t) {
                softmax(&logits[size_t(t * E)], E, p.data());
                const R g = R(aux_scale * r.z_scale * 2.0 * r.lse[size_t(t)]);
                for (int64_t e = 0; e < E; ++e) dl[size_t(t * E + e)] += g * R(p[size_t(e)]);
            }
        }
        return dl;
    }

    void add_balance_loss_backward(const std::vector<double>& logits, const Routing& r,
                                   double aux_scale, std::vector<double>& dl) const {
        std::vector<double> w(static_cast<size_t>(E)), sig(static_cast<size_t>(E)),
            ds(static_cast<size_t>(E));
        for (int64_t t = 0; t < N; ++t) {
            for (int64_t e = 0; e < E; ++e)
                w[size_t(e)] = R(R(r.loss_weights[size_t(t * E + e)]) * R(aux_scale));
            double* d = &dl[size_t(t * E)];
            if (c.score_function == ScoreFunction::softmax) {
                softmax_backward(&r.loss_scores[size_t(t * E)], w.data(), E, d);
                continue;
            }
            for (int64_t e = 0; e < E; ++e) sig[size_t(e)] = sigmoid(logits[size_t(t * E + e)]);
            std::fill(ds.begin(), ds.end(), 0.0);
            normalize_backward(sig.data(), w.data(), E, ds.data());
            for (int64_t e = 0; e < E; ++e)
                d[e] += R(ds[size_t(e)]) * R(sig[size_t(e)]) * (R(1) - R(sig[size_t(e)]));
        }
    }
};

void check_config(const RouterConfig& c, const std::vector<double>& logits, int64_t tokens) {
    MT_CHECK(c.num_experts > 0 && c.topk > 0 && c.topk <= c.num_experts, "--moe-router-topk (",
             c.topk, ") must be in [1, --num-experts (", c.num_experts, ")]");
    MT_CHECK(int64_t(logits.size()) == tokens * c.num_experts, "router logits: ", logits.size(),
             " values for ", tokens, " tokens x ", c.num_experts, " experts");
    if (c.group_topk > 0)
        MT_CHECK(c.num_groups > 0 && c.num_experts % c.num_groups == 0 &&
                     c.group_topk <= c.num_groups && c.topk % c.group_topk == 0,
                 "--moe-router-group-topk (", c.group_topk, ") needs --moe-router-num-groups (",
                 c.num_groups, ") dividing --num-experts (", c.num_experts,
                 ") and dividing --moe-router-topk (", c.topk, ")");
}

}  // namespace

Routing route(const RouterConfig& config, const std::vector<double>& logits,
              const RoutingShape& shape, const std::vector<double>& expert_bias, bool training,
              bool f64, const std::vector<double>& uniforms) {
    const int64_t N = shape.seq * shape.batch;
    check_config(config, logits, N);
    if (config.gshard.enabled) return gshard_route(config, logits, uniforms, training, f64);
    if (f64)
        return Router<double>{config, N, config.num_experts, config.topk}.route(
            logits, shape, expert_bias, training);
    return Router<float>{config, N, config.num_experts, config.topk}.route(logits, shape,
                                                                           expert_bias, training);
}

std::vector<double> route_backward(const RouterConfig& config, const std::vector<double>& logits,
                                   const Routing& r, const std::vector<double>& dprobs,
                                   double aux_scale, bool f64) {
    MT_CHECK(dprobs.size() == r.probs.size(), "router backward: ", dprobs.size(), " gradients for ",
             r.probs.size(), " probabilities");
    if (config.gshard.enabled) return gshard_route_backward(config, r, dprobs, aux_scale);
    if (f64)
        return Router<double>{config, r.tokens, r.experts, config.topk}.backward(logits, r, dprobs,
                                                                                 aux_scale);
    return Router<float>{config, r.tokens, r.experts, config.topk}.backward(logits, r, dprobs,
                                                                            aux_scale);
}

int64_t expert_capacity(int64_t tokens, int64_t experts, double factor) {
    return int64_t(std::ceil(double(tokens) / double(experts) * factor));
}

}  // namespace mt::nn
