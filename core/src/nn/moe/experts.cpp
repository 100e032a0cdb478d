// The local experts' forward and backward: per expert, GEMMs on its contiguous rows.
#include "mt/nn/moe/experts.h"

#include "mt/error.h"
#include "mt/nn/linear.h"

namespace mt::nn {

namespace {

std::string expert_name(const std::string& prefix, bool grouped, int64_t expert, const char* fc) {
    const std::string e = std::to_string(expert);
    return grouped ? join_name(prefix, std::string("experts.") + fc + ".weight" + e)
                   : join_name(prefix, "experts.local_experts." + e + "." + fc + ".weight");
}

}  // namespace

MoeExperts::MoeExperts(const std::string& prefix, const TransformerConfig& config, Backend& backend)
    : gated_(config.gated_linear_unit),
      probs_on_input_(config.moe.probs_on_input),
      grouped_(config.moe.grouped_gemm),
      activation_(config.activation),
      backend_(&backend) {
    const MoeConfig& moe = config.moe;
    const int64_t E = moe.router.num_experts, ep = moe.experts.ep_size();
    MT_CHECK(E % ep == 0, "--num-experts (", E,
             ") must be a multiple of --expert-model-parallel-size (", ep, ")");
    MT_CHECK(moe.ffn_hidden_size > 0, "MoE experts: --moe-ffn-hidden-size must be positive, got ",
             moe.ffn_hidden_size);
    MT_CHECK(!gated_ || activation_ == ops::UnaryOp::silu,
             "MoE experts: a gated linear unit is implemented for silu (SwiGLU) only");
    const int64_t local = E / ep, F = moe.ffn_hidden_size, H = config.hidden_size;
    const TensorParallel etp{moe.experts.etp, false};
    for (int64_t j = 0; j < local; ++j) {
        const int64_t e = moe.experts.ep_rank() * local + j;
        // fc1 [gate; up] split group-wise as the dense MLP's; fc2 by its input columns.
        fc1_.push_back(make_parameter(
            backend, expert_name(prefix, moe.grouped_gemm, e, "linear_fc1"),
            {gated_ ? 2 * F : F, H}, config.dtype,
            ShardSpec{ShardSpec::Kind::column, 0, gated_ ? 2 : 1, gated_}, true, etp));
        fc2_.push_back(
            make_parameter(backend, expert_name(prefix, moe.grouped_gemm, e, "linear_fc2"), {H, F},
                           config.dtype, ShardSpec{ShardSpec::Kind::row, 1, 1}, true, etp));
        fc1_.back().expert = fc2_.back().expert = true;
    }
}

Tensor MoeExperts::rows_of(const Tensor& t, const std::vector<int64_t>& rows, size_t j) const {
    int64_t begin = 0;
    for (size_t i = 0; i < j; ++i) begin += rows[i];
    return t.slice(0, begin, begin + rows[j]);
}

Tensor MoeExperts::weighted_rows(const Tensor& t, const Tensor& probs) const {
    Tensor out = backend_->empty(t.shape(), t.dtype());
    backend_->scale_rows(t, probs, out);
    return out;
}

Tensor MoeExperts::forward(const Tensor& x, const std::vector<int64_t>& rows, const Tensor& probs,
                           Saved* saved) const {
    MT_CHECK(rows.size() == fc1_.size(), "MoE experts: ", rows.size(), " row counts for ",
             fc1_.size(), " local experts");
    const int64_t M = x.size(0), F1 = fc1_[0].value.size(0), F = fc2_[0].value.size(1);
    Tensor h = backend_->empty({M, F1}, x.dtype());
    Tensor a = backend_->empty({M, F}, x.dtype());
    Tensor y = backend_->empty({M, x.size(1)}, x.dtype());
    // Each expert's GEMMs on its rows, all experts together; the activation and the probs'
    // weighting are row-wise, the same for every expert, so they run once over all rows.
    std::vector<Tensor> w1, w2;
    for (size_t j = 0; j < fc1_.size(); ++j) {
        w1.push_back(fc1_[j].value);
        w2.push_back(fc2_[j].value);
    }
    // --moe-apply-probs-on-input: the probs weight the rows going in (rounded to x's dtype, as
    // Megatron casts them back), and the activation is taken as it is (Megatron's probs of 1).
    const Tensor in = probs_on_input_ ? weighted_rows(x, probs) : x;
    backend_->grouped_gemm_nt(in, rows, w1, h);
    if (gated_)
        backend_->swiglu_forward(h, a);
    else
        backend_->unary_forward(activation_, h, a);
    backend_->grouped_gemm_nt(probs_on_input_ ? a : weighted_rows(a, probs), rows, w2, y);
    if (saved) *saved = Saved{x, probs, h, a, rows};
    return y;
}

MoeExperts::Grads MoeExperts::backward(const Tensor& dy, const Saved& s) {
    const int64_t M = s.x.size(0);
    Grads g{backend_->zeros(s.x.shape(), s.x.dtype()), backend_->zeros({M}, s.probs.dtype())};
    Tensor dy_rows = backend_->contiguous(dy);
    for (size_t j = 0; j < fc1_.size(); ++j) {
        if (s.rows[j] == 0) continue;
        Tensor dyj = rows_of(dy_rows, s.rows, j), aj = rows_of(s.a, s.rows, j);
        Tensor pj = rows_of(s.probs, s.rows, j), dpj = rows_of(g.dprobs, s.rows, j);
        // fc2: its input was the (weighted) activation, rebuilt here rather than kept.
        backend_->gemm(Transpose::yes, Transpose::no, 1.0f, dyj,
                       probs_on_input_ ? aj : weighted_rows(aj, pj), 1.0f, fc2_[j].grad);
        Tensor da = backend_->empty(aj.shape(), aj.dtype());
        backend_->gemm(Transpose::no, Transpose::no, 1.0f, dyj, fc2_[j].value, 0.0f, da);
        if (!probs_on_input_) {
            backend_->row_dots(da, aj, dpj);
            backend_->scale_rows(da, pj, da);  // d activation = probs · d weighted, in place
        }
        Tensor hj = rows_of(s.h, s.rows, j);
        Tensor dh = backend_->empty(hj.shape(), hj.dtype());
        if (gated_)
            backend_->swiglu_backward(hj, da, dh);
        else
            backend_->unary_backward(activation_, hj, da, dh);
        const Tensor xj = rows_of(s.x, s.rows, j);
        backend_->gemm(Transpose::yes, Transpose::no, 1.0f, dh,
                       probs_on_input_ ? weighted_rows(xj, pj) : xj, 1.0f, fc1_[j].grad);
        Tensor dxj = rows_of(g.dx, s.rows, j);
        backend_->gemm(Transpose::no, Transpose::no, 1.0f, dh, fc1_[j].value, 0.0f, dxj);
        if (probs_on_input_) {  // d in = dxj: d probs = in's rows · x, d x = probs · d in
            backend_->row_dots(dxj, xj, dpj);
            backend_->scale_rows(dxj, pj, dxj);
        }
    }
    return g;
}

void MoeExperts::collect_parameters(std::vector<Parameter*>& out) {
    // SequentialMLP registers each expert's fc1 then fc2; GroupedLinear all fc1 then all fc2.
    if (grouped_) {
        for (Parameter& p : fc1_) out.push_back(&p);
        for (Parameter& p : fc2_) out.push_back(&p);
        return;
    }
    for (size_t j = 0; j < fc1_.size(); ++j) {
        out.push_back(&fc1_[j]);
        out.push_back(&fc2_[j]);
    }
}

}  // namespace mt::nn
