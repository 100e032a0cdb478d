// CPU depthwise causal convolution (Mamba-2's conv1d over x, B and C), f32 and f64: one OpenMP
// task per output position for y and dx (channels innermost, so the loops vectorise), channel
// blocks for the weight and bias grads (each channel summed over positions by one thread, so the
// result does not depend on the thread count).
#include <algorithm>

#include "cpu_backend.h"
#include "op_support.h"

namespace mt::cpu {

using detail::check_float;
using detail::check_float_shape;
using detail::in_t;
using detail::kParallelMin;
using detail::out_t;
using detail::with_float;

namespace {

constexpr int64_t kChannelBlock = 64;

// Batch, output length, kernel width and channels, after checking every tensor.
struct ConvShape {
    int64_t B, T, K, C;
};

ConvShape conv_shape(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias) {
    check_float(op, "x", x);
    MT_CHECK(x.dim() == 3, op, ": x must be (B, T + K - 1, C), got ", x.describe());
    MT_CHECK(weight.dim() == 2 && weight.size(0) == x.size(2) && weight.size(1) >= 1 &&
                 weight.size(1) <= x.size(1),
             op, ": weight must be (C, K) with K <= the padded length, got ", weight.describe(),
             " for x ", x.describe());
    check_float_shape(op, "weight", weight, weight.shape(), x.dtype());
    if (bias.defined()) check_float_shape(op, "bias", bias, {x.size(2)}, x.dtype());
    const int64_t K = weight.size(1);
    return {x.size(0), x.size(1) - K + 1, K, x.size(2)};
}

}  // namespace

void CpuBackend::depthwise_conv1d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                          Tensor& y) {
    const ConvShape s = conv_shape("depthwise_conv1d_forward", x, weight, bias);
    check_float_shape("depthwise_conv1d_forward", "y", y, {s.B, s.T, s.C}, x.dtype());
    with_float(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T *xp = in_t<T>(x), *w = in_t<T>(weight);
        const T* b = bias.defined() ? in_t<T>(bias) : nullptr;
        T* yp = out_t<T>(y);
        const int64_t Tp = s.T + s.K - 1;
#pragma omp parallel for schedule(static) if (s.B * s.T * s.C * s.K >= kParallelMin)
        for (int64_t bt = 0; bt < s.B * s.T; ++bt) {
            const int64_t bi = bt / s.T, t = bt % s.T;
            T* out = yp + bt * s.C;
            for (int64_t c = 0; c < s.C; ++c) out[c] = b ? b[c] : T(0);
            for (int64_t k = 0; k < s.K; ++k) {
                const T* row = xp + (bi * Tp + t + k) * s.C;
                for (int64_t c = 0; c < s.C; ++c) out[c] += w[c * s.K + k] * row[c];
            }
        }
    });
}

void CpuBackend::depthwise_conv1d_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                           Tensor& dx, Tensor& dweight, Tensor& dbias) {
    const char* op = "depthwise_conv1d_backward";
    const ConvShape s = conv_shape(op, x, weight, dbias);
    check_float_shape(op, "dy", dy, {s.B, s.T, s.C}, x.dtype());
    check_float_shape(op, "dx", dx, x.shape(), x.dtype());
    check_float_shape(op, "dweight", dweight, weight.shape(), x.dtype());
    with_float(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T *xp = in_t<T>(x), *w = in_t<T>(weight), *g = in_t<T>(dy);
        T* gx = out_t<T>(dx);
        const int64_t Tp = s.T + s.K - 1;
        // dx[b, u] = Σ_k w[k] dy[b, u - k] over the outputs that read position u.
#pragma omp parallel for schedule(static) if (s.B * Tp * s.C * s.K >= kParallelMin)
        for (int64_t bu = 0; bu < s.B * Tp; ++bu) {
            const int64_t bi = bu / Tp, u = bu % Tp;
            T* out = gx + bu * s.C;
            std::fill(out, out + s.C, T(0));
            for (int64_t k = std::max<int64_t>(0, u - s.T + 1); k <= std::min(u, s.K - 1); ++k) {
                const T* row = g + (bi * s.T + u - k) * s.C;
                for (int64_t c = 0; c < s.C; ++c) out[c] += w[c * s.K + k] * row[c];
            }
        }
        T* gw = out_t<T>(dweight);
        T* gb = dbias.defined() ? out_t<T>(dbias) : nullptr;
        const int64_t blocks = (s.C + kChannelBlock - 1) / kChannelBlock;
#pragma omp parallel for schedule(static) if (s.B * s.T * s.C * s.K >= kParallelMin)
        for (int64_t blk = 0; blk < blocks; ++blk) {
            const int64_t c0 = blk * kChannelBlock, c1 = std::min(s.C, c0 + kChannelBlock);
            double acc_w[kChannelBlock * 8] = {}, acc_b[kChannelBlock] = {};
            for (int64_t k0 = 0; k0 < s.K; k0 += 8) {  // 8 taps at a time fit the accumulators
                const int64_t k1 = std::min(s.K, k0 + 8);
                std::fill(acc_w, acc_w + kChannelBlock * 8, 0.0);
                for (int64_t bt = 0; bt < s.B * s.T; ++bt) {
                    const int64_t bi = bt / s.T, t = bt % s.T;
                    const T* grow = g + bt * s.C;
                    for (int64_t k = k0; k < k1; ++k) {
                        const T* row = xp + (bi * Tp + t + k) * s.C;
                        double* acc = acc_w + (k - k0) * kChannelBlock - c0;
                        for (int64_t c = c0; c < c1; ++c) acc[c] += double(grow[c]) * row[c];
                    }
                    if (gb && k0 == 0)
                        for (int64_t c = c0; c < c1; ++c) acc_b[c - c0] += grow[c];
                }
                for (int64_t k = k0; k < k1; ++k)
                    for (int64_t c = c0; c < c1; ++c)
                        gw[c * s.K + k] += T(acc_w[(k - k0) * kChannelBlock + c - c0]);
            }
            if (gb)
                for (int64_t c = c0; c < c1; ++c) gb[c] += T(acc_b[c - c0]);
        }
    });
}

}  // namespace mt::cpu
