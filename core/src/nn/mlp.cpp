// MLP forward/backward: two Linears around the elementwise activation.
#include "mt/nn/mlp.h"

namespace mt::nn {

namespace {

// SwiGLU's fc1 is [gate; up]: each tensor-parallel rank holds its slice of both halves.
ShardSpec fc1_shard(bool gated) {
    return ShardSpec{ShardSpec::Kind::column, 0, gated ? 2 : 1, gated};
}

}  // namespace

Mlp::Mlp(const std::string& prefix, const TransformerConfig& config, Backend& backend)
    : gated_(config.gated_linear_unit),
      activation_(config.activation),
      glu_(config.glu()),
      fc1_(join_name(prefix, "linear_fc1"), config.hidden_size,
           config.ffn_hidden_size * (config.gated_linear_unit ? 2 : 1), config.add_bias_linear,
           config.dtype, fc1_shard(config.gated_linear_unit), backend, config.tp),
      fc2_(join_name(prefix, "linear_fc2"), config.ffn_hidden_size, config.hidden_size,
           config.add_bias_linear, config.dtype, ShardSpec{ShardSpec::Kind::row, 1, 1}, backend,
           config.tp),
      backend_(&backend) {
    fc1_.use_fp8(config.fp8);
    fc2_.use_fp8(config.fp8);
    MT_CHECK(config.hidden_size > 0 && config.ffn_hidden_size > 0,
             "Mlp: hidden and ffn hidden sizes must be > 0, got ", config.hidden_size, " and ",
             config.ffn_hidden_size);
    MT_CHECK(!gated_ || glu_.gate == ops::UnaryOp::silu || glu_.gate == ops::UnaryOp::quick_gelu ||
                 glu_.gate == ops::UnaryOp::gelu,
             "Mlp: a gated linear unit is implemented for silu (SwiGLU), quick_gelu "
             "(--quick-geglu) and the tanh gelu (--geglu), got ",
             ops::unary_op_name(glu_.gate));
}

Tensor Mlp::forward(const Tensor& x, Saved* saved) const {
    Tensor h = fc1_.forward(x, saved ? &saved->fc1 : nullptr);
    Tensor a;
    if (gated_) {
        a = backend_->empty(with_last_dim(h.shape(), h.size(-1) / 2), h.dtype());
        backend_->glu_forward(glu_, h, a);
    } else {
        a = backend_->empty(h.shape(), h.dtype());
        backend_->unary_forward(activation_, h, a);
    }
    if (saved) saved->fc1_out = h;
    return fc2_.forward(a, saved ? &saved->fc2 : nullptr);
}

Tensor Mlp::backward(const Tensor& dy, const Saved& saved) {
    Tensor da = fc2_.backward(dy, saved.fc2);
    Tensor dh = backend_->empty(saved.fc1_out.shape(), saved.fc1_out.dtype());
    if (gated_)
        backend_->glu_backward(glu_, saved.fc1_out, da, dh);
    else
        backend_->unary_backward(activation_, saved.fc1_out, da, dh);
    return fc1_.backward(dh, saved.fc1);
}

void Mlp::collect_parameters(std::vector<Parameter*>& out) {
    fc1_.collect_parameters(out);
    fc2_.collect_parameters(out);
}

}  // namespace mt::nn
