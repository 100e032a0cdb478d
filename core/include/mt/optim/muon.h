// Megatron core_v0.19's Muon (--optimizer muon: its TensorParallelMuon over emerging_optimizers'
// OrthogonalizedOptimizer): momentum, then the update orthogonalised by Newton-Schulz iterations
// and scaled, for the 2-D weights that are not the word embedding or output layer; Megatron
// gives every other parameter to Adam (--muon-scalar-optimizer adam).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/tensor.h"

namespace mt {
class Communicator;
}
namespace mt::nn {
struct Parameter;
}

namespace mt::optim {

// Whether Megatron's Muon updates `p`: a 2-D weight that is not the word embedding or the output
// layer (is_embedding_or_output_parameter); Adam updates the rest.
MT_API bool managed_by_muon(const nn::Parameter& p);

struct MuonConfig {
    double momentum = 0.9;  // --muon-momentum (argparse's default; OptimizerConfig's is 0.95)
    bool nesterov = false;  // --muon-nesterov
    // --muon-fp32-matmul-prec: "medium" runs the iterations in bf16 (emerging_optimizers casts
    // to bf16 under torch's "medium" float32 matmul precision), "high" / "highest" in f32.
    std::string fp32_matmul_prec = "medium";
    std::string coefficient_type = "quintic";  // --muon-coefficient-type
    int num_ns_steps = 5;                      // --muon-num-ns-steps
    std::string scale_mode = "spectral";       // --muon-scale-mode
    double extra_scale_factor = 1.0;           // --muon-extra-scale-factor
    // --muon-tp-mode: "blockwise" orthogonalises each tensor-parallel rank's piece alone (and
    // scales by its shape); "duplicated" and "distributed" the whole matrix.
    std::string tp_mode = "blockwise";
    // Not --muon-no-split-qkv: a linear_qkv weight's query, key and value rows of each query
    // group are orthogonalised apart, with these row counts (heads / groups x kv_channels,
    // kv_channels, kv_channels); empty when the model has no such weight.
    bool split_qkv = true;
    std::vector<int64_t> qkv_split_shapes;
    // --use-distributed-optimizer (or --optimizer dist_muon): Megatron's layer-wise distributed
    // optimizer, which gives each data-parallel rank whole parameters to update (and their
    // state) and broadcasts them after (optim::Optimizer::shard_layer_wise); checkpoints hold
    // the state as that optimizer keys it.
    bool layer_wise = false;
};

// A parameter's tensor-parallel split for --muon-tp-mode duplicated / distributed: the ranks
// holding its pieces and the dimension they are cut along (-1 or no group: orthogonalised as
// it is, as "blockwise" does everything).
struct MuonTensorParallel {
    Communicator* group = nullptr;
    int partition_dim = -1;
};

// mt::Error naming the flag for a value Megatron (with emerging_optimizers v0.2) refuses.
MT_API void check_muon_config(const MuonConfig& config);

// emerging_optimizers' get_muon_scale_factor(rows, cols, mode).
MT_API double muon_scale_factor(int64_t rows, int64_t cols, const std::string& mode);

// newton_schulz(x, steps, coefficient_type) of a 2-D f32 matrix: normalised by its Frobenius
// norm, transposed when it has more rows than columns, X <- a X + (b A + c A A) X with A = X X^T
// per step (in bf16 under "medium", each product rounded as torch's bf16 addmm rounds it).
// With `group` (emerging_optimizers' "distributed" form) x is one rank's piece: the norm and
// each A are summed over the group, and `transpose` is given (the piece cut along the rows).
MT_API Tensor newton_schulz(Backend& backend, const Tensor& x, const MuonConfig& config,
                            Communicator* group = nullptr, std::optional<bool> transpose = {});

// TensorParallelMuon.orthogonalize: the scaled Newton-Schulz orthogonalisation of a parameter's
// momentum-ed gradient `update` (2-D f32, this tensor-parallel rank's piece, blockwise), a
// linear_qkv weight's query, key and value rows of each query group apart when split_qkv.
// With tp_mode duplicated the pieces are gathered and orthogonalised whole, with distributed
// together in place; the scale factor is the whole matrix's.
MT_API Tensor muon_orthogonalize(Backend& backend, const Tensor& update, const std::string& name,
                                 const MuonConfig& config, const MuonTensorParallel& tp = {});

// One Muon step on f32 `param` (in place): decoupled weight decay param -= lr wd param, the
// momentum buffer lerped towards grad x grad_scale by 1 - momentum, (Nesterov's look-ahead,)
// then param -= lr x orthogonalize(update).
MT_API void muon_step(Backend& backend, Tensor& param, const Tensor& grad, Tensor& momentum_buffer,
                      const std::string& name, double lr, double weight_decay, double grad_scale,
                      const MuonConfig& config, const MuonTensorParallel& tp = {});

}  // namespace mt::optim
