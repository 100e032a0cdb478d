// CPU selective scan of Mamba-2 (f32 and f64), in its recurrent form: one OpenMP task per (row,
// head), the hp x N state in registers' reach and the N loop innermost (it vectorises). The
// backward recomputes the states chunk by chunk from checkpoints kept every kChunk positions, so
// it needs O((T / kChunk + kChunk) hp N) memory per task, not O(T hp N). Group gradients (dB, dC)
// and parameter gradients are summed over heads and rows in a fixed order: the result does not
// depend on the thread count.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu_backend.h"
#include "op_support.h"

namespace mt::cpu {

using detail::check_float;
using detail::check_float_shape;
using detail::in_t;
using detail::out_t;
using detail::with_float;

namespace {

constexpr int64_t kChunk = 64;

// Softplus as torch and Mamba's kernels compute it: the identity above 20.
template <class T>
T softplus(T v) {
    return v > T(20) ? v : std::log1p(std::exp(v));
}
template <class T>
T sigmoid(T v) {
    return T(1) / (T(1) + std::exp(-v));
}

struct ScanShape {
    int64_t B, T, nh, hp, ng, N;
};

ScanShape scan_shape(const char* op, const Tensor& x, const Tensor& dt, const Tensor& dt_bias,
                     const Tensor& A_log, const Tensor& B, const Tensor& C, const Tensor& D) {
    check_float(op, "x", x);
    MT_CHECK(x.dim() == 4, op, ": x must be (B, T, heads, head_dim), got ", x.describe());
    MT_CHECK(B.dim() == 4 && B.size(0) == x.size(0) && B.size(1) == x.size(1) && B.size(2) >= 1 &&
                 x.size(2) % B.size(2) == 0,
             op, ": B must be (B, T, groups, N) with groups dividing the ", x.size(2),
             " heads, got ", B.describe());
    const ScanShape s{x.size(0), x.size(1), x.size(2), x.size(3), B.size(2), B.size(3)};
    check_float_shape(op, "dt", dt, {s.B, s.T, s.nh}, x.dtype());
    check_float_shape(op, "B", B, {s.B, s.T, s.ng, s.N}, x.dtype());
    check_float_shape(op, "C", C, {s.B, s.T, s.ng, s.N}, x.dtype());
    check_float_shape(op, "dt_bias", dt_bias, {s.nh}, x.dtype());
    check_float_shape(op, "A_log", A_log, {s.nh}, x.dtype());
    check_float_shape(op, "D", D, {s.nh}, x.dtype());
    return s;
}

// The strided views one (row, head) task reads: element t of a (B, T, n, m) tensor at
// base + t * n * m.
template <class T>
struct HeadView {
    const T *x, *dt, *B, *C;
    int64_t x_step, dt_step, bc_step;  // per position
};

template <class T>
HeadView<T> head_view(const ScanShape& s, const T* x, const T* dt, const T* B, const T* C,
                      int64_t b, int64_t h) {
    const int64_t g = h / (s.nh / s.ng);
    return {x + (b * s.T * s.nh + h) * s.hp,
            dt + b * s.T * s.nh + h,
            B + (b * s.T * s.ng + g) * s.N,
            C + (b * s.T * s.ng + g) * s.N,
            s.nh * s.hp,
            s.nh,
            s.ng * s.N};
}

// One step of the recurrence on S (hp x N): S = dA S + dt x B^T.
template <class T>
void step_state(T* S, const T* x, const T* B, T dA, T dt, int64_t hp, int64_t N) {
    for (int64_t p = 0; p < hp; ++p) {
        const T u = dt * x[p];
        T* row = S + p * N;
        for (int64_t n = 0; n < N; ++n) row[n] = dA * row[n] + u * B[n];
    }
}

}  // namespace

void CpuBackend::ssm_scan_forward(const Tensor& x, const Tensor& dt, const Tensor& dt_bias,
                                  const Tensor& A_log, const Tensor& B, const Tensor& C,
                                  const Tensor& D, Tensor& y, Tensor& state) {
    const char* op = "ssm_scan_forward";
    const ScanShape s = scan_shape(op, x, dt, dt_bias, A_log, B, C, D);
    check_float_shape(op, "y", y, x.shape(), x.dtype());
    if (state.defined()) check_float_shape(op, "state", state, {s.B, s.nh, s.hp, s.N}, x.dtype());
    with_float(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T *bias = in_t<T>(dt_bias), *alog = in_t<T>(A_log), *d = in_t<T>(D);
        T* yp = out_t<T>(y);
        T* states = state.defined() ? out_t<T>(state) : nullptr;
#pragma omp parallel
        {
            std::vector<T> local(size_t(s.hp * s.N));
#pragma omp for schedule(static)
            for (int64_t bh = 0; bh < s.B * s.nh; ++bh) {
                const int64_t b = bh / s.nh, h = bh % s.nh;
                const HeadView<T> v =
                    head_view(s, in_t<T>(x), in_t<T>(dt), in_t<T>(B), in_t<T>(C), b, h);
                T* S = states ? states + bh * s.hp * s.N : local.data();
                if (!states) std::fill(local.begin(), local.end(), T(0));
                const T a = -std::exp(alog[h]);
                for (int64_t t = 0; t < s.T; ++t) {
                    const T* xt = v.x + t * v.x_step;
                    const T* Bt = v.B + t * v.bc_step;
                    const T* Ct = v.C + t * v.bc_step;
                    const T dtv = softplus(v.dt[t * v.dt_step] + bias[h]);
                    step_state(S, xt, Bt, std::exp(dtv * a), dtv, s.hp, s.N);
                    T* yt = yp + (b * s.T * s.nh + h) * s.hp + t * v.x_step;
                    for (int64_t p = 0; p < s.hp; ++p) {
                        const T* row = S + p * s.N;
                        T acc = 0;
                        for (int64_t n = 0; n < s.N; ++n) acc += row[n] * Ct[n];
                        yt[p] = acc + d[h] * xt[p];
                    }
                }
            }
        }
    });
}

void CpuBackend::ssm_scan_backward(const Tensor& x, const Tensor& dt, const Tensor& dt_bias,
                                   const Tensor& A_log, const Tensor& B, const Tensor& C,
                                   const Tensor& D, const Tensor& dy, Tensor& dx, Tensor& ddt,
                                   Tensor& dB, Tensor& dC, Tensor& ddt_bias, Tensor& dA_log,
                                   Tensor& dD) {
    const char* op = "ssm_scan_backward";
    const ScanShape s = scan_shape(op, x, dt, dt_bias, A_log, B, C, D);
    check_float_shape(op, "dy", dy, x.shape(), x.dtype());
    check_float_shape(op, "dx", dx, x.shape(), x.dtype());
    check_float_shape(op, "ddt", ddt, dt.shape(), x.dtype());
    check_float_shape(op, "dB", dB, B.shape(), x.dtype());
    check_float_shape(op, "dC", dC, C.shape(), x.dtype());
    check_float_shape(op, "ddt_bias", ddt_bias, {s.nh}, x.dtype());
    check_float_shape(op, "dA_log", dA_log, {s.nh}, x.dtype());
    check_float_shape(op, "dD", dD, {s.nh}, x.dtype());
    with_float(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T *bias = in_t<T>(dt_bias), *alog = in_t<T>(A_log), *d = in_t<T>(D);
        const int64_t HN = s.hp * s.N, chunks = (s.T + kChunk - 1) / kChunk;
        // Per (row, head): its part of dB and dC (B, T, nh, N), and of the three parameter grads.
        std::vector<T> head_dB(size_t(s.B * s.T * s.nh * s.N)), head_dC(head_dB.size());
        std::vector<double> head_params(size_t(s.B * s.nh * 3));
#pragma omp parallel
        {
            std::vector<T> checkpoints(static_cast<size_t>(chunks * HN));
            std::vector<T> states(static_cast<size_t>((kChunk + 1) * HN));
            std::vector<T> G(static_cast<size_t>(HN));
#pragma omp for schedule(static)
            for (int64_t bh = 0; bh < s.B * s.nh; ++bh) {
                const int64_t b = bh / s.nh, h = bh % s.nh;
                const HeadView<T> v =
                    head_view(s, in_t<T>(x), in_t<T>(dt), in_t<T>(B), in_t<T>(C), b, h);
                const T a = -std::exp(alog[h]);
                auto dt_at = [&](int64_t t) { return softplus(v.dt[t * v.dt_step] + bias[h]); };
                // The state before each chunk.
                std::fill(states.begin(), states.begin() + HN, T(0));
                for (int64_t c = 0; c < chunks; ++c) {
                    std::copy(states.begin(), states.begin() + HN, checkpoints.begin() + c * HN);
                    for (int64_t t = c * kChunk; t < std::min(s.T, (c + 1) * kChunk); ++t) {
                        const T dtv = dt_at(t);
                        step_state(states.data(), v.x + t * v.x_step, v.B + t * v.bc_step,
                                   std::exp(dtv * a), dtv, s.hp, s.N);
                    }
                }
                std::fill(G.begin(), G.end(), T(0));
                double g_bias = 0, g_alog = 0, g_d = 0;
                const size_t yoff = size_t((b * s.T * s.nh + h) * s.hp);
                for (int64_t c = chunks - 1; c >= 0; --c) {
                    const int64_t t0 = c * kChunk, t1 = std::min(s.T, t0 + kChunk);
                    // states[i]: the state after position t0 + i - 1 (states[0]: before t0).
                    std::copy(checkpoints.begin() + c * HN, checkpoints.begin() + (c + 1) * HN,
                              states.begin());
                    for (int64_t t = t0; t < t1; ++t) {
                        T* next = states.data() + (t - t0 + 1) * HN;
                        std::copy(next - HN, next, next);
                        const T dtv = dt_at(t);
                        step_state(next, v.x + t * v.x_step, v.B + t * v.bc_step, std::exp(dtv * a),
                                   dtv, s.hp, s.N);
                    }
                    for (int64_t t = t1 - 1; t >= t0; --t) {
                        const T* xt = v.x + t * v.x_step;
                        const T* Bt = v.B + t * v.bc_step;
                        const T* Ct = v.C + t * v.bc_step;
                        const T* gy = in_t<T>(dy) + yoff + t * v.x_step;
                        T* gx = out_t<T>(dx) + yoff + t * v.x_step;
                        const T* S = states.data() + (t - t0 + 1) * HN;
                        const T* S_prev = S - HN;
                        const T r = v.dt[t * v.dt_step] + bias[h];
                        const T dtv = softplus(r), dA = std::exp(dtv * a);
                        T* gB = head_dB.data() + ((b * s.T + t) * s.nh + h) * s.N;
                        T* gC = head_dC.data() + ((b * s.T + t) * s.nh + h) * s.N;
                        std::fill(gB, gB + s.N, T(0));
                        std::fill(gC, gC + s.N, T(0));
                        // G = dL/dS_t: what later positions sent back, plus y_t's own.
                        T g_dA = 0, g_dt = 0;
                        for (int64_t p = 0; p < s.hp; ++p) {
                            T* Grow = G.data() + p * s.N;
                            const T* Srow = S + p * s.N;
                            const T* Sprev = S_prev + p * s.N;
                            const T gyp = gy[p];
                            T gb = 0, gda = 0;
                            for (int64_t n = 0; n < s.N; ++n) {
                                gC[n] += gyp * Srow[n];
                                Grow[n] += gyp * Ct[n];
                                gb += Grow[n] * Bt[n];
                                gda += Grow[n] * Sprev[n];
                            }
                            g_dA += gda;
                            g_dt += xt[p] * gb;
                            g_d += double(gyp) * xt[p];
                            gx[p] = d[h] * gyp + dtv * gb;
                        }
                        for (int64_t p = 0; p < s.hp; ++p) {
                            const T* Grow = G.data() + p * s.N;
                            const T u = dtv * xt[p];
                            for (int64_t n = 0; n < s.N; ++n) gB[n] += u * Grow[n];
                        }
                        // dA = exp(dt a): dt and a each get its share.
                        g_dt += g_dA * dA * a;
                        g_alog += double(g_dA * dA * dtv) * a;
                        const T g_r = r > T(20) ? g_dt : g_dt * sigmoid(r);
                        out_t<T>(ddt)[(b * s.T + t) * s.nh + h] = g_r;
                        g_bias += g_r;
                        for (T& gv : G) gv *= dA;  // to dL/dS_{t-1}
                    }
                }
                head_params[size_t(bh * 3)] = g_bias;
                head_params[size_t(bh * 3 + 1)] = g_alog;
                head_params[size_t(bh * 3 + 2)] = g_d;
            }
        }
        // Sum the heads of each group, then the rows for the parameters, in a fixed order.
        const int64_t per_group = s.nh / s.ng;
        T *gB = out_t<T>(dB), *gC = out_t<T>(dC);
        for (int64_t btg = 0; btg < s.B * s.T * s.ng; ++btg) {
            const int64_t bt = btg / s.ng, g = btg % s.ng;
            T* ob = gB + btg * s.N;
            T* oc = gC + btg * s.N;
            std::fill(ob, ob + s.N, T(0));
            std::fill(oc, oc + s.N, T(0));
            for (int64_t j = 0; j < per_group; ++j) {
                const size_t off = size_t((bt * s.nh + g * per_group + j) * s.N);
                for (int64_t n = 0; n < s.N; ++n) {
                    ob[n] += head_dB[off + size_t(n)];
                    oc[n] += head_dC[off + size_t(n)];
                }
            }
        }
        T *g_bias = out_t<T>(ddt_bias), *g_alog = out_t<T>(dA_log), *g_d = out_t<T>(dD);
        for (int64_t h = 0; h < s.nh; ++h) {
            double sb = 0, sa = 0, sd = 0;
            for (int64_t b = 0; b < s.B; ++b) {
                sb += head_params[size_t((b * s.nh + h) * 3)];
                sa += head_params[size_t((b * s.nh + h) * 3 + 1)];
                sd += head_params[size_t((b * s.nh + h) * 3 + 2)];
            }
            g_bias[h] += T(sb);
            g_alog[h] += T(sa);
            g_d[h] += T(sd);
        }
    });
}

}  // namespace mt::cpu
