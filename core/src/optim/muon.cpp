#include "mt/optim/muon.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string_view>

#include "mt/communicator.h"
#include "mt/error.h"
#include "mt/nn/parameter.h"
#include "mt/parallel/collectives.h"

namespace mt::optim {

namespace {

struct Coefficients {
    float a, b, c;
};

// emerging_optimizers v0.2.0's _COEFFICIENT_SETS (the version Megatron core_v0.19 pins).
const std::vector<Coefficients>& coefficient_set(const std::string& type) {
    static const std::vector<Coefficients> simple = {{3.4445f, -4.7750f, 2.0315f}};
    static const std::vector<Coefficients> quintic = {{4.0848f, -6.8946f, 2.9270f},
                                                      {3.9505f, -6.3029f, 2.6377f},
                                                      {3.7418f, -5.5913f, 2.3037f},
                                                      {2.8769f, -3.1427f, 1.2046f},
                                                      {2.8366f, -3.0525f, 1.2012f}};
    static const std::vector<Coefficients> polar_express = {
        {8.2051f, -22.9019f, 16.4607f}, {4.0664f, -2.8612f, 0.5184f}, {3.9096f, -2.8234f, 0.5250f},
        {3.2856f, -2.4153f, 0.4853f},   {2.2779f, -1.6198f, 0.3985f}, {1.8726f, -1.2307f, 0.3585f},
        {1.8564f, -1.2132f, 0.3568f},   {1.8750f, -1.2500f, 0.3750f}};
    static const std::vector<Coefficients> aol = {{4.0098f, -7.0585f, 2.4635f},
                                                  {3.4585f, -5.5479f, 2.5959f},
                                                  {2.7573f, -3.2939f, 1.4254f},
                                                  {2.7215f, -3.0494f, 1.3169f}};
    if (type == "simple") return simple;
    if (type == "quintic") return quintic;
    if (type == "polar_express") return polar_express;
    if (type == "aol") return aol;
    MT_FAIL("--muon-coefficient-type ", type.substr(0, 100),
            ": supported are simple, quintic, polar_express and aol (emerging_optimizers v0.2, "
            "which Megatron core_v0.19 pins)");
}

// The coefficients of step i: the set cycled, polar_express's last repeated.
Coefficients step_coefficients(const std::string& type, int i) {
    const std::vector<Coefficients>& set = coefficient_set(type);
    if (type == "polar_express") return set[std::min<size_t>(size_t(i), set.size() - 1)];
    return set[size_t(i) % set.size()];
}

// torch.addmm(c_in, a, b, alpha, beta) into a new tensor: beta c_in + alpha a b.
Tensor addmm(Backend& backend, const Tensor& c_in, const Tensor& a, const Tensor& b, float alpha,
             float beta) {
    Tensor out = backend.empty(c_in.shape(), c_in.dtype());
    backend.copy(c_in, out);
    backend.gemm(Transpose::no, Transpose::no, alpha, a, b, beta, out);
    return out;
}

}  // namespace

bool managed_by_muon(const nn::Parameter& p) {
    return p.value.dim() == 2 && !p.embedding_or_output;
}

void check_muon_config(const MuonConfig& config) {
    MT_CHECK(config.num_ns_steps >= 1, "--muon-num-ns-steps ", config.num_ns_steps,
             ": must be at least 1");
    coefficient_set(config.coefficient_type);
    muon_scale_factor(1, 1, config.scale_mode);
    MT_CHECK(config.fp32_matmul_prec == "medium" || config.fp32_matmul_prec == "high" ||
                 config.fp32_matmul_prec == "highest",
             "--muon-fp32-matmul-prec ", config.fp32_matmul_prec.substr(0, 100),
             ": torch.set_float32_matmul_precision takes highest, high or medium");
    MT_CHECK(config.tp_mode == "blockwise" || config.tp_mode == "duplicated" ||
                 config.tp_mode == "distributed",
             "--muon-tp-mode ", config.tp_mode.substr(0, 100),
             ": supported are blockwise, duplicated and distributed");
}

double muon_scale_factor(int64_t rows, int64_t cols, const std::string& mode) {
    if (mode == "shape_scaling") return std::sqrt(std::max(1.0, double(rows) / double(cols)));
    if (mode == "spectral") return std::sqrt(double(std::max(rows, cols)));
    if (mode == "unit_rms_norm") return std::sqrt(double(rows) / double(cols));
    MT_FAIL("--muon-scale-mode ", mode.substr(0, 100),
            ": supported are spectral, unit_rms_norm and shape_scaling");
}

Tensor newton_schulz(Backend& backend, const Tensor& x, const MuonConfig& config,
                     Communicator* group, std::optional<bool> transposed) {
    MT_CHECK(x.dim() == 2 && x.dtype() == DType::f32, "newton_schulz: a 2-D f32 matrix, got ",
             x.describe());
    // Whitened along the smaller dimension.
    const bool transpose = transposed.value_or(x.shape()[0] > x.shape()[1]);
    Tensor y = backend.contiguous(transpose ? x.transpose(0, 1) : x);
    // F.normalize(p=2, dim=(-2, -1), eps=1e-7): y / max(||y||_F, eps).
    std::vector<double> squares{backend.dot(y, y)};
    if (group) parallel::all_reduce_values(*group, squares, ReduceOp::sum);
    const double norm = std::sqrt(squares[0]);
    Tensor normalized = backend.empty(y.shape(), DType::f32);
    backend.scale(y, float(1.0 / std::max(norm, 1e-7)), normalized);
    const DType dtype = config.fp32_matmul_prec == "medium" ? DType::bf16 : DType::f32;
    Tensor X = backend.cast_to(normalized, dtype);
    const int64_t m = X.shape()[0];
    Tensor A = backend.empty({m, m}, dtype);
    for (int i = 0; i < config.num_ns_steps; ++i) {
        const Coefficients k = step_coefficients(config.coefficient_type, i);
        backend.gemm(Transpose::no, Transpose::yes, 1.0f, X, X, 0.0f, A);  // A = X X^T
        if (group && A.dtype() == DType::f32) {
            group->all_reduce(A, ReduceOp::sum);
        } else if (group) {  // summed in f32, rounded once, as a bf16 all-reduce of two ranks
            Tensor sum = backend.cast_to(A, DType::f32);
            group->all_reduce(sum, ReduceOp::sum);
            backend.cast(sum, A);
        }
        const Tensor B = addmm(backend, A, A, A, k.c, k.b);  // b A + c A A
        X = addmm(backend, X, B, X, 1.0f, k.a);              // a X + B X
    }
    Tensor out = backend.cast_to(X, DType::f32);
    return transpose ? backend.contiguous(out.transpose(0, 1)) : out;
}

namespace {

// get_muon_scale_factor(rows, cols) x extra_scale_factor times the orthogonalised x, as
// TensorParallelMuon's scaled_orthogonalize_fn multiplies (two products); the rows and columns
// the whole matrix's when x is a tensor-parallel piece and the mode joins them.
Tensor scaled_orthogonal(Backend& backend, const Tensor& x, const MuonConfig& config,
                         const MuonTensorParallel& tp) {
    const bool joined = tp.group && tp.partition_dim >= 0 && config.tp_mode != "blockwise";
    Shape whole = x.shape();
    Tensor orth;
    if (!joined) {
        orth = newton_schulz(backend, x, config);
    } else if (config.tp_mode == "duplicated") {
        const Tensor gathered = parallel::all_gather_along(*tp.group, x, tp.partition_dim);
        whole = gathered.shape();
        orth = parallel::split_along(*tp.group, newton_schulz(backend, gathered, config),
                                     tp.partition_dim);
    } else {  // distributed: whitened along the dimension the pieces are cut along
        whole[size_t(tp.partition_dim)] *= tp.group->size();
        orth = newton_schulz(backend, x, config, tp.group, tp.partition_dim == 0);
    }
    const double factor = muon_scale_factor(whole[0], whole[1], config.scale_mode);
    backend.scale(orth, float(factor), orth);
    backend.scale(orth, float(config.extra_scale_factor), orth);
    return orth;
}

}  // namespace

Tensor muon_orthogonalize(Backend& backend, const Tensor& update, const std::string& name,
                          const MuonConfig& config, const MuonTensorParallel& tp) {
    MT_CHECK(update.dim() == 2, "Muon updates 2-D weights, got ", name, " ", update.describe());
    const int64_t per_group =
        std::accumulate(config.qkv_split_shapes.begin(), config.qkv_split_shapes.end(), int64_t(0));
    // Megatron tags `...linear_qkv.weight` parameters whose rows divide into query groups.
    const bool qkv = config.split_qkv && per_group > 0 &&
                     std::string_view(name).ends_with("linear_qkv.weight") &&
                     update.shape()[0] % per_group == 0;
    if (!qkv) return scaled_orthogonal(backend, update, config, tp);
    const int64_t groups = update.shape()[0] / per_group, cols = update.shape()[1];
    const Tensor grouped = update.view({groups, per_group, cols});
    Tensor out = backend.empty(update.shape(), DType::f32);
    Tensor out_grouped = out.view({groups, per_group, cols});
    int64_t at = 0;
    for (int64_t rows : config.qkv_split_shapes) {
        const Tensor part = backend.contiguous(grouped.slice(1, at, at + rows));
        const Tensor orth =
            scaled_orthogonal(backend, part.view({groups * rows, cols}), config, tp);
        Tensor dst = out_grouped.slice(1, at, at + rows);
        backend.copy(orth.view({groups, rows, cols}), dst);
        at += rows;
    }
    return out;
}

void muon_step(Backend& backend, Tensor& param, const Tensor& grad, Tensor& momentum_buffer,
               const std::string& name, double lr, double weight_decay, double grad_scale,
               const MuonConfig& config, const MuonTensorParallel& tp) {
    // Decoupled weight decay: p.add_(p, alpha=-wd lr).
    if (weight_decay != 0.0) backend.axpy(float(-weight_decay * lr), param, param);
    // The gradient as clipping left it (grad x clip coefficient).
    Tensor g = backend.empty(grad.shape(), DType::f32);
    backend.scale(grad, float(grad_scale), g);
    // momentum_buffer.lerp_(g, 1 - momentum): m + (1 - momentum)(g - m).
    const float weight = float(1.0 - config.momentum);
    Tensor diff = backend.empty(grad.shape(), DType::f32);
    backend.copy(g, diff);
    backend.axpy(-1.0f, momentum_buffer, diff);
    backend.axpy(weight, diff, momentum_buffer);
    Tensor update = momentum_buffer;
    if (config.nesterov) {
        // g.lerp(m, momentum) = m - (m - g)(1 - momentum) (torch's form for weights >= 0.5).
        update = backend.empty(grad.shape(), DType::f32);
        backend.copy(momentum_buffer, update);
        backend.copy(momentum_buffer, diff);
        backend.axpy(-1.0f, g, diff);
        backend.axpy(-(1.0f - float(config.momentum)), diff, update);
    }
    const Tensor orth = muon_orthogonalize(backend, update, name, config, tp);
    backend.axpy(float(-lr), orth, param);
}

}  // namespace mt::optim
