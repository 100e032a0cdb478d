// CPU selective scan of Mamba-2 (f32 and f64): the entry points. A sequence (training, prefill)
// runs in chunks on GEMMs (ssm_scan_chunked.cpp); one position (decoding) runs the recurrent step
// here: one OpenMP task per (row, head), the hp x N state in cache and the N loops innermost, their
// sums in 16 interleaved lanes so that they vectorise; f32 runs a build of the step for AVX-512 or
// AVX2 where the CPU has it (cpu_features, MT_CPU_ISA).
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "cpu_backend.h"
#include "cpu_features.h"
#include "mt/kernels/activations.h"
#include "op_support.h"
#include "ssm_scan.h"

namespace mt::cpu {

using detail::check_float;
using detail::check_float_shape;
using detail::in_t;
using detail::out_t;
using detail::with_float;

namespace {

using ssm::dot;
using ssm::ScanShape;
using ssm::softplus;

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
MT_INLINE void step_state(T* S, const T* x, const T* B, T dA, T dt, int64_t hp, int64_t N) {
    for (int64_t p = 0; p < hp; ++p) {
        const T u = dt * x[p];
        T* row = S + p * N;
        for (int64_t n = 0; n < N; ++n) row[n] = dA * row[n] + u * B[n];
    }
}

// What one (row, head) task reads and writes beyond its views: the head's dt bias, a = -exp(A_log)
// and D, and where its output starts.
template <class T>
struct HeadTask {
    HeadView<T> v;
    T bias, a, d;
    T* y;
};

// The recurrence of one task from the state S (read and left after the last position).
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

// The f32 recurrence built for an instruction set, and the build this CPU runs.
#define MT_SCAN_BUILD(name, attributes)                                                         \
    attributes void recurrence_##name(const ScanShape& s, const HeadTask<float>& h, float* S) { \
        scan_head(s, h, S);                                                                     \
    }
MT_SCAN_BUILD(avx512, __attribute__((target("avx512f,avx512vl,fma"))))
MT_SCAN_BUILD(avx2, __attribute__((target("avx2,fma"))))
MT_SCAN_BUILD(portable, )
#undef MT_SCAN_BUILD

using FloatRecurrence = void (*)(const ScanShape&, const HeadTask<float>&, float*);

FloatRecurrence float_recurrence() {
    static const FloatRecurrence k = cpu_features().avx512f ? recurrence_avx512
                                     : cpu_features().avx2  ? recurrence_avx2
                                                            : recurrence_portable;
    return k;
}

template <class T>
void recurrence(const ScanShape& s, const HeadTask<T>& h, T* S) {
    if constexpr (std::is_same_v<T, float>)
        float_recurrence()(s, h, S);
    else
        scan_head(s, h, S);
}

// Decoding's step(s) over the state (B, nh, hp, N).
template <class T>
void recurrent_forward(const ScanShape& s, const ssm::ScanInputs<T>& in, T* y, T* states) {
#pragma omp parallel for schedule(static)
    for (int64_t bh = 0; bh < s.B * s.nh; ++bh) {
        const int64_t b = bh / s.nh, h = bh % s.nh;
        const HeadTask<T> task{head_view(s, in.x, in.dt, in.B, in.C, b, h), in.dt_bias[h],
                               -std::exp(in.A_log[h]), in.D[h], y + (b * s.T * s.nh + h) * s.hp};
        recurrence(s, task, states + bh * s.hp * s.N);
    }
}

template <class T>
ssm::ScanInputs<T> scan_inputs(const Tensor& x, const Tensor& dt, const Tensor& dt_bias,
                               const Tensor& A_log, const Tensor& B, const Tensor& C,
                               const Tensor& D) {
    return {in_t<T>(x),       in_t<T>(dt),    in_t<T>(B), in_t<T>(C),
            in_t<T>(dt_bias), in_t<T>(A_log), in_t<T>(D)};
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
        const ssm::ScanInputs<T> in = scan_inputs<T>(x, dt, dt_bias, A_log, B, C, D);
        T* states = state.defined() ? out_t<T>(state) : nullptr;
        // One position is decoding's step: a chunk of one would be GEMMs of one row.
        if (s.T == 1 && states)
            recurrent_forward(s, in, out_t<T>(y), states);
        else
            ssm::chunked_scan_forward(s, in, out_t<T>(y), states);
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
        ssm::chunked_scan_backward(
            s, scan_inputs<T>(x, dt, dt_bias, A_log, B, C, D), in_t<T>(dy),
            ssm::ScanGrads<T>{out_t<T>(dx), out_t<T>(ddt), out_t<T>(dB), out_t<T>(dC),
                              out_t<T>(ddt_bias), out_t<T>(dA_log), out_t<T>(dD)});
    });
}

}  // namespace mt::cpu
