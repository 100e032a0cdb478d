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

void Linear::use_fp8(const Fp8Config& fp8) {
    fp8_ = fp8;
    weight_.fp8 = fp8.enabled;
    MT_CHECK(!fp8.enabled || fp8.recipe != Fp8Recipe::delayed || fp8.scaling, "Linear ",
             weight_.name, ": FP8's delayed scaling needs the model's FP8 state (its meters)");
    meters_ = fp8.enabled && fp8.recipe == Fp8Recipe::delayed ? fp8.scaling->add_linear() : nullptr;
    weight_.fp8_scale = meters_ ? &meters_->weight.scale : nullptr;
}

Tensor Linear::fp8_quantized(const Tensor& t, Fp8Meter* meter, ops::Fp8Type type, bool weight,
                             bool down_columns) const {
    if (meter) return fp8_.scaling->quantize(*backend_, t, *meter, type);
    if (block_scaled())
        return fp8_blocks(*backend_, t,
                          fp8_operand_blocks(fp8_.recipe, type, weight, down_columns));
    return fp8_current_scaling(*backend_, t, type);
}

Tensor Linear::fp8_input(const Tensor& x2, bool down_columns) const {
    return fp8_quantized(x2, meters_ ? &meters_->input : nullptr, fp8_.forward_type(), false,
                         down_columns);
}

Tensor Linear::fp8_weight_operand(bool down_columns) const {
    // Only block scaling quantizes the weight differently for the two GEMMs.
    const bool down = down_columns && block_scaled();
    Tensor& cached = down ? weight_fp8_down_ : weight_fp8_;
    uint64_t& made_in = down ? weight_down_pass_ : weight_pass_;
    const uint64_t pass = fp8_.scaling ? fp8_.scaling->pass() : 0;
    if (pass != 0 && made_in == pass) return cached;
    Tensor q = fp8_quantized(fp8_weight(), meters_ ? &meters_->weight : nullptr,
                             fp8_.forward_type(), true, down);
    if (pass != 0) {
        cached = q;
        made_in = pass;
    }
    return q;
}

Tensor Linear::fp8_grad(const Tensor& dy2, bool down_columns) const {
    return fp8_quantized(dy2, meters_ ? &meters_->grad : nullptr, fp8_.grad_type(), false,
                         down_columns);
}

Tensor Linear::product(const Tensor& x2, Saved* saved) const {
    MT_CHECK(x2.dtype() == weight_.value.dtype(), "Linear ", weight_.name, ": x is ", x2.describe(),
             ", weight ", weight_.value.describe());
    if (fp8_.enabled) {
        const Tensor xq = fp8_input(x2);
        const Tensor wq = fp8_weight_operand();
        Tensor y = backend_->empty({x2.size(0), out_}, DType::f32);
        backend_->gemm(Transpose::no, Transpose::yes, 1.0f, xq, wq, 0.0f, y);
        if (saved) {
            // dW sums over the rows of x: block scaling quantizes it down the columns for that.
            saved->input_fp8 = block_scaled() ? fp8_input(x2, true) : xq;
        }
        return backend_->cast_to(y, x2.dtype());
    }
    Tensor y = backend_->empty({x2.size(0), out_}, x2.dtype());
    backend_->gemm(Transpose::no, Transpose::yes, 1.0f, x2, weight_.value, 0.0f, y);
    return y;
}

Tensor Linear::forward(const Tensor& x, Saved* saved) const {
    const Tensor input = gathered(x);
    Tensor x2 = rows(*backend_, input, in_, "x");
    Tensor y = product(x2, saved);
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
        // A recomputed input (output_of) has no quantized copy: quantize it now, the same way
        // (not with the delayed recipe: its scales have moved on since the forward). The
        // weight is the pass's copy, the forward's.
        MT_CHECK(!meters_ || saved.input_fp8.defined(), "Linear ", weight_.name,
                 ": FP8's delayed scaling needs the forward's quantized input");
        // dx = dy W sums over dy's columns and W's rows; dW = dy^T x over the rows of both.
        const Tensor xq =
            saved.input_fp8.defined() ? saved.input_fp8 : fp8_input(saved.input, true);
        const Tensor dyq = fp8_grad(dy2);
        const Tensor dyq_down = block_scaled() ? fp8_grad(dy2, true) : dyq;
        const Tensor wq = fp8_weight_operand(true);
        Tensor dx32 = backend_->empty({dy2.size(0), in_}, DType::f32);
        backend_->gemm(Transpose::no, Transpose::no, 1.0f, dyq, wq, 0.0f, dx32);
        dx = backend_->cast_to(dx32, dy2.dtype());
        MT_CHECK(weight_.grad.dtype() == DType::f32, "Linear ", weight_.name,
                 ": FP8 accumulates the weight grad in f32, got ", weight_.grad.describe());
        if (fp8_.wgrad_fp8)
            backend_->gemm(Transpose::yes, Transpose::no, 1.0f, dyq_down, xq, 1.0f, weight_.grad);
        else  // --no-fp8-wgrad: TE's override_linear_precision wgrad, the saved input and dy
            backend_->gemm(Transpose::yes, Transpose::no, 1.0f, dy2, saved.input, 1.0f,
                           weight_.grad);
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
