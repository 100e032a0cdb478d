// CPU selective scan of Mamba-2 (f32 and f64), in its recurrent form: one OpenMP task per (row,
// head), the hp x N state in cache and the N loops innermost, their sums in 16 interleaved lanes
// so that they vectorise; f32 runs a build of the per-head kernels for AVX-512 or AVX2 where the
// CPU has it (cpu_features, MT_CPU_ISA). The backward recomputes the states chunk by chunk from
// checkpoints kept every kChunk positions, so it needs O((T / kChunk + kChunk) hp N) memory per
// task, not O(T hp N). Group gradients (dB, dC) and parameter gradients are summed over heads and
// rows in a fixed order: the result does not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "cpu_backend.h"
#include "cpu_features.h"
#include "mt/kernels/activations.h"
#include "op_support.h"

namespace mt::cpu {

using detail::check_float;
using detail::check_float_shape;
using detail::in_t;
using detail::out_t;
using detail::with_float;

namespace {

// 17 states of a 64 x 128 head (a Mamba-2 130M one) fit a core's L2 cache; 65 did not (10%
// slower training of that model).
constexpr int64_t kChunk = 16;
constexpr int kLanes = 16;

#define MT_INLINE inline __attribute__((always_inline))

// Softplus as torch and Mamba's kernels compute it: the identity above 20.
template <class T>
T softplus(T v) {
    return v > T(20) ? v : std::log1p(std::exp(v));
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

// Σ a[n] b[n] in kLanes interleaved partial sums merged pairwise: detail::fold_lanes' scheme,
// written out and always inlined so that each instruction-set build vectorises it (a shared
// template instance would be compiled once, for the baseline); the same order on every build.
template <class T>
MT_INLINE T dot(const T* a, const T* b, int64_t n) {
    T lane[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int l = 0; l < kLanes; ++l) lane[l] += a[i + l] * b[i + l];
    for (int l = 0; i < n; ++i, ++l) lane[l] += a[i] * b[i];
    for (int w = kLanes / 2; w > 0; w /= 2)
        for (int l = 0; l < w; ++l) lane[l] += lane[l + w];
    return lane[0];
}

// One step of the recurrence on S (hp x N): S = dA S + dt x B^T.
template <class T>
MT_INLINE void step_state(T* S, const T* x, const T* B, T dA, T dt, int64_t hp, int64_t N) {
    for (int64_t p = 0; p < hp; ++p) {
        const T u = dt * x[p];
        T* row = S + p * N;
        for (int64_t n = 0; n < N; ++n) row[n] = dA * row[n] + u * B[n];
    }
}

// What one (row, head) task reads and writes beyond its views: the head's dt bias, a = -exp(A_log)
// and D, and where its outputs start ((B, T, nh, ...) tensors at the row and head).
template <class T>
struct HeadTask {
    HeadView<T> v;
    T bias, a, d;
    T* y;  // forward: the output; backward: dx
};

// The forward of one task from the state S (read and left after the last position).
template <class T>
MT_INLINE void scan_head(const ScanShape& s, const HeadTask<T>& h, T* S) {
    const HeadView<T>& v = h.v;
    for (int64_t t = 0; t < s.T; ++t) {
        const T* xt = v.x + t * v.x_step;
        const T dtv = softplus(v.dt[t * v.dt_step] + h.bias);
        step_state(S, xt, v.B + t * v.bc_step, std::exp(dtv * h.a), dtv, s.hp, s.N);
        const T* Ct = v.C + t * v.bc_step;
        T* yt = h.y + t * v.x_step;
        for (int64_t p = 0; p < s.hp; ++p) yt[p] = dot(S + p * s.N, Ct, s.N) + h.d * xt[p];
    }
}

// The backward's buffers of one thread: the chunk checkpoints, a chunk's states, and G.
template <class T>
struct BackwardBuffers {
    std::vector<T> checkpoints, states, G;
    BackwardBuffers(const ScanShape& s, int64_t chunks)
        : checkpoints(size_t(chunks * s.hp * s.N)),
          states(size_t((kChunk + 1) * s.hp * s.N)),
          G(size_t(s.hp * s.N)) {}
};

// The backward of one task: dx into h.y, ddt into gdt (stride nh), its parts of dB and dC into gB
// and gC (stride nh N), and its dt_bias, A_log and D grads into params[0..2].
template <class T>
MT_INLINE void scan_head_backward(const ScanShape& s, const HeadTask<T>& h, const T* gy, T* gdt,
                                  T* gB, T* gC, double* params, BackwardBuffers<T>& buf) {
    const HeadView<T>& v = h.v;
    const int64_t HN = s.hp * s.N, chunks = (s.T + kChunk - 1) / kChunk;
    T* states = buf.states.data();
    T* G = buf.G.data();
    auto dt_at = [&](int64_t t) { return softplus(v.dt[t * v.dt_step] + h.bias); };
    // The state before each chunk.
    std::fill(states, states + HN, T(0));
    for (int64_t c = 0; c < chunks; ++c) {
        std::copy(states, states + HN, buf.checkpoints.begin() + c * HN);
        for (int64_t t = c * kChunk; t < std::min(s.T, (c + 1) * kChunk); ++t) {
            const T dtv = dt_at(t);
            step_state(states, v.x + t * v.x_step, v.B + t * v.bc_step, std::exp(dtv * h.a), dtv,
                       s.hp, s.N);
        }
    }
    std::fill(G, G + HN, T(0));
    double g_bias = 0, g_alog = 0, g_d = 0;
    for (int64_t c = chunks - 1; c >= 0; --c) {
        const int64_t t0 = c * kChunk, t1 = std::min(s.T, t0 + kChunk);
        // states[i]: the state after position t0 + i - 1 (states[0]: before t0).
        std::copy(buf.checkpoints.begin() + c * HN, buf.checkpoints.begin() + (c + 1) * HN, states);
        for (int64_t t = t0; t < t1; ++t) {
            T* next = states + (t - t0 + 1) * HN;
            std::copy(next - HN, next, next);
            const T dtv = dt_at(t);
            step_state(next, v.x + t * v.x_step, v.B + t * v.bc_step, std::exp(dtv * h.a), dtv,
                       s.hp, s.N);
        }
        for (int64_t t = t1 - 1; t >= t0; --t) {
            const T* xt = v.x + t * v.x_step;
            const T* Bt = v.B + t * v.bc_step;
            const T* Ct = v.C + t * v.bc_step;
            const T* gyt = gy + t * v.x_step;
            T* gx = h.y + t * v.x_step;
            const T* S = states + (t - t0 + 1) * HN;
            const T* S_prev = S - HN;
            const T r = v.dt[t * v.dt_step] + h.bias;
            const T dtv = softplus(r), dA = std::exp(dtv * h.a);
            T* gBt = gB + t * s.nh * s.N;
            T* gCt = gC + t * s.nh * s.N;
            std::fill(gBt, gBt + s.N, T(0));
            std::fill(gCt, gCt + s.N, T(0));
            // G = dL/dS_t: what later positions sent back, plus y_t's own.
            T g_dA = 0, g_dt = 0;
            for (int64_t p = 0; p < s.hp; ++p) {
                T* Grow = G + p * s.N;
                const T* Srow = S + p * s.N;
                const T gyp = gyt[p];
                for (int64_t n = 0; n < s.N; ++n) {
                    gCt[n] += gyp * Srow[n];
                    Grow[n] += gyp * Ct[n];
                }
                const T gb = dot(Grow, Bt, s.N);
                g_dA += dot(Grow, S_prev + p * s.N, s.N);
                g_dt += xt[p] * gb;
                g_d += double(gyp) * xt[p];
                gx[p] = h.d * gyp + dtv * gb;
                const T u = dtv * xt[p];
                for (int64_t n = 0; n < s.N; ++n) gBt[n] += u * Grow[n];
            }
            // dA = exp(dt a): dt and a each get its share.
            g_dt += g_dA * dA * h.a;
            g_alog += double(g_dA * dA * dtv) * h.a;
            const T g_r = r > T(20) ? g_dt : g_dt * k::Silu::sigmoid(r);
            gdt[t * s.nh] = g_r;
            g_bias += g_r;
            for (int64_t i = 0; i < HN; ++i) G[i] *= dA;  // to dL/dS_{t-1}
        }
    }
    params[0] = g_bias;
    params[1] = g_alog;
    params[2] = g_d;
}

// The f32 kernels built for an instruction set, and the build this CPU runs.
struct FloatKernels {
    void (*forward)(const ScanShape&, const HeadTask<float>&, float*);
    void (*backward)(const ScanShape&, const HeadTask<float>&, const float*, float*, float*, float*,
                     double*, BackwardBuffers<float>&);
};

#define MT_SCAN_BUILD(name, attributes)                                                            \
    attributes void forward_##name(const ScanShape& s, const HeadTask<float>& h, float* S) {       \
        scan_head(s, h, S);                                                                        \
    }                                                                                              \
    attributes void backward_##name(const ScanShape& s, const HeadTask<float>& h, const float* gy, \
                                    float* gdt, float* gB, float* gC, double* params,              \
                                    BackwardBuffers<float>& buf) {                                 \
        scan_head_backward(s, h, gy, gdt, gB, gC, params, buf);                                    \
    }
MT_SCAN_BUILD(avx512, __attribute__((target("avx512f,avx512vl,fma"))))
MT_SCAN_BUILD(avx2, __attribute__((target("avx2,fma"))))
MT_SCAN_BUILD(portable, )
#undef MT_SCAN_BUILD

const FloatKernels& float_kernels() {
    static const FloatKernels k =
        cpu_features().avx512f ? FloatKernels{forward_avx512, backward_avx512}
        : cpu_features().avx2  ? FloatKernels{forward_avx2, backward_avx2}
                               : FloatKernels{forward_portable, backward_portable};
    return k;
}

template <class T>
void forward_head(const ScanShape& s, const HeadTask<T>& h, T* S) {
    if constexpr (std::is_same_v<T, float>)
        float_kernels().forward(s, h, S);
    else
        scan_head(s, h, S);
}

template <class T>
void backward_head(const ScanShape& s, const HeadTask<T>& h, const T* gy, T* gdt, T* gB, T* gC,
                   double* params, BackwardBuffers<T>& buf) {
    if constexpr (std::is_same_v<T, float>)
        float_kernels().backward(s, h, gy, gdt, gB, gC, params, buf);
    else
        scan_head_backward(s, h, gy, gdt, gB, gC, params, buf);
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
        T* states = state.defined() ? out_t<T>(state) : nullptr;
#pragma omp parallel
        {
            std::vector<T> local(size_t(s.hp * s.N));
#pragma omp for schedule(static)
            for (int64_t bh = 0; bh < s.B * s.nh; ++bh) {
                const int64_t b = bh / s.nh, h = bh % s.nh;
                const HeadTask<T> task{
                    head_view(s, in_t<T>(x), in_t<T>(dt), in_t<T>(B), in_t<T>(C), b, h), bias[h],
                    -std::exp(alog[h]), d[h], out_t<T>(y) + (b * s.T * s.nh + h) * s.hp};
                T* S = states ? states + bh * s.hp * s.N : local.data();
                if (!states) std::fill(local.begin(), local.end(), T(0));
                forward_head(s, task, S);
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
        const int64_t chunks = (s.T + kChunk - 1) / kChunk;
        // Per (row, head): its part of dB and dC (B, T, nh, N), and of the three parameter grads.
        std::vector<T> head_dB(size_t(s.B * s.T * s.nh * s.N)), head_dC(head_dB.size());
        std::vector<double> head_params(size_t(s.B * s.nh * 3));
#pragma omp parallel
        {
            BackwardBuffers<T> buf(s, chunks);
#pragma omp for schedule(static)
            for (int64_t bh = 0; bh < s.B * s.nh; ++bh) {
                const int64_t b = bh / s.nh, h = bh % s.nh;
                const size_t head = size_t((b * s.T * s.nh + h) * s.hp);
                const HeadTask<T> task{
                    head_view(s, in_t<T>(x), in_t<T>(dt), in_t<T>(B), in_t<T>(C), b, h), bias[h],
                    -std::exp(alog[h]), d[h], out_t<T>(dx) + head};
                const size_t part = size_t((b * s.T * s.nh + h) * s.N);
                backward_head(s, task, in_t<T>(dy) + head, out_t<T>(ddt) + b * s.T * s.nh + h,
                              head_dB.data() + part, head_dC.data() + part,
                              head_params.data() + bh * 3, buf);
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
