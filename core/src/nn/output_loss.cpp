// OutputLoss: per chunk of rows, logits by GEMM, then the row-wise cross-entropy ops.
#include "mt/nn/output_loss.h"

#include <algorithm>
#include <cmath>

#include "mt/parallel/collectives.h"

namespace mt::nn {

OutputLoss::OutputLoss(int64_t vocab, int64_t hidden, Parameter* tied, LogitRows rows,
                       DType dtype, Backend& backend, TensorParallel tp, bool bias,
                       const std::string& module)
    : vocab_(vocab / tp.size()),
      hidden_(hidden),
      rows_(rows),
      tied_(tied),
      has_bias_(bias),
      backend_(&backend),
      tp_(tp) {
    MT_CHECK(rows.chunk > 0 && rows.kept > 0, "OutputLoss: rows must be > 0, got chunks of ",
             rows.chunk, " and ", rows.kept, " kept");
    MT_CHECK(vocab % tp.size() == 0, "OutputLoss: the vocabulary (", vocab,
             ") does not split across ", tp.size(), " tensor-parallel ranks");
    if (tied)
        MT_CHECK(tied->value.shape() == Shape({vocab_, hidden}), "OutputLoss: tied weight ",
                 tied->name, " is ", tied->value.describe(), ", expected (", vocab_, ", ", hidden,
                 ")");
    else
        weight_ = make_parameter(backend, module + ".weight", {vocab, hidden}, dtype,
                                 ShardSpec{ShardSpec::Kind::vocab, 0, 1}, true, tp);
    if (bias)
        bias_ = make_parameter(backend, module + ".bias", {vocab}, dtype,
                               ShardSpec{ShardSpec::Kind::vocab, 0, 1}, false, tp);
}

void OutputLoss::merge_vocab_pieces(Tensor& lse, Tensor& target_logit, Tensor& losses) const {
    // lse = m + log sum_r exp(lse_r - m) with m the rows' maximum over the ranks; the loss is
    // lse - the target's logit (summed over the ranks: only its owner's piece is non-zero).
    Tensor m = backend_->empty(lse.shape(), lse.dtype());
    backend_->copy(lse, m);
    tp_.group->all_reduce(m, ReduceOp::max);
    tp_.group->all_reduce(target_logit, ReduceOp::sum);
    backend_->axpy(-1.0f, m, lse);
    backend_->unary_forward(ops::UnaryOp::exp, lse, lse);
    tp_.group->all_reduce(lse, ReduceOp::sum);
    backend_->unary_forward(ops::UnaryOp::log, lse, lse);
    backend_->axpy(1.0f, m, lse);
    backend_->copy(lse, losses);
    backend_->axpy(-1.0f, target_logit, losses);
}

Tensor OutputLoss::forward(const Tensor& hidden, const Tensor& targets, Saved* saved) const {
    MT_CHECK(hidden.dim() == 3 && hidden.size(2) == hidden_, "OutputLoss: hidden must be (B, T, ",
             hidden_, "), got ", hidden.describe());
    const Parameter& w = weight_param();
    const Tensor whole = enter_column_parallel(tp_, hidden);
    MT_CHECK(targets.shape() == Shape({whole.size(0), whole.size(1)}),
             "OutputLoss: targets must be (B, T) for hidden ", whole.describe(), ", got ",
             targets.describe());
    Tensor h = backend_->contiguous(whole).view({-1, hidden_});
    Tensor tg = backend_->contiguous(targets).view({-1});
    const int64_t n = h.size(0);
    // The loss and its log-sum-exp in f32 for bf16 logits (Megatron's cross-entropy upcasts).
    const DType loss_dtype = upcast_dtype(h.dtype());
    Tensor losses = backend_->empty({n}, loss_dtype), lse = backend_->empty({n}, loss_dtype);
    Tensor target_logit = tp_.active() ? backend_->empty({n}, loss_dtype) : Tensor();
    // Few enough rows for the backward to keep their logits: one chunk of them all.
    const int64_t step = saved && n <= rows_.kept ? std::max(n, rows_.chunk) : rows_.chunk;
    Tensor kept;
    for (int64_t r0 = 0; r0 < n; r0 += step) {
        const int64_t r1 = std::min(n, r0 + step);
        Tensor logits = backend_->empty({r1 - r0, vocab_}, h.dtype());
        if (saved && r1 - r0 == n) kept = logits;
        backend_->gemm(Transpose::no, Transpose::yes, logit_scale_, h.slice(0, r0, r1), w.value,
                       0.0f, logits);
        if (has_bias_) backend_->add_bias(bias_.value, logits);
        Tensor chunk_losses = losses.slice(0, r0, r1), chunk_lse = lse.slice(0, r0, r1);
        if (tp_.active()) {
            Tensor chunk_target = target_logit.slice(0, r0, r1);
            backend_->cross_entropy_shard_forward(logits, tg.slice(0, r0, r1), vocab_ * tp_.rank(),
                                                  chunk_lse, chunk_target);
        } else {
            backend_->cross_entropy_forward(logits, tg.slice(0, r0, r1), chunk_losses, chunk_lse);
        }
    }
    if (tp_.active()) merge_vocab_pieces(lse, target_logit, losses);
    if (saved) *saved = Saved{h, tg, lse, kept};
    return losses.view({whole.size(0), whole.size(1)});
}

Tensor OutputLoss::logits(const Tensor& hidden) const {
    MT_CHECK(!tp_.sequence_split(), "not supported yet: inference with --sequence-parallel");
    MT_CHECK(hidden.dim() == 3 && hidden.size(2) == hidden_, "OutputLoss: hidden must be (B, T, ",
             hidden_, "), got ", hidden.describe());
    Tensor h = backend_->contiguous(hidden).view({-1, hidden_});
    Tensor out = backend_->empty({h.size(0), vocab_}, h.dtype());
    backend_->gemm(Transpose::no, Transpose::yes, logit_scale_, h, weight_param().value, 0.0f, out);
    if (has_bias_) backend_->add_bias(bias_.value, out);
    out = out.view({hidden.size(0), hidden.size(1), vocab_});
    // Each tensor-parallel rank holds a slice of the vocabulary: gathered into the whole
    // (Megatron's gather_from_tensor_model_parallel_region).
    return tp_.active() ? parallel::all_gather_along(*tp_.group, out, 2) : out;
}

Tensor OutputLoss::backward(const Tensor& dlosses, const Saved& saved) {
    const int64_t n = saved.hidden.size(0);
    MT_CHECK(dlosses.numel() == n, "OutputLoss: dlosses ", dlosses.describe(), " does not match ",
             n, " saved rows");
    Parameter& w = weight();
    Tensor dl = backend_->contiguous(dlosses).view({n});
    Tensor dh = backend_->empty({n, hidden_}, saved.hidden.dtype());
    const int64_t step = saved.logits.defined() ? std::max<int64_t>(n, 1) : rows_.chunk;
    for (int64_t r0 = 0; r0 < n; r0 += step) {
        const int64_t r1 = std::min(n, r0 + step);
        Tensor h = saved.hidden.slice(0, r0, r1);
        Tensor logits = saved.logits;
        if (!logits.defined()) {
            logits = backend_->empty({r1 - r0, vocab_}, h.dtype());
            backend_->gemm(Transpose::no, Transpose::yes, logit_scale_, h, w.value, 0.0f, logits);
            if (has_bias_) backend_->add_bias(bias_.value, logits);
        }
        // dlogits overwrites the logits in place (the op reads each before writing).
        if (tp_.active())
            backend_->cross_entropy_shard_backward(logits, saved.targets.slice(0, r0, r1),
                                                   vocab_ * tp_.rank(), saved.lse.slice(0, r0, r1),
                                                   dl.slice(0, r0, r1), logits);
        else
            backend_->cross_entropy_backward(logits, saved.targets.slice(0, r0, r1),
                                             saved.lse.slice(0, r0, r1), dl.slice(0, r0, r1),
                                             logits);
        if (has_bias_) backend_->add_column_sums(logits, bias_.grad);
        Tensor dh_chunk = dh.slice(0, r0, r1);
        backend_->gemm(Transpose::no, Transpose::no, logit_scale_, logits, w.value, 0.0f, dh_chunk);
        backend_->gemm(Transpose::yes, Transpose::no, logit_scale_, logits, h, 1.0f, w.grad);
    }
    Shape shape = dlosses.shape();
    shape.push_back(hidden_);
    return enter_column_parallel_backward(tp_, dh.view(shape));
}

void OutputLoss::collect_parameters(std::vector<Parameter*>& out) {
    if (!tied_) out.push_back(&weight_);
    if (has_bias_) out.push_back(&bias_);
}

}  // namespace mt::nn
