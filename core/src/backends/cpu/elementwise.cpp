// CPU traversal of the elementwise kernels: one instantiation per UnaryOp value and element
// type (f32, f64), picked by a switch; the activation math is in mt/kernels/activations.h.
#include "cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "half_as_float.h"
#include "mt/kernels/activations.h"
#include "op_support.h"
#include "vector_exp.h"

namespace mt::cpu {

using detail::check_float;
using detail::check_float_or_bf16;
using detail::check_float_or_bf16_shape;
using detail::check_float_shape;
using detail::in_t;
using detail::kParallelMin;
using detail::out_t;
using detail::with_float;
using detail::with_float_or_bf16;

namespace {

template <class Op, class S>
void unary_forward_loop(Op op, const S* x, S* y, int64_t n) {
    using E = detail::Element<S>;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
    for (int64_t i = 0; i < n; ++i) y[i] = E::store(op.fwd(E::load(x[i])));
}

template <class Op, class S>
void unary_backward_loop(Op op, const S* x, const S* dy, S* dx, int64_t n) {
    using E = detail::Element<S>;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
    for (int64_t i = 0; i < n; ++i) dx[i] = E::store(op.bwd(E::load(x[i]), E::load(dy[i])));
}

// Activations with one exp per element (GeLU's tanh form, SiLU) over f32 and bf16, computed in
// f32: the exps from the vectorised exp a block at a time instead of one libm call per element
// (the rest is the functor's own arithmetic, fwd_given / bwd_given).
template <class Op>
concept ExpActivation = requires(float x) {
    Op::exp_arg(x);
};

constexpr int64_t kExpBlock = 512;

template <class Op, class S, class Finish>
void exp_blocks(const S* x, int64_t n, Finish finish) {
    using E = detail::Element<S>;
    const int64_t blocks = (n + kExpBlock - 1) / kExpBlock;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
    for (int64_t b = 0; b < blocks; ++b) {
        float e[kExpBlock];
        const int64_t first = b * kExpBlock, count = std::min(kExpBlock, n - first);
        exps_of(count, e, [&](int64_t i) { return Op::exp_arg(E::load(x[first + i])); });
        finish(first, count, static_cast<const float*>(e));
    }
}

template <ExpActivation Op, class S>
requires(!std::is_same_v<S, double>) void unary_forward_loop(Op, const S* x, S* y, int64_t n) {
    using E = detail::Element<S>;
    exp_blocks<Op>(x, n, [&](int64_t first, int64_t count, const float* e) {
        detail::store_values(y + first, count,
                             [&](int64_t i) { return Op::fwd_given(E::load(x[first + i]), e[i]); });
    });
}

template <ExpActivation Op, class S>
requires(!std::is_same_v<S, double>) void unary_backward_loop(Op, const S* x, const S* dy, S* dx,
                                                              int64_t n) {
    using E = detail::Element<S>;
    exp_blocks<Op>(x, n, [&](int64_t first, int64_t count, const float* e) {
        detail::store_values(dx + first, count, [&](int64_t i) {
            return Op::bwd_given(E::load(x[first + i]), E::load(dy[first + i]), e[i]);
        });
    });
}

// Calls fn with the functor of op.
template <class Fn>
void with_unary(UnaryOp op, Fn fn) {
    switch (op) {
        case UnaryOp::gelu:
            return fn(k::Gelu{});
        case UnaryOp::gelu_erf:
            return fn(k::GeluErf{});
        case UnaryOp::silu:
            return fn(k::Silu{});
        case UnaryOp::quick_gelu:
            return fn(k::QuickGelu{});
        case UnaryOp::relu:
            return fn(k::Relu{});
        case UnaryOp::squared_relu:
            return fn(k::SquaredRelu{});
        case UnaryOp::tanh:
            return fn(k::Tanh{});
        case UnaryOp::exp:
            return fn(k::Exp{});
        case UnaryOp::log:
            return fn(k::Log{});
    }
    MT_FAIL("unknown UnaryOp ", int(op));
}

// Elements of the residual add per task (its bf16 results rounded a block at a time).
constexpr int64_t kAddBlock = 1 << 14;

// Rows and half-width of a gated linear unit's input (..., 2F).
struct GluShape {
    int64_t rows, half;
};

GluShape glu_shape(const char* op, const Tensor& x) {
    check_float(op, "x", x);
    MT_CHECK(x.dim() >= 1 && x.size(-1) % 2 == 0, op,
             ": x must be (..., 2F) with an even last dim, got ", x.describe());
    int64_t half = x.size(-1) / 2;
    return {half == 0 ? 0 : x.numel() / (2 * half), half};
}

// ops::GluConfig's clamp: the gate at most c, the linear half within [-c, c]; the gradient
// passes where the bound did not bind (torch's clamp). No clamp (infinite c): inputs and
// gradients as they are.
template <class T>
struct GluClamp {
    explicit GluClamp(float c) : c(T(c)), active(std::isfinite(c)) {}
    T gate(T g) const { return g > c ? c : g; }
    T linear(T u) const { return u > c ? c : u < -c ? -c : u; }
    void mask(T g, T u, T& d_gate, T& d_linear) const {
        if (!active) return;
        if (!(g <= c)) d_gate = T(0);
        if (!(u >= -c && u <= c)) d_linear = T(0);
    }
    T c;
    bool active;
};

// The clamped gates g[i] of gate[i], i < n, and e[i] = exp(Gate::exp_arg(g[i])) (at SIMD width
// in f32).
template <class Gate, class T>
void gate_exps(const T* gate, int64_t n, const GluClamp<T>& clamp, T* g, T* e) {
    for (int64_t i = 0; i < n; ++i) g[i] = clamp.gate(gate[i]);
    exps_of(n, e, [&](int64_t i) { return Gate::exp_arg(g[i]); });
}

// Calls fn with the functor of a gated linear unit's gate activation.
template <class Fn>
void with_glu_gate(UnaryOp gate, Fn fn) {
    switch (gate) {
        case UnaryOp::silu:
            return fn(k::Silu{});
        case UnaryOp::quick_gelu:
            return fn(k::QuickGelu{});
        case UnaryOp::gelu:
            return fn(k::Gelu{});
        default:
            MT_FAIL("a gated linear unit with a ", ops::unary_op_name(gate),
                    " gate is not supported (silu, quick_gelu or gelu)");
    }
}

Shape halved(const Tensor& x) {
    Shape s = x.shape();
    s.back() /= 2;
    return s;
}

}  // namespace

void CpuBackend::unary_forward(UnaryOp op, const Tensor& x, Tensor& y) {
    if (any_f16({&x, &y})) {
        HalfAsFloat h;
        unary_forward(op, h.in(x), h.out(y));
        return h.finish();
    }
    check_float_or_bf16("unary_forward", "x", x);
    check_float_or_bf16_shape("unary_forward", "y", y, x.shape(), x.dtype());
    with_float_or_bf16(x.dtype(), [&](auto t) {
        using T = decltype(t);
        with_unary(op, [&](auto f) { unary_forward_loop(f, in_t<T>(x), out_t<T>(y), x.numel()); });
    });
}

void CpuBackend::unary_backward(UnaryOp op, const Tensor& x, const Tensor& dy, Tensor& dx) {
    if (any_f16({&x, &dy, &dx}) || !(x.dtype() == dy.dtype() && x.dtype() == dx.dtype())) {
        HalfAsFloat h;
        unary_backward(op, h.in(x), h.in(dy), h.out(dx));
        return h.finish();
    }
    check_float_or_bf16("unary_backward", "x", x);
    check_float_or_bf16_shape("unary_backward", "dy", dy, x.shape(), x.dtype());
    check_float_or_bf16_shape("unary_backward", "dx", dx, x.shape(), x.dtype());
    with_float_or_bf16(x.dtype(), [&](auto t) {
        using T = decltype(t);
        with_unary(op, [&](auto f) {
            unary_backward_loop(f, in_t<T>(x), in_t<T>(dy), out_t<T>(dx), x.numel());
        });
    });
}

void CpuBackend::glu_forward(const ops::GluConfig& glu, const Tensor& x, Tensor& y) {
    if (any_half({&x, &y})) {
        HalfAsFloat h;
        glu_forward(glu, h.in(x), h.out(y));
        return h.finish();
    }
    // Named rather than a structured binding, which clang 14 (the fuzz build) cannot capture.
    const GluShape shape = glu_shape("glu_forward", x);
    const int64_t rows = shape.rows, half = shape.half;
    check_float_shape("glu_forward", "y", y, halved(x), x.dtype());
    with_float(x.dtype(), [&](auto t) {
        using T = decltype(t);
        const T* xp = in_t<T>(x);
        T* yp = out_t<T>(y);
        const GluClamp<T> clamp(glu.clamp);
        const T offset = T(glu.linear_offset);
        with_glu_gate(glu.gate, [&](auto gate_op) {
            using Unit = k::GatedUnit<decltype(gate_op)>;
#pragma omp parallel for schedule(static) if (rows * half >= kParallelMin)
            for (int64_t r = 0; r < rows; ++r) {
                const T* gate = xp + r * 2 * half;
                const T* linear = gate + half;
                T* yr = yp + r * half;
                T g[kExpBlock], e[kExpBlock];
                for (int64_t j0 = 0; j0 < half; j0 += kExpBlock) {
                    const int64_t count = std::min(kExpBlock, half - j0);
                    gate_exps<decltype(gate_op)>(gate + j0, count, clamp, g, e);
                    for (int64_t j = 0; j < count; ++j)
                        yr[j0 + j] =
                            Unit::fwd_given(g[j], clamp.linear(linear[j0 + j]), e[j], offset);
                }
            }
        });
    });
}

void CpuBackend::glu_backward(const ops::GluConfig& glu, const Tensor& x, const Tensor& dy,
                              Tensor& dx) {
    if (any_half({&x, &dy, &dx})) {
        HalfAsFloat h;
        glu_backward(glu, h.in(x), h.in(dy), h.out(dx));
        return h.finish();
    }
    const GluShape shape = glu_shape("glu_backward", x);
    const int64_t rows = shape.rows, half = shape.half;
    check_float_shape("glu_backward", "dy", dy, halved(x), x.dtype());
    check_float_shape("glu_backward", "dx", dx, x.shape(), x.dtype());
    with_float(x.dtype(), [&](auto t) {
        using T = decltype(t);
        const T* xp = in_t<T>(x);
        const T* dyp = in_t<T>(dy);
        T* dxp = out_t<T>(dx);
        const GluClamp<T> clamp(glu.clamp);
        const T offset = T(glu.linear_offset);
        with_glu_gate(glu.gate, [&](auto gate_op) {
            using Unit = k::GatedUnit<decltype(gate_op)>;
#pragma omp parallel for schedule(static) if (rows * half >= kParallelMin)
            for (int64_t r = 0; r < rows; ++r) {
                const T* gate = xp + r * 2 * half;
                const T* linear = gate + half;
                const T* dyr = dyp + r * half;
                T* d_gate = dxp + r * 2 * half;
                T* d_linear = d_gate + half;
                T g[kExpBlock], e[kExpBlock];
                for (int64_t j0 = 0; j0 < half; j0 += kExpBlock) {
                    const int64_t count = std::min(kExpBlock, half - j0);
                    gate_exps<decltype(gate_op)>(gate + j0, count, clamp, g, e);
                    for (int64_t i = 0; i < count; ++i) {
                        const int64_t j = j0 + i;
                        Unit::bwd_given(g[i], clamp.linear(linear[j]), dyr[j], e[i], d_gate[j],
                                        d_linear[j], offset);
                        clamp.mask(gate[j], linear[j], d_gate[j], d_linear[j]);
                    }
                }
            }
        });
    });
}

void CpuBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
    if (any_f16({&a, &b, &y}) || !(a.dtype() == b.dtype() && a.dtype() == y.dtype())) {
        HalfAsFloat h;
        add(h.in(a), h.in(b), h.out(y));
        return h.finish();
    }
    check_float_or_bf16("add", "a", a);
    check_float_or_bf16_shape("add", "b", b, a.shape(), a.dtype());
    check_float_or_bf16_shape("add", "y", y, a.shape(), a.dtype());
    with_float_or_bf16(a.dtype(), [&](auto t) {
        using S = decltype(t);
        using E = detail::Element<S>;
        const S* ap = in_t<S>(a);
        const S* bp = in_t<S>(b);
        S* yp = out_t<S>(y);
        const int64_t n = a.numel(), blocks = (n + kAddBlock - 1) / kAddBlock;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
        for (int64_t blk = 0; blk < blocks; ++blk) {
            const int64_t first = blk * kAddBlock;
            const S *x = ap + first, *z = bp + first;
            detail::store_values(yp + first, std::min(kAddBlock, n - first),
                                 [&](int64_t i) { return E::load(x[i]) + E::load(z[i]); });
        }
    });
}

void CpuBackend::scale(const Tensor& x, float alpha, Tensor& y) {
    if (any_half({&x, &y})) {
        HalfAsFloat h;
        scale(h.in(x), alpha, h.out(y));
        return h.finish();
    }
    check_float("scale", "x", x);
    check_float_shape("scale", "y", y, x.shape(), x.dtype());
    with_float(x.dtype(), [&](auto t) {
        using T = decltype(t);
        const T* xp = in_t<T>(x);
        T* yp = out_t<T>(y);
        int64_t n = x.numel();
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
        for (int64_t i = 0; i < n; ++i) yp[i] = T(alpha) * xp[i];
    });
}

void CpuBackend::axpy(float alpha, const Tensor& x, Tensor& y) {
    if (any_half({&x, &y})) {
        HalfAsFloat h;
        axpy(alpha, h.in(x), h.inout(y));
        return h.finish();
    }
    check_float("axpy", "x", x);
    check_float_shape("axpy", "y", y, x.shape(), x.dtype());
    with_float(x.dtype(), [&](auto t) {
        using T = decltype(t);
        const T* xp = in_t<T>(x);
        T* yp = out_t<T>(y);
        int64_t n = x.numel();
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
        for (int64_t i = 0; i < n; ++i) yp[i] += T(alpha) * xp[i];
    });
}

}  // namespace mt::cpu
