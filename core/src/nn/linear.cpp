// Linear forward/backward as GEMMs on (N, features) views of the input and gradient.
#include "mt/nn/linear.h"

#include "mt/nn/fp8.h"

namespace mt::nn {

Shape with_last_dim(const Shape& shape, int64_t last) {
    Shape s = shape;
    s.back() = last;
    return s;
}

namespace {

// (N, features) view of a (..., features) tensor, made contiguous on `backend`.
Tensor rows(Backend& backend, const Tensor& x, int64_t features, const char* what) {
    MT_CHECK(x.dim() >= 1 && x.size(-1) == features, "Linear: ", what, " must be (..., ", features,
             "), got ", x.describe());
    return backend.contiguous(x).view({-1, features});
}

}  // namespace

Linear::Linear(const std::string& name, int64_t in, int64_t out, bool bias, DType dtype,
               ShardSpec shard, Backend& backend, TensorParallel tp)
    : has_bias_(bias),
      weight_(
          make_parameter(backend, join_name(name, "weight"), {out, in}, dtype, shard, true, tp)),
      backend_(&backend),
      tp_(tp) {
    out_ = weight_.value.size(0);
    in_ = weight_.value.size(1);
    if (bias) {
        // A row-parallel layer's bias is added after the all-reduce, so it stays replicated.
        ShardSpec bias_shard = shard.kind == ShardSpec::Kind::row ? ShardSpec{} : shard;
        bias_ =
            make_parameter(backend, join_name(name, "bias"), {out}, dtype, bias_shard, false, tp);
    }
}

bool Linear::column() const {
    return tp_.active() && (weight_.shard.kind == ShardSpec::Kind::column ||
                            weight_.shard.kind == ShardSpec::Kind::vocab);
}

bool Linear::row() const {
    return tp_.active() && weight_.shard.kind == ShardSpec::Kind::row;
}

Tensor Linear::gathered(const Tensor& x) const {
    return column() ? enter_column_parallel(tp_, x) : x;
}

Linear::Saved Linear::saved_for(const Tensor& x) const {
    Saved saved;
    saved.input = rows(*backend_, gathered(x), in_, "x");
    return saved;  // no quantized copy: the backward quantizes the input itself
}

Tensor Linear::product(const Tensor& x2, Tensor* x_fp8) const {
    MT_CHECK(x2.dtype() == weight_.value.dtype(), "Linear ", weight_.name, ": x is ", x2.describe(),
             ", weight ", weight_.value.describe());
    if (fp8_.enabled) {
        const Tensor xq = fp8_current_scaling(*backend_, x2, fp8_.forward_type());
        const Tensor wq = fp8_current_scaling(*backend_, fp8_weight(), fp8_.forward_type());
        Tensor y = backend_->empty({x2.size(0), out_}, DType::f32);
        backend_->gemm(Transpose::no, Transpose::yes, 1.0f, xq, wq, 0.0f, y);
        if (x_fp8) *x_fp8 = xq;
        return backend_->cast_to(y, x2.dtype());
    }
    Tensor y = backend_->empty({x2.size(0), out_}, x2.dtype());
    backend_->gemm(Transpose::no, Transpose::yes, 1.0f, x2, weight_.value, 0.0f, y);
    return y;
}

Tensor Linear::forward(const Tensor& x, Saved* saved) const {
    const Tensor input = gathered(x);
    Tensor x2 = rows(*backend_, input, in_, "x");
    Tensor y = product(x2, saved ? &saved->input_fp8 : nullptr);
    if (saved) saved->input = x2;
    y = y.view(with_last_dim(input.shape(), out_));
    if (row()) y = leave_row_parallel(tp_, y);
    if (has_bias_) backend_->add_bias(bias_.value, y);
    return y;
}

Tensor Linear::output_of(const Saved& saved) const {
    MT_CHECK(!row() && saved.input.defined(), "Linear ", weight_.name,
             ": output_of needs a saved input of a linear not split by rows");
    Tensor y = product(saved.input);
    if (has_bias_) backend_->add_bias(bias_.value, y);
    return y;
}

Tensor Linear::backward(const Tensor& dy, const Saved& saved) {
    const Tensor grad = row() ? leave_row_parallel_backward(tp_, dy) : dy;
    Tensor dy2 = rows(*backend_, grad, out_, "dy");
    MT_CHECK(saved.input.defined() && saved.input.size(0) == dy2.size(0), "Linear ", weight_.name,
             ": dy ", dy.describe(), " does not match the saved input ", saved.input.describe());
    Tensor dx;
    if (fp8_.enabled) {
        // A recomputed input (output_of) has no quantized copy: quantize it now, the same way.
        const Tensor xq = saved.input_fp8.defined()
                              ? saved.input_fp8
                              : fp8_current_scaling(*backend_, saved.input, fp8_.forward_type());
        const Tensor dyq = fp8_current_scaling(*backend_, dy2, fp8_.grad_type());
        const Tensor wq = fp8_current_scaling(*backend_, fp8_weight(), fp8_.forward_type());
        Tensor dx32 = backend_->empty({dy2.size(0), in_}, DType::f32);
        backend_->gemm(Transpose::no, Transpose::no, 1.0f, dyq, wq, 0.0f, dx32);
        dx = backend_->cast_to(dx32, dy2.dtype());
        MT_CHECK(weight_.grad.dtype() == DType::f32, "Linear ", weight_.name,
                 ": FP8 accumulates the weight grad in f32, got ", weight_.grad.describe());
        backend_->gemm(Transpose::yes, Transpose::no, 1.0f, dyq, xq, 1.0f, weight_.grad);
    } else {
        dx = backend_->empty({dy2.size(0), in_}, dy2.dtype());
        backend_->gemm(Transpose::no, Transpose::no, 1.0f, dy2, weight_.value, 0.0f, dx);
        backend_->gemm(Transpose::yes, Transpose::no, 1.0f, dy2, saved.input, 1.0f, weight_.grad);
    }
    if (has_bias_) backend_->add_column_sums(dy2, bias_.grad);
    dx = dx.view(with_last_dim(grad.shape(), in_));
    return column() ? enter_column_parallel_backward(tp_, dx) : dx;
}

void Linear::collect_parameters(std::vector<Parameter*>& out) {
    out.push_back(&weight_);
    if (has_bias_) out.push_back(&bias_);
}

}  // namespace mt::nn
