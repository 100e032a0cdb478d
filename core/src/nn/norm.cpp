// Norm module over the row-wise ops; the forward keeps x and the row statistics.
#include "mt/nn/norm.h"

#include <algorithm>

#include "mt/ops/norm.h"

namespace mt::nn {

Norm::Norm(NormKind kind, const std::string& weight_name, const std::string& bias_name,
           int64_t hidden, const ops::NormConfig& config, DType dtype, const TensorParallel& tp)
    : kind_(kind),
      config_(config),
      weight_(make_parameter(weight_name, {hidden}, dtype, ShardSpec{}, false, tp)) {
    if (!config.zero_centered_gamma) {
        if (dtype == DType::f64)
            std::fill_n(weight_.value.data<double>(), hidden, 1.0);
        else
            std::fill_n(weight_.value.data<float>(), hidden, 1.0f);
    }
    if (kind == NormKind::layer_norm)
        bias_ = make_parameter(bias_name, {hidden}, dtype, ShardSpec{}, false, tp);
    // On sequence shards each rank's grads cover its part of the sequence only.
    weight_.sequence_parallel = bias_.sequence_parallel = tp.sequence_split();
}

Tensor Norm::forward(const Tensor& x, Saved* saved) const {
    Tensor xc = x.contiguous();
    MT_CHECK(xc.dim() >= 1, "Norm ", weight_.name, ": x must be (..., C), got ", x.describe());
    Shape lead(xc.shape().begin(), xc.shape().end() - 1);
    Tensor y = Tensor::empty(xc.shape(), xc.dtype());
    Tensor rstd = Tensor::empty(lead, xc.dtype());
    Tensor mean;
    if (kind_ == NormKind::layer_norm) {
        mean = Tensor::empty(lead, xc.dtype());
        ops::layer_norm_forward(xc, weight_.value, bias_.value, config_, y, mean, rstd);
    } else {
        ops::rms_norm_forward(xc, weight_.value, config_, y, rstd);
    }
    if (saved) *saved = Saved{xc, mean, rstd};
    return y;
}

Tensor Norm::backward(const Tensor& dy, const Saved& saved) {
    Tensor dx = Tensor::empty(saved.input.shape(), saved.input.dtype());
    Tensor g = dy.contiguous();
    if (kind_ == NormKind::layer_norm)
        ops::layer_norm_backward(g, saved.input, weight_.value, saved.mean, saved.rstd, config_, dx,
                                 weight_.grad, bias_.grad);
    else
        ops::rms_norm_backward(g, saved.input, weight_.value, saved.rstd, config_, dx,
                               weight_.grad);
    return dx;
}

void Norm::collect_parameters(std::vector<Parameter*>& out) {
    out.push_back(&weight_);
    if (kind_ == NormKind::layer_norm) out.push_back(&bias_);
}

}  // namespace mt::nn
