// Elementwise activations as functors with fwd(x) and bwd(x, dy) side by side, in Megatron's
// definitions. CPU loops (ops/elementwise.h) and CUDA kernels instantiate the same structs.
#pragma once

#include "mt/kernels/hd.h"

namespace mt::k {

// sqrt(2/pi) and the cubic coefficient of the tanh GELU. Megatron's bias_gelu writes the first
// as 0.79788456, which is the same float; the double tests use the exact value.
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kGeluCubic = 0.044715;
constexpr double kInvSqrt2 = 0.7071067811865476;
constexpr double kInvSqrt2Pi = 0.3989422804014327;

// fwd and bwd of an activation with one exp per element, from its exp_arg, fwd_given and
// bwd_given (which a backend may also call with the exps of many elements taken at once).
template <class Op>
struct OneExp {
    template <class T>
    MT_HD T fwd(T x) const {
        return Op::fwd_given(x, k::exp(Op::exp_arg(x)));
    }
    template <class T>
    MT_HD T bwd(T x, T dy) const {
        return Op::bwd_given(x, dy, k::exp(Op::exp_arg(x)));
    }
};

// GELU, tanh approximation: Megatron's bias_gelu (the default with --bias-gelu-fusion) and
// F.gelu(approximate='tanh'), also --openai-gelu.
//   y = x/2 (1 + tanh(u)),  u = sqrt(2/pi) x (1 + 0.044715 x^2)
// computed as y = x sigmoid(2u) (the same function: (1 + tanh u)/2 = sigmoid(2u)) because
// glibc's tanhf costs five expf; large |u| saturates cleanly (exp overflow gives y = -0).
struct Gelu : OneExp<Gelu> {
    // The argument of the one exp: -2u with u = sqrt(2/pi) x (1 + 0.044715 x^2), since
    // (1 + tanh u) / 2 = 1 / (1 + exp(-2u)). Split out so that a backend may take the exp of many
    // at once (fwd_given, bwd_given).
    template <class T>
    MT_HD static T exp_arg(T x) {
        T u = T(kSqrt2OverPi) * x * (T(1) + T(kGeluCubic) * x * x);
        return T(-2) * u;
    }
    // y from x and e = exp(exp_arg(x)).
    template <class T>
    MT_HD static T fwd_given(T x, T e) {
        return x * (T(1) / (T(1) + e));
    }
    // dy/dx = s + 2 x s (1 - s) du/dx  (= (1 + t)/2 + x/2 (1 - t^2) du/dx with t = tanh u),
    // du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2), s = 1 / (1 + e)
    template <class T>
    MT_HD static T bwd_given(T x, T dy, T e) {
        T s = T(1) / (T(1) + e);
        T du = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluCubic) * x * x);
        return dy * (s + T(2) * x * s * (T(1) - s) * du);
    }
};

// GELU with erf, exact: F.gelu, Megatron's TransformerConfig.activation_func default when the
// bias-gelu fusion is off.   y = x/2 (1 + erf(x / sqrt 2))
struct GeluErf {
    template <class T>
    MT_HD T fwd(T x) const {
        return T(0.5) * x * (T(1) + k::erf(x * T(kInvSqrt2)));
    }
    // dy/dx = Phi(x) + x phi(x)
    template <class T>
    MT_HD T bwd(T x, T dy) const {
        T cdf = T(0.5) * (T(1) + k::erf(x * T(kInvSqrt2)));
        T pdf = T(kInvSqrt2Pi) * k::exp(T(-0.5) * x * x);
        return dy * (cdf + x * pdf);
    }
};

// SiLU (swish): y = x sigmoid(x), sigmoid(x) = 1 / (1 + e) with e = exp(exp_arg(x)) = exp(-x);
// fwd_given and bwd_given take e, so that a backend may take the exps of many at once.
struct Silu : OneExp<Silu> {
    template <class T>
    MT_HD static T exp_arg(T x) {
        return -x;
    }
    template <class T>
    MT_HD static T sigmoid(T x) {
        return T(1) / (T(1) + k::exp(exp_arg(x)));
    }
    template <class T>
    MT_HD static T fwd_given(T x, T e) {
        return x * (T(1) / (T(1) + e));
    }
    // dy/dx = s (1 + x (1 - s))
    template <class T>
    MT_HD static T bwd_given(T x, T dy, T e) {
        T s = T(1) / (T(1) + e);
        return dy * s * (T(1) + x * (T(1) - s));
    }
};

// ReLU; the derivative at 0 is 0, as in torch.
struct Relu {
    template <class T>
    MT_HD T fwd(T x) const {
        return x > T(0) ? x : T(0);
    }
    template <class T>
    MT_HD T bwd(T x, T dy) const {
        return x > T(0) ? dy : T(0);
    }
};

// Squared ReLU (Megatron --squared-relu): y = relu(x)^2.
struct SquaredRelu {
    template <class T>
    MT_HD T fwd(T x) const {
        T r = x > T(0) ? x : T(0);
        return r * r;
    }
    template <class T>
    MT_HD T bwd(T x, T dy) const {
        return x > T(0) ? T(2) * x * dy : T(0);
    }
};

// tanh: BERT's pooler (dense, then tanh). dy (1 - tanh(x)^2).
struct Tanh {
    template <class T>
    MT_HD T fwd(T x) const {
        return k::tanh(x);
    }
    template <class T>
    MT_HD T bwd(T x, T dy) const {
        const T y = k::tanh(x);
        return dy * (T(1) - y * y);
    }
};

// exp and log: not activations, but the elementwise steps of merging the log-sum-exps of a
// vocab-parallel cross-entropy (lse = m + log sum_r exp(lse_r - m)).
struct Exp {
    template <class T>
    MT_HD T fwd(T x) const {
        return k::exp(x);
    }
    template <class T>
    MT_HD T bwd(T x, T dy) const {
        return dy * k::exp(x);
    }
};
struct Log {
    template <class T>
    MT_HD T fwd(T x) const {
        return k::log(x);
    }
    template <class T>
    MT_HD T bwd(T x, T dy) const {
        return dy / x;
    }
};

// Quick GELU (Megatron's quick_gelu, GPT-OSS's gate): y = x sigmoid(1.702 x), SiLU's sigmoid at
// z = 1.702 x: e = exp(exp_arg(x)) = exp(-z), and dy/dx = s (1 + z (1 - s)), SiLU's derivative
// at z (megatron-core's quick_geglu_back).
struct QuickGelu : OneExp<QuickGelu> {
    static constexpr double kSlope = 1.702;
    template <class T>
    MT_HD static T exp_arg(T x) {
        return Silu::exp_arg(T(kSlope) * x);
    }
    template <class T>
    MT_HD static T fwd_given(T x, T e) {
        return Silu::fwd_given(x, e);
    }
    template <class T>
    MT_HD static T bwd_given(T x, T dy, T e) {
        return Silu::bwd_given(T(kSlope) * x, dy, e);
    }
};

// A gated linear unit with Gate's activation (a OneExp functor): fc1's output (..., 2F) is split
// in halves, the first the gate:  y = gate_act(gate) * (linear + offset). The clamps of
// ops::GluConfig are the caller's, on the inputs.
template <class Gate>
struct GatedUnit {
    // e = exp(Gate::exp_arg(gate)), as Gate's fwd_given and bwd_given take it.
    template <class T>
    MT_HD static T fwd_given(T gate, T linear, T e, T offset = T(0)) {
        return Gate::fwd_given(gate, e) * (linear + offset);
    }
    // d_gate = dy * (linear + offset) * gate_act'(gate),  d_linear = dy * gate_act(gate)
    template <class T>
    MT_HD static void bwd_given(T gate, T linear, T dy, T e, T& d_gate, T& d_linear,
                                T offset = T(0)) {
        d_gate = Gate::bwd_given(gate, dy * (linear + offset), e);
        d_linear = dy * Gate::fwd_given(gate, e);
    }
    template <class T>
    MT_HD T fwd(T gate, T linear, T offset = T(0)) const {
        return fwd_given(gate, linear, k::exp(Gate::exp_arg(gate)), offset);
    }
    template <class T>
    MT_HD void bwd(T gate, T linear, T dy, T& d_gate, T& d_linear, T offset = T(0)) const {
        bwd_given(gate, linear, dy, k::exp(Gate::exp_arg(gate)), d_gate, d_linear, offset);
    }
};

// SwiGLU, Megatron's swiglu: y = silu(gate) * up.
using Swiglu = GatedUnit<Silu>;
// Quick GeGLU, Megatron's quick_geglu (--quick-geglu): y = quick_gelu(gate) * (up + offset).
using QuickGeglu = GatedUnit<QuickGelu>;

}  // namespace mt::k
