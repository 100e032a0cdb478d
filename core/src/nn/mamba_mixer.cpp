// MambaMixer forward/backward: in_proj, the causal convolution, the selective scan and the gated
// norm as backend ops; the slicing of in_proj's output into z, xBC and dt is copies.
#include "mt/nn/mamba_mixer.h"

#include <cmath>

#include "mt/error.h"

namespace mt::nn {

namespace {

// Columns [begin, end) of the last dimension of x (B, T, P) as a contiguous (B, T, end - begin).
Tensor columns(Backend& backend, const Tensor& x, int64_t begin, int64_t end) {
    return backend.contiguous(x.slice(2, begin, end));
}

// Writes src (B, T, end - begin) into columns [begin, end) of dst (B, T, P).
void put_columns(Backend& backend, const Tensor& src, Tensor& dst, int64_t begin, int64_t end) {
    Tensor part = dst.slice(2, begin, end);
    backend.copy(src, part);
}

// Under context parallelism: the whole sequence (B, cp T, P) of every rank's (B, T, P), each
// rank's two chunks put back where they lie in it (mt/nn/context_parallel.h).
Tensor whole_sequence(Backend& be, const ContextParallel& cp, const Tensor& local) {
    const int64_t B = local.size(0), T = local.size(1), P = local.size(2), n = local.numel();
    const int64_t half = T / 2;
    Tensor all = be.empty({n * cp.size()}, local.dtype());
    cp.group->all_gather(be.contiguous(local).view({n}), all);
    Tensor whole = be.empty({B, T * cp.size(), P}, local.dtype());
    for (int r = 0; r < cp.size(); ++r) {
        const Tensor part = all.slice(0, r * n, (r + 1) * n).view({B, T, P});
        for (int c = 0; c < 2; ++c) {
            const int64_t at = cp.chunk_start(r, c, T);
            Tensor into = whole.slice(1, at, at + half);
            be.copy(part.slice(1, c * half, (c + 1) * half), into);
        }
    }
    return whole;
}

// This rank's part (B, T, P) of a whole sequence (B, cp T, P): its two chunks.
Tensor own_sequence(Backend& be, const ContextParallel& cp, const Tensor& whole) {
    const int64_t T = whole.size(1) / cp.size(), half = T / 2;
    Tensor out = be.empty({whole.size(0), T, whole.size(2)}, whole.dtype());
    for (int c = 0; c < 2; ++c) {
        const int64_t at = cp.chunk_start(cp.rank(), c, T);
        Tensor into = out.slice(1, c * half, (c + 1) * half);
        be.copy(whole.slice(1, at, at + half), into);
    }
    return out;
}

const TransformerConfig& checked(const TransformerConfig& c) {
    const MambaConfig& m = c.mamba;
    MT_CHECK(m.state_dim > 0 && m.head_dim > 0 && m.num_groups > 0 && m.conv_width > 1,
             "Mamba: --mamba-state-dim, --mamba-head-dim and --mamba-num-groups must be positive");
    const int64_t nh = m.heads(c.hidden_size);
    MT_CHECK(nh > 0 && nh % m.num_groups == 0, "Mamba: the ", nh,
             " heads must be a positive multiple of --mamba-num-groups ", m.num_groups);
    MT_CHECK(m.num_heads > 0 || 2 * c.hidden_size % m.head_dim == 0, "Mamba: 2 x hidden size ",
             2 * c.hidden_size, " must be a multiple of --mamba-head-dim ", m.head_dim);
    // Megatron's MambaMixer: each tensor-parallel rank holds whole heads and whole groups.
    const int64_t tp = c.tp.size();
    MT_CHECK(nh % tp == 0 && m.num_groups % tp == 0, "Mamba: the ", nh, " heads and ", m.num_groups,
             " groups (--mamba-num-groups) must split evenly across ", tp,
             " tensor-parallel ranks");
    return c;
}

// The whole sizes of parts of which each rank holds `local`.
std::vector<int64_t> whole(std::vector<int64_t> local, const TensorParallel& tp) {
    for (int64_t& size : local) size *= tp.size();
    return local;
}

// A_log, D, dt_bias and the gated norm's weight: each rank's heads' (channels').
const ShardSpec kHeadShard{ShardSpec::Kind::column, 0, 1};

// in_proj's output rows [z; x; B; C; dt] and the convolution's channels [x; B; C], each part
// split across the tensor-parallel ranks as Megatron's ColumnParallelLinear holds them.
ShardSpec parts_shard(std::vector<int64_t> parts) {
    ShardSpec s{ShardSpec::Kind::column, 0, 1};
    s.part_sizes = std::move(parts);
    return s;
}

}  // namespace

MambaMixer::MambaMixer(const std::string& prefix, const TransformerConfig& config, Backend& backend)
    : nh_(checked(config).mamba.heads(config.hidden_size) / config.tp.size()),
      hp_(config.mamba.head_dim),
      ng_(config.mamba.num_groups / config.tp.size()),
      n_(config.mamba.state_dim),
      di_(nh_ * hp_),
      k_(config.mamba.conv_width),
      in_proj_(join_name(prefix, "mixer.in_proj"), config.hidden_size,
               config.tp.size() * (2 * di_ + 2 * ng_ * n_ + nh_), false, config.dtype,
               parts_shard(whole({di_, di_, ng_ * n_, ng_ * n_, nh_}, config.tp)), backend,
               config.tp),
      conv_weight_(make_parameter(backend, join_name(prefix, "mixer.conv1d.weight"),
                                  {config.tp.size() * conv_channels(), 1, k_}, config.dtype,
                                  parts_shard(whole({di_, ng_ * n_, ng_ * n_}, config.tp)), true,
                                  config.tp)),
      conv_bias_(make_parameter(backend, join_name(prefix, "mixer.conv1d.bias"),
                                {config.tp.size() * conv_channels()}, config.dtype,
                                parts_shard(whole({di_, ng_ * n_, ng_ * n_}, config.tp)), false,
                                config.tp)),
      dt_bias_(make_parameter(backend, join_name(prefix, "mixer.dt_bias"), {nh_ * config.tp.size()},
                              config.dtype, kHeadShard, false, config.tp)),
      a_log_(make_parameter(backend, join_name(prefix, "mixer.A_log"), {nh_ * config.tp.size()},
                            config.dtype, kHeadShard, false, config.tp)),
      d_(make_parameter(backend, join_name(prefix, "mixer.D"), {nh_ * config.tp.size()},
                        config.dtype, kHeadShard, false, config.tp)),
      norm_weight_(make_parameter(backend, join_name(prefix, "mixer.norm.weight"),
                                  {di_ * config.tp.size()}, config.dtype, kHeadShard, false,
                                  config.tp)),
      out_proj_(join_name(prefix, "mixer.out_proj"), di_ * config.tp.size(), config.hidden_size,
                false, config.dtype, ShardSpec{ShardSpec::Kind::row, 1, 1}, backend, config.tp),
      dtype_(config.dtype),
      compute_(upcast_dtype(config.dtype)),
      backend_(&backend),
      cp_(config.cp) {
    // Megatron's: the convolution as torch's Conv1d default (kaiming uniform, a = sqrt(5): bound
    // 1 / sqrt(K) for weight and bias), dt in [0.001, 0.1] log-uniformly, A in [1, 16], D = 1,
    // out_proj N(0, std / sqrt(num_layers)) (mamba_block.py's _init_weights).
    const double bound = 1.0 / std::sqrt(double(k_));
    conv_weight_.init = {ParameterInit::Kind::uniform, -bound, bound};
    conv_bias_.init = {ParameterInit::Kind::uniform, -bound, bound};
    dt_bias_.init = {ParameterInit::Kind::dt_bias, MambaConfig::dt_min, MambaConfig::dt_max};
    a_log_.init = {ParameterInit::Kind::log_uniform, 1.0, 16.0};
    out_proj_.weight().init = {ParameterInit::Kind::residual_normal};
}

Tensor MambaMixer::forward(const Tensor& x, Saved* saved, MambaState* state, int64_t past) const {
    MT_CHECK(x.dim() == 3, "MambaMixer: x must be (B, T, H), got ", x.describe());
    MT_CHECK(!state || !saved, "MambaMixer: an inference state is for inference only");
    MT_CHECK(!state || !cp_.active(),
             "not supported yet: inference of Mamba layers under context parallelism");
    Saved local;
    Saved& s = saved ? *saved : local;
    Backend& be = *backend_;
    // A bf16 / fp16 model's mixer computes between its two projections in f32, its parameters
    // widened on use (Megatron's kernels compute in f32 too).
    Tensor zxbcdt = be.cast_to(in_proj_.forward(x, saved ? &s.in_proj : nullptr), compute_);
    // Under context parallelism the convolution and the scan run along the whole sequence:
    // every rank gathers it and computes them for all of it, then keeps its own positions
    // (Megatron's ranks split the heads instead; the same numbers).
    if (cp_.active()) zxbcdt = whole_sequence(be, cp_, zxbcdt);
    const auto wide = [&](const Parameter& p) { return be.cast_to(p.value, compute_); };
    const int64_t B = zxbcdt.size(0), T = zxbcdt.size(1), C = conv_channels();
    s.z = columns(be, zxbcdt, 0, di_);
    s.dt = columns(be, zxbcdt, di_ + C, di_ + C + nh_);
    // The convolution reads K - 1 earlier inputs: zeros at the start of a sequence, the state's
    // window in decoding.
    s.conv_in = be.zeros({B, T + k_ - 1, C}, compute_);
    Tensor xbc = s.conv_in.slice(1, k_ - 1, T + k_ - 1);
    be.copy(zxbcdt.slice(2, di_, di_ + C), xbc);
    if (state && past > 0) {
        Tensor window = s.conv_in.slice(1, 0, k_ - 1);
        be.copy(state->conv, window);
    }
    if (state) be.copy(s.conv_in.slice(1, T, T + k_ - 1), state->conv);
    s.conv_out = be.empty({B, T, C}, compute_);
    be.depthwise_conv1d_forward(s.conv_in, wide(conv_weight_).view({C, k_}), wide(conv_bias_),
                                s.conv_out);
    Tensor act = be.empty({B, T, C}, compute_);
    be.unary_forward(ops::UnaryOp::silu, s.conv_out, act);
    s.x = columns(be, act, 0, di_).view({B, T, nh_, hp_});
    s.B = columns(be, act, di_, di_ + ng_ * n_).view({B, T, ng_, n_});
    s.C = columns(be, act, di_ + ng_ * n_, C).view({B, T, ng_, n_});
    s.y = be.empty({B, T, nh_, hp_}, compute_);
    Tensor ssm;
    if (state) {
        if (past == 0) be.fill(state->ssm, 0.0);
        ssm = state->ssm;
    }
    be.ssm_scan_forward(s.x, s.dt, wide(dt_bias_), wide(a_log_), s.B, s.C, wide(d_), s.y, ssm);
    Tensor normed = be.empty({B, T, di_}, compute_);
    s.rstd = be.empty({B, T, ng_}, compute_);
    be.gated_rms_norm_forward(s.y.view({B, T, di_}), s.z, wide(norm_weight_), di_ / ng_,
                              MambaConfig::gated_norm_epsilon, normed, s.rstd);
    if (cp_.active()) normed = own_sequence(be, cp_, normed);
    return out_proj_.forward(be.cast_to(normed, dtype_), saved ? &s.out_proj : nullptr);
}

Tensor MambaMixer::backward(const Tensor& dy, const Saved& s) {
    Backend& be = *backend_;
    const int64_t B = s.z.size(0), T = s.z.size(1), C = conv_channels();
    const auto wide = [&](const Parameter& p) { return be.cast_to(p.value, compute_); };
    // The small parameters' grads are f32 for a bf16 / fp16 model: the ops add into them.
    Tensor dnormed = be.cast_to(be.contiguous(out_proj_.backward(dy, s.out_proj)), compute_);
    if (cp_.active()) dnormed = whole_sequence(be, cp_, dnormed);
    // Under context parallelism every rank computes the whole sequence's part of the mixer's own
    // parameters' grads: the first adds it, the others' go nowhere (the grads are summed over
    // the context-parallel ranks).
    const bool adds = cp_.rank() == 0;
    auto grad = [&](Parameter& p) {
        return adds ? p.grad : be.zeros(p.grad.shape(), p.grad.dtype());
    };
    Tensor dy_scan = be.empty({B, T, di_}, s.y.dtype()), dz = be.empty(s.z.shape(), s.z.dtype());
    Tensor dnorm_weight = grad(norm_weight_);
    be.gated_rms_norm_backward(dnormed, s.y.view({B, T, di_}), s.z, wide(norm_weight_), s.rstd,
                               di_ / ng_, dy_scan, dz, dnorm_weight);
    Tensor dx = be.empty(s.x.shape(), s.x.dtype()), ddt = be.empty(s.dt.shape(), s.dt.dtype());
    Tensor dB = be.empty(s.B.shape(), s.B.dtype()), dC = be.empty(s.C.shape(), s.C.dtype());
    Tensor ddt_bias = grad(dt_bias_), da_log = grad(a_log_), dd = grad(d_);
    be.ssm_scan_backward(s.x, s.dt, wide(dt_bias_), wide(a_log_), s.B, s.C, wide(d_),
                         dy_scan.view(s.y.shape()), dx, ddt, dB, dC, ddt_bias, da_log, dd);
    Tensor dact = be.empty({B, T, C}, s.x.dtype());
    put_columns(be, dx.view({B, T, di_}), dact, 0, di_);
    put_columns(be, dB.view({B, T, ng_ * n_}), dact, di_, di_ + ng_ * n_);
    put_columns(be, dC.view({B, T, ng_ * n_}), dact, di_ + ng_ * n_, C);
    Tensor dconv_out = be.empty({B, T, C}, s.x.dtype());
    be.unary_backward(ops::UnaryOp::silu, s.conv_out, dact, dconv_out);
    Tensor dconv_in = be.empty(s.conv_in.shape(), s.conv_in.dtype());
    Tensor dweight = grad(conv_weight_).view({C, k_}), dconv_bias = grad(conv_bias_);
    be.depthwise_conv1d_backward(dconv_out, s.conv_in, wide(conv_weight_).view({C, k_}), dconv_in,
                                 dweight, dconv_bias);
    Tensor dzxbcdt = be.empty({B, T, 2 * di_ + 2 * ng_ * n_ + nh_}, s.x.dtype());
    put_columns(be, dz, dzxbcdt, 0, di_);
    put_columns(be, dconv_in.slice(1, k_ - 1, T + k_ - 1), dzxbcdt, di_, di_ + C);
    put_columns(be, ddt, dzxbcdt, di_ + C, di_ + C + nh_);
    if (cp_.active()) dzxbcdt = own_sequence(be, cp_, dzxbcdt);
    return in_proj_.backward(be.cast_to(dzxbcdt, dtype_), s.in_proj);
}

void MambaMixer::collect_parameters(std::vector<Parameter*>& out, Norm* fused_norm) {
    // Transformer Engine's LayerNormColumnParallelLinear registers its norm before its weight.
    if (fused_norm) fused_norm->collect_parameters(out);
    in_proj_.collect_parameters(out);
    for (Parameter* p : {&conv_weight_, &conv_bias_, &dt_bias_, &a_log_, &d_, &norm_weight_})
        out.push_back(p);
    out_proj_.collect_parameters(out);
}

std::unique_ptr<MambaState> MambaMixer::make_state(int64_t batch, int64_t capacity) const {
    MT_CHECK(batch > 0 && capacity > 0, "MambaMixer: a state needs a positive batch and capacity");
    auto state = std::make_unique<MambaState>();
    state->conv = backend_->zeros({batch, k_ - 1, conv_channels()}, compute_);
    state->ssm = backend_->zeros({batch, nh_, hp_, n_}, compute_);
    return state;
}

namespace {

class MambaSublayer final : public Sublayer {
  public:
    struct State final : ModuleState {
        MambaMixer::Saved saved;
    };

    MambaSublayer(const std::string& prefix, const TransformerConfig& config, Backend& backend)
        : mixer_(prefix, config, backend), backend_(backend) {}

    Tensor forward(const Tensor& x, DropoutContext& /*ctx: no noise of its own*/,
                   std::unique_ptr<ModuleState>* saved, bool keep_input,
                   const SublayerContext& in) const override {
        if (!in.rows.empty())
            return each_row(
                x, in, backend_, [&](const Tensor& row, SublayerState* s, int64_t past) {
                    return mixer_.forward(row, nullptr, static_cast<MambaState*>(s), past);
                });
        auto* state = static_cast<MambaState*>(in.state);
        if (!saved) return mixer_.forward(x, nullptr, state, in.past);
        auto kept = std::make_unique<State>();
        Tensor y = mixer_.forward(x, &kept->saved);
        if (!keep_input) kept->saved.in_proj = {};
        *saved = std::move(kept);
        return y;
    }
    Tensor backward(const Tensor& dy, const ModuleState& saved, const Tensor& input) override {
        const auto& kept = static_cast<const State&>(saved);
        if (!input.defined()) return mixer_.backward(dy, kept.saved);
        MambaMixer::Saved rebuilt = kept.saved;
        rebuilt.in_proj = mixer_.in_proj().saved_for(input);
        return mixer_.backward(dy, rebuilt);
    }
    void collect_parameters(std::vector<Parameter*>& out, Norm* fused_norm) override {
        mixer_.collect_parameters(out, fused_norm);
    }
    std::unique_ptr<SublayerState> make_state(int64_t batch, int64_t capacity) const override {
        return mixer_.make_state(batch, capacity);
    }
    bool decodes_rows() const override { return true; }  // one row at a time

  private:
    MambaMixer mixer_;
    Backend& backend_;
};

}  // namespace

SublayerSpec mamba_sublayer() {
    return {[](const std::string& prefix, const TransformerConfig& config, Backend& backend) {
                return std::unique_ptr<Sublayer>(
                    std::make_unique<MambaSublayer>(prefix, config, backend));
            },
            "mixer.in_proj", "norm", "", false};
}

}  // namespace mt::nn
