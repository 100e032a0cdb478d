// The local experts' forward and backward: per expert, GEMMs on its contiguous rows.
#include "mt/nn/moe/experts.h"

#include "mt/error.h"
#include "mt/nn/linear.h"

namespace mt::nn {

namespace {

// kind: "weight" or "bias".
std::string expert_name(const std::string& prefix, bool grouped, int64_t expert, const char* fc,
                        const char* kind) {
    const std::string e = std::to_string(expert);
    return grouped ? join_name(prefix, std::string("experts.") + fc + "." + kind + e)
                   : join_name(prefix, "experts.local_experts." + e + "." + fc + "." + kind);
}

}  // namespace

MoeExperts::MoeExperts(const std::string& prefix, const TransformerConfig& config, Backend& backend)
    : gated_(config.gated_linear_unit),
      probs_on_input_(config.moe.probs_on_input),
      grouped_(config.moe.grouped_gemm),
      recompute_activation_(config.recompute_moe_act),
      activation_(config.activation),
      glu_(config.glu()),
      backend_(&backend) {
    const MoeConfig& moe = config.moe;
    const int64_t E = moe.router.num_experts, ep = moe.experts.ep_size();
    MT_CHECK(E % ep == 0, "--num-experts (", E,
             ") must be a multiple of --expert-model-parallel-size (", ep, ")");
    MT_CHECK(moe.ffn_hidden_size > 0, "MoE experts: --moe-ffn-hidden-size must be positive, got ",
             moe.ffn_hidden_size);
    const bool bias = config.add_bias_linear;
    const int64_t local = E / ep, F = moe.ffn_hidden_size, H = config.hidden_size;
    const TensorParallel etp{moe.experts.etp, false};
    adds_fc2_bias_ = !etp.active() || etp.rank() == 0;
    const ShardSpec fc1_shard{ShardSpec::Kind::column, 0, gated_ ? 2 : 1, gated_};
    for (int64_t j = 0; j < local; ++j) {
        const int64_t e = moe.experts.ep_rank() * local + j;
        auto add = [&](std::vector<Parameter>& to, const char* fc, const char* kind,
                       const Shape& shape, ShardSpec shard, bool decay) {
            to.push_back(make_parameter(backend, expert_name(prefix, moe.grouped_gemm, e, fc, kind),
                                        shape, config.dtype, shard, decay, etp));
            to.back().expert = true;
        };
        // fc1 [gate; up] split group-wise as the dense MLP's; fc2 by its input columns.
        add(fc1_, "linear_fc1", "weight", {gated_ ? 2 * F : F, H}, fc1_shard, true);
        add(fc2_, "linear_fc2", "weight", {H, F}, ShardSpec{ShardSpec::Kind::row, 1, 1}, true);
        if (bias) {
            add(fc1_bias_, "linear_fc1", "bias", {gated_ ? 2 * F : F}, fc1_shard, false);
            add(fc2_bias_, "linear_fc2", "bias", {H}, ShardSpec{}, false);
        }
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

Tensor MoeExperts::bias_rows(const Tensor& bias, int64_t n, DType dtype,
                             const Tensor& probs) const {
    Tensor out = backend_->zeros({n, bias.size(0)}, dtype);
    backend_->add_bias(bias, out);
    if (probs.defined()) backend_->scale_rows(out, probs, out);
    return out;
}

Tensor MoeExperts::forward(const Tensor& x, const std::vector<int64_t>& rows, const Tensor& probs,
                           Saved* saved) const {
    MT_CHECK(rows.size() == fc1_.size(), "MoE experts: ", rows.size(), " row counts for ",
             fc1_.size(), " local experts");
    const int64_t M = x.size(0), F1 = fc1_[0].value.size(0);
    Tensor h = backend_->empty({M, F1}, x.dtype());
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
    for (size_t j = 0; j < fc1_bias_.size(); ++j) {
        Tensor hj = rows_of(h, rows, j);
        if (rows[j] > 0) backend_->add_bias(fc1_bias_[j].value, hj);
    }
    const Tensor a = activation(h);
    backend_->grouped_gemm_nt(probs_on_input_ ? a : weighted_rows(a, probs), rows, w2, y);
    // fc2's bias weighed as the activation was (by 1 when the probs weighed the input).
    for (size_t j = 0; adds_fc2_bias_ && j < fc2_bias_.size(); ++j) {
        if (rows[j] == 0) continue;
        Tensor yj = rows_of(y, rows, j);
        backend_->add(yj,
                      bias_rows(fc2_bias_[j].value, rows[j], y.dtype(),
                                probs_on_input_ ? Tensor() : rows_of(probs, rows, j)),
                      yj);
    }
    if (saved) *saved = Saved{x, probs, h, recompute_activation_ ? Tensor() : a, rows};
    return y;
}

Tensor MoeExperts::activation(const Tensor& h) const {
    Tensor a = backend_->empty({h.size(0), fc2_[0].value.size(1)}, h.dtype());
    if (gated_)
        backend_->glu_forward(glu_, h, a);
    else
        backend_->unary_forward(activation_, h, a);
    return a;
}

MoeExperts::Grads MoeExperts::backward(const Tensor& dy, const Saved& s) {
    const int64_t M = s.x.size(0);
    Grads g{backend_->zeros(s.x.shape(), s.x.dtype()), backend_->zeros({M}, s.probs.dtype())};
    Tensor dy_rows = backend_->contiguous(dy);
    const Tensor a = s.a.defined() ? s.a : activation(s.h);  // moe_act: rebuilt, the same values
    for (size_t j = 0; j < fc1_.size(); ++j) {
        if (s.rows[j] == 0) continue;
        Tensor dyj = rows_of(dy_rows, s.rows, j), aj = rows_of(a, s.rows, j);
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
        if (!fc2_bias_.empty()) {
            // y += p · b: d b = Σ p · dy, d p = dy · b (p is 1 with the probs on the input).
            const Tensor& b = fc2_bias_[j].value;
            // Over expert tensor parallelism dy is the same on every rank of the group: each
            // takes b's whole gradient, and the rank that added it its share of d p.
            if (probs_on_input_) {
                backend_->add_column_sums(dyj, fc2_bias_[j].grad);
            } else {
                backend_->add_column_sums(weighted_rows(dyj, pj), fc2_bias_[j].grad);
            }
            if (!probs_on_input_ && adds_fc2_bias_) {
                Tensor dp = backend_->empty(dpj.shape(), dpj.dtype());
                backend_->row_dots(dyj, bias_rows(b, s.rows[j], dyj.dtype(), Tensor()), dp);
                backend_->add(dpj, dp, dpj);
            }
        }
        Tensor hj = rows_of(s.h, s.rows, j);
        Tensor dh = backend_->empty(hj.shape(), hj.dtype());
        if (gated_)
            backend_->glu_backward(glu_, hj, da, dh);
        else
            backend_->unary_backward(activation_, hj, da, dh);
        if (!fc1_bias_.empty()) backend_->add_column_sums(dh, fc1_bias_[j].grad);
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
    // SequentialMLP registers each expert's fc1 then fc2 (each weight, bias); GroupedLinear all
    // fc1 then all fc2 (weight0, bias0, weight1, ...).
    auto linear = [&](std::vector<Parameter>& w, std::vector<Parameter>& b, size_t j) {
        out.push_back(&w[j]);
        if (!b.empty()) out.push_back(&b[j]);
    };
    if (grouped_) {
        for (size_t j = 0; j < fc1_.size(); ++j) linear(fc1_, fc1_bias_, j);
        for (size_t j = 0; j < fc2_.size(); ++j) linear(fc2_, fc2_bias_, j);
        return;
    }
    for (size_t j = 0; j < fc1_.size(); ++j) {
        linear(fc1_, fc1_bias_, j);
        linear(fc2_, fc2_bias_, j);
    }
}

}  // namespace mt::nn
