// What the CPU op files share: argument checks with the op's name in the message, the f32/f64
// dispatch, the row view of a (..., C) tensor, and the fixed-lane fold that turns a
// kernels/reduce.h state into a deterministic, dependency-chain-free row reduction.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "bf16_narrow.h"
#include "mt/kernels/bf16.h"
#include "mt/tensor.h"

namespace mt::cpu::detail {

// Loops over fewer elements than this stay on one thread (OpenMP start-up would dominate).
constexpr int64_t kParallelMin = 1 << 15;

// x must be a contiguous f32 CPU tensor; `op` and `name` go into the message.
void check_f32(const char* op, const char* name, const Tensor& x);
// Same as check_f32, and of `shape`.
void check_f32_shape(const char* op, const char* name, const Tensor& x, const Shape& shape);

// x must be a contiguous f32 or f64 CPU tensor (f64 lets the layers be checked by finite
// differences in double).
void check_float(const char* op, const char* name, const Tensor& x);
// Same as check_float, of `shape`, and of `dtype`.
void check_float_shape(const char* op, const char* name, const Tensor& x, const Shape& shape,
                       DType dtype);

// x must be a contiguous CPU tensor of a float dtype, halves included (ops that only move
// elements, such as the embedding gather, take every float dtype as it is).
void check_any_float(const char* op, const char* name, const Tensor& x);

// bf16 elements as the elementwise loops see them: stored as their bits, computed in f32.
// Element<S>::load / store convert between a stored S and its arithmetic type (float for bf16,
// S itself otherwise), so one loop serves f32, f64 and bf16 without widening passes.
struct Bf16 {
    uint16_t bits;
};
template <class S>
struct Element {
    using Compute = S;
    static S load(S v) { return v; }
    static S store(S v) { return v; }
};
template <>
struct Element<Bf16> {
    using Compute = float;
    static float load(Bf16 v) { return k::bf16_to_float(v.bits); }
    static Bf16 store(float v) { return {k::float_to_bf16(v)}; }
};

// x must be a contiguous f32, f64 or bf16 CPU tensor.
void check_float_or_bf16(const char* op, const char* name, const Tensor& x);
// Same, of `shape` and `dtype`.
void check_float_or_bf16_shape(const char* op, const char* name, const Tensor& x,
                               const Shape& shape, DType dtype);

// Calls fn(S{}) with S = float, double or Bf16 for dtype (checked beforehand).
template <class Fn>
void with_float_or_bf16(DType dtype, Fn fn) {
    if (dtype == DType::bf16)
        fn(Bf16{});
    else if (dtype == DType::f64)
        fn(double{});
    else
        fn(float{});
}

// Calls fn(T{}) with T = float or double for dtype (checked by check_float beforehand).
template <class Fn>
void with_float(DType dtype, Fn fn) {
    if (dtype == DType::f64)
        fn(double{});
    else
        fn(float{});
}

template <class T>
const T* in_t(const Tensor& t) {
    return static_cast<const T*>(t.raw_data());
}
template <class T>
T* out_t(const Tensor& t) {
    return static_cast<T*>(t.raw_data());
}

inline const float* in(const Tensor& t) {
    return static_cast<const float*>(t.raw_data());
}
inline float* out(const Tensor& t) {
    return static_cast<float*>(t.raw_data());
}

// x's shape without its last dimension (the shape of per-row statistics).
Shape leading_shape(const Tensor& x);

// Folds n values into a State with kLanes interleaved partial states merged pairwise at the
// end: the result does not depend on the thread count, and lanes break the add chain.
// add(state, j) folds element j into state.
constexpr int kLanes = 8;
template <class State, class AddFn>
State fold_lanes(int64_t n, AddFn add) {
    State lane[kLanes];
    int64_t j = 0;
    for (; j + kLanes <= n; j += kLanes)
        for (int l = 0; l < kLanes; ++l) add(lane[l], j + l);
    for (int l = 0; j < n; ++j, ++l) add(lane[l], j);
    for (int width = kLanes / 2; width > 0; width /= 2)
        for (int l = 0; l < width; ++l) lane[l].merge(lane[l + width]);
    return lane[0];
}

// Parameter grads of a per-column weight (a norm's) over rows x cols: dweight[j] += Σ_r dy[r, j]
// xhat(r, j) and, when dbias is given, dbias[j] += Σ_r dy[r, j], in double. Column blocks go to
// the threads, each column summed over the rows by one thread: the result does not depend on the
// thread count.
constexpr int64_t kColumnBlock = 128;
template <class T, class Xhat>
void column_grads(int64_t rows, int64_t cols, const T* dy, Xhat xhat, T* dweight, T* dbias) {
    const int64_t blocks = (cols + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelMin)
    for (int64_t b = 0; b < blocks; ++b) {
        const int64_t j0 = b * kColumnBlock, j1 = std::min(cols, j0 + kColumnBlock);
        double acc_w[kColumnBlock] = {}, acc_b[kColumnBlock] = {};
        for (int64_t r = 0; r < rows; ++r) {
            const T* dyr = dy + r * cols;
            for (int64_t j = j0; j < j1; ++j) {
                acc_w[j - j0] += double(dyr[j]) * xhat(r, j);
                acc_b[j - j0] += dyr[j];
            }
        }
        for (int64_t j = j0; j < j1; ++j) {
            dweight[j] += T(acc_w[j - j0]);
            if (dbias) dbias[j] += T(acc_b[j - j0]);
        }
    }
}

// out[i] = Element<S>::store(value(i)), i < n, on this thread: bf16 results rounded a block at a
// time by narrow_to_bf16 (at SIMD width: element by element, the rounding is most of a bf16
// loop's work), others stored as they come.
template <class S, class Value>
void store_values(S* out, int64_t n, Value value) {
    if constexpr (std::is_same_v<S, Bf16>) {
        constexpr int64_t kBlock = 512;
        float block[kBlock];
        for (int64_t first = 0; first < n; first += kBlock) {
            const int64_t count = std::min(kBlock, n - first);
            for (int64_t i = 0; i < count; ++i) block[i] = value(first + i);
            narrow_to_bf16(block, &out[first].bits, count);
        }
    } else {
        for (int64_t i = 0; i < n; ++i) out[i] = value(i);
    }
}

}  // namespace mt::cpu::detail
