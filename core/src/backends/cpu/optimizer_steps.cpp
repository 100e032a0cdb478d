// CPU traversal of the optimizer steps over one parameter tensor: AdamW (the per-element update
// is mt/kernels/adam.h, run at SIMD width by adamw_update) and SGD with momentum.
#include "cpu_backend.h"

#include <algorithm>

#include "adamw_vector.h"
#include "bf16_narrow.h"
#include "mt/kernels/adam.h"
#include "op_support.h"

namespace mt::cpu {

using detail::check_f32;
using detail::check_f32_shape;
using detail::kParallelMin;
using detail::out;

namespace {

// Elements updated, then rounded, at a time: the main parameters are still in cache for the
// rounding. The chunks go to the threads in contiguous runs (a multiple of 16: whole cache lines).
constexpr int64_t kChunk = 1 << 14;

// The AdamW step of param and, with `rounded`, its bf16 copy.
void adamw_chunks(const char* op, Tensor& param, const Tensor& grad, Tensor& exp_avg,
                  Tensor& exp_avg_sq, const AdamWConfig& config, int64_t step, uint16_t* rounded) {
    check_f32(op, "param", param);
    check_f32_shape(op, "grad", grad, param.shape());
    check_f32_shape(op, "exp_avg", exp_avg, param.shape());
    check_f32_shape(op, "exp_avg_sq", exp_avg_sq, param.shape());
    MT_CHECK(step >= 1, op, ": step counts from 1, got ", step);
    const k::AdamW adam = k::AdamW::at_step(config.lr, config.beta1, config.beta2, config.eps,
                                            config.weight_decay, step);
    float *p = out(param), *m = out(exp_avg), *v = out(exp_avg_sq);
    const float* g = detail::in(grad);
    const float scale = float(config.grad_scale);
    const int64_t n = param.numel(), chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
    for (int64_t c = 0; c < chunks; ++c) {
        const int64_t i = c * kChunk, len = std::min(kChunk, n - i);
        adamw_update(adam, p + i, g + i, scale, m + i, v + i, len);
        if (rounded) narrow_to_bf16(p + i, rounded + i, len);
    }
}

}  // namespace

void CpuBackend::adamw_step(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                            const AdamWConfig& config, int64_t step) {
    adamw_chunks("adamw_step", param, grad, exp_avg, exp_avg_sq, config, step, nullptr);
}

void CpuBackend::adamw_step_rounded(Tensor& main_param, const Tensor& grad, Tensor& exp_avg,
                                    Tensor& exp_avg_sq, const AdamWConfig& config, int64_t step,
                                    Tensor& model_param) {
    if (model_param.dtype() != DType::bf16)  // f16: the step, then the cast
        return Backend::adamw_step_rounded(main_param, grad, exp_avg, exp_avg_sq, config, step,
                                           model_param);
    const char* op = "adamw_step_rounded";
    detail::check_float_or_bf16_shape(op, "model_param", model_param, main_param.shape(),
                                      DType::bf16);
    adamw_chunks(op, main_param, grad, exp_avg, exp_avg_sq, config, step,
                 static_cast<uint16_t*>(model_param.raw_data()));
}

void CpuBackend::sgd_step(Tensor& param, const Tensor& grad, Tensor& momentum_buffer,
                          const SgdConfig& config, int64_t step) {
    const char* op = "sgd_step";
    check_f32(op, "param", param);
    check_f32_shape(op, "grad", grad, param.shape());
    check_f32_shape(op, "momentum_buffer", momentum_buffer, param.shape());
    MT_CHECK(step >= 1, op, ": step counts from 1, got ", step);
    float *v = out(param), *buf = out(momentum_buffer);
    const float* g = detail::in(grad);
    const int64_t n = param.numel();
    const float m = static_cast<float>(config.momentum);
    const float w = static_cast<float>(config.weight_decay), l = static_cast<float>(config.lr);
    const float scale = static_cast<float>(config.grad_scale);
    // torch starts the buffer as the first step's d (no momentum applied to zeros).
    const bool first_step = step == 1;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
    for (int64_t k = 0; k < n; ++k) {
        const float d = g[k] * scale + w * v[k];
        buf[k] = (first_step || m == 0.0f) ? d : m * buf[k] + d;
        v[k] -= l * buf[k];
    }
}

}  // namespace mt::cpu
