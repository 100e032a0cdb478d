// CPU traversal of the AdamW step over one parameter tensor; the per-element update is
// mt/kernels/adam.h.
#include "mt/ops/adamw.h"

#include "mt/kernels/adam.h"
#include "op_support.h"

namespace mt::ops {

using detail::check_f32;
using detail::check_f32_shape;
using detail::kParallelMin;
using detail::out;

void adamw_step(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                const AdamWConfig& config, int64_t step) {
    const char* op = "adamw_step";
    check_f32(op, "param", param);
    check_f32_shape(op, "grad", grad, param.shape());
    check_f32_shape(op, "exp_avg", exp_avg, param.shape());
    check_f32_shape(op, "exp_avg_sq", exp_avg_sq, param.shape());
    MT_CHECK(step >= 1, op, ": step counts from 1, got ", step);
    const k::AdamW adam = k::AdamW::at_step(config.lr, config.beta1, config.beta2, config.eps,
                                            config.weight_decay, step);
    float *p = out(param), *m = out(exp_avg), *v = out(exp_avg_sq);
    const float* g = detail::in(grad);
    const int64_t n = param.numel();
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
    for (int64_t i = 0; i < n; ++i) adam.step(p[i], g[i], m[i], v[i]);
}

}  // namespace mt::ops
