// Whole-tensor reductions to a host double (grad norms, loss sums, zero counts): fixed chunks
// summed in order, so the result does not depend on the thread count, each chunk with 8
// independent accumulators so the loop vectorises instead of waiting on one chain of additions.
#include <algorithm>
#include <vector>

#include "cpu_backend.h"
#include "half_as_float.h"
#include "op_support.h"

namespace mt::cpu {

using detail::check_float;
using detail::check_float_shape;
using detail::in_t;
using detail::with_float;

namespace {

// Σ term(i) over [0, n) in double, in the chunked order described above.
template <class Term>
double chunked_sum(int64_t n, Term term) {
    constexpr int64_t kChunk = int64_t(1) << 14;
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    std::vector<double> partial(size_t(chunks), 0.0);
#pragma omp parallel for schedule(static) if (n > (1 << 16))
    for (int64_t k = 0; k < chunks; ++k) {
        const int64_t begin = k * kChunk, end = std::min(n, begin + kChunk);
        double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t i = begin;
        for (; i + 8 <= end; i += 8)
            for (int j = 0; j < 8; ++j) acc[j] += term(i + j);
        for (; i < end; ++i) acc[0] += term(i);
        partial[size_t(k)] =
            ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    }
    double total = 0;
    for (double v : partial) total += v;
    return total;
}

}  // namespace

double CpuBackend::dot(const Tensor& a, const Tensor& b) {
    if (any_half({&a, &b})) {
        HalfAsFloat h;
        return dot(h.in(a), h.in(b));
    }
    check_float("dot", "a", a);
    check_float_shape("dot", "b", b, a.shape(), a.dtype());
    double result = 0;
    with_float(a.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T *x = in_t<T>(a), *y = in_t<T>(b);
        result = chunked_sum(a.numel(), [&](int64_t i) { return double(x[i]) * double(y[i]); });
    });
    return result;
}

double CpuBackend::sum(const Tensor& x) {
    if (any_half({&x})) {
        HalfAsFloat h;
        return sum(h.in(x));
    }
    check_float("sum", "x", x);
    double result = 0;
    with_float(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* p = in_t<T>(x);
        result = chunked_sum(x.numel(), [&](int64_t i) { return double(p[i]); });
    });
    return result;
}

int64_t CpuBackend::count_zeros(const Tensor& x) {
    if (any_half({&x})) {
        HalfAsFloat h;
        return count_zeros(h.in(x));
    }
    check_float("count_zeros", "x", x);
    double result = 0;
    with_float(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* p = in_t<T>(x);
        result = chunked_sum(x.numel(), [&](int64_t i) { return p[i] == T(0) ? 1.0 : 0.0; });
    });
    return int64_t(result);
}

}  // namespace mt::cpu
