// Norm module over the row-wise ops; the forward keeps x and the row statistics.
#include "mt/nn/norm.h"

namespace mt::nn {

Norm::Norm(NormKind kind, const std::string& weight_name, const std::string& bias_name,
           int64_t hidden, const ops::NormConfig& config, DType dtype, Backend& backend,
           const TensorParallel& tp)
    : kind_(kind),
      config_(config),
      weight_(make_parameter(backend, weight_name, {hidden}, dtype, ShardSpec{}, false, tp)),
      backend_(&backend) {
    if (!config.zero_centered_gamma) backend.fill(weight_.value, 1.0);
    if (kind == NormKind::layer_norm)
        bias_ = make_parameter(backend, bias_name, {hidden}, dtype, ShardSpec{}, false, tp);
    // On sequence shards each rank's grads cover its part of the sequence only.
    weight_.grad_partial_over_tp = bias_.grad_partial_over_tp = tp.sequence_split();
}

Tensor Norm::forward(const Tensor& x, Saved* saved) const {
    Tensor xc = backend_->contiguous(x);
    MT_CHECK(xc.dim() >= 1, "Norm ", weight_.name, ": x must be (..., C), got ", x.describe());
    Shape lead(xc.shape().begin(), xc.shape().end() - 1);
    Tensor y = backend_->empty(xc.shape(), xc.dtype());
    Tensor rstd = backend_->empty(lead, upcast_dtype(xc.dtype()));  // f32 statistics of bf16 rows
    Tensor mean;
    if (kind_ == NormKind::layer_norm) {
        mean = backend_->empty(lead, upcast_dtype(xc.dtype()));
        backend_->layer_norm_forward(xc, weight_.value, bias_.value, config_, y, mean, rstd);
    } else {
        backend_->rms_norm_forward(xc, weight_.value, config_, y, rstd);
    }
    if (saved) *saved = Saved{xc, mean, rstd};
    return y;
}

Tensor Norm::backward(const Tensor& dy, const Saved& saved) {
    Tensor dx = backend_->empty(saved.input.shape(), saved.input.dtype());
    Tensor g = backend_->contiguous(dy);
    if (kind_ == NormKind::layer_norm)
        backend_->layer_norm_backward(g, saved.input, weight_.value, saved.mean, saved.rstd,
                                      config_, dx, weight_.grad, bias_.grad);
    else
        backend_->rms_norm_backward(g, saved.input, weight_.value, saved.rstd, config_, dx,
                                    weight_.grad);
    return dx;
}

void Norm::collect_parameters(std::vector<Parameter*>& out) {
    out.push_back(&weight_);
    if (kind_ == NormKind::layer_norm) out.push_back(&bias_);
}

}  // namespace mt::nn
