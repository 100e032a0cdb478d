// The optimizers of megatron-train: Adam with decoupled weight decay (Megatron's --optimizer
// adam, i.e. torch AdamW), SGD with momentum (--optimizer sgd, torch SGD: coupled weight
// decay) and core_v0.19's Muon (--optimizer muon: Muon for the 2-D weights but the word
// embedding and output layer, Adam for the rest, as Megatron chains the two). Parameters without
// weight decay (biases, norms) form Megatron's wd_mult = 0 group.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/optim/muon.h"
#include "mt/tensor.h"

namespace mt {
class Communicator;
}
namespace mt::nn {
struct Parameter;
}

namespace mt::optim {

enum class OptimizerType { adam, sgd, muon };

// "adam" | "sgd" | "muon" (also Megatron's deprecated "dist_muon").
MT_API OptimizerType parse_optimizer_type(const std::string& text);
// "adam" | "sgd" | "muon": the name checkpoints carry.
MT_API std::string optimizer_type_name(OptimizerType type);

struct OptimizerConfig {
    OptimizerType type = OptimizerType::adam;
    double adam_beta1 = 0.9, adam_beta2 = 0.999, adam_eps = 1e-8;  // --adam-beta1/2, --adam-eps
    double sgd_momentum = 0.9;                                     // --sgd-momentum
    MuonConfig muon;                                               // --muon-*
    // core_v0.19's muP width multiplier (--use-mup): != 1 moves some parameters to a learning
    // rate of their own (step's mup_lr, the schedule over max and min lr / or x it) as
    // get_mup_config_overrides does. Adam: the hidden matrices (Parameter::mup_hidden), their
    // eps / it too; SGD: the others ("vector-like"), but the word embeddings and output layer
    // under --decoupled-lr.
    double mup_width_mult = 1.0;
};

// Whether muP moves `p` to its own learning rate in an optimizer of `config`, with `decoupled`
// (--decoupled-lr given).
MT_API bool mup_scaled(const OptimizerConfig& config, const nn::Parameter& p, bool decoupled);

class MT_API Optimizer {
  public:
    // The parameters live on `backend`, where the optimizer keeps its state and computes. f32
    // parameters are updated in place; bf16 and f16 ones through f32 master copies (Megatron's
    // Float16OptimizerWithFloat16Params) taken from their values now: call reload_model_params()
    // after the values change other than by step() (a checkpoint's weights).
    Optimizer(Backend& backend, std::vector<nn::Parameter*> parameters, OptimizerConfig config);

    // One update of every parameter from its grad: `lr` and `weight_decay` as the schedule
    // gives them now (weight decay only reaches parameters that take it); embedding_lr, when
    // given, is the learning rate of the embedding and output weights instead (--decoupled-lr);
    // mup_lr, with a muP width multiplier, that of the parameters muP moves (mup_scaled);
    // each grad read times grad_scale (clipping's factor, optim::clip_coefficient).
    void step(double lr, double weight_decay, std::optional<double> embedding_lr = {},
              double grad_scale = 1.0, std::optional<double> mup_lr = {});
    // grad = 0 for every parameter.
    void zero_grad();
    // masters = the parameters' values (Megatron's reload_model_params).
    void reload_model_params();

    const OptimizerConfig& config() const { return config_; }
    Backend& backend() const { return *backend_; }
    // The hyper-parameters a checkpoint's parameter groups carry (betas, eps, momentum), as
    // torch's load_state_dict restores them; the type must stay the same.
    void set_config(const OptimizerConfig& config);

    int64_t steps() const { return steps_; }
    // Restores the update count (Adam's bias correction) from a checkpoint.
    void set_steps(int64_t steps) { steps_ = steps; }
    const std::vector<nn::Parameter*>& parameters() const { return parameters_; }
    // Per-parameter state, in parameter order: Adam's exp_avg / exp_avg_sq, SGD's and Muon's
    // momentum buffer in first() (second() undefined). Exposed for checkpoints.
    std::vector<Tensor>& first() { return first_; }
    std::vector<Tensor>& second() { return second_; }
    // The f32 master copy of each bf16 / f16 parameter (Megatron's fp32_from_float16 params),
    // in parameter order; undefined for f32 parameters. Exposed for checkpoints.
    std::vector<Tensor>& masters() { return masters_; }
    // With --optimizer muon: whether parameter i is Muon's (else Adam's).
    bool muon_managed(size_t i) const { return !muon_.empty() && muon_[i]; }

    // Megatron's layer-wise distributed optimizer (Muon with --use-distributed-optimizer): each
    // parameter is updated by one rank of its group (`group_of`: the data-parallel ranks, or for
    // an expert the ranks that hold it), which alone keeps its state (first, second and masters
    // undefined elsewhere), and broadcast to the others after each step. Owners are dealt by
    // size in ping-pong order, as Megatron's LayerWiseDistributedOptimizer deals them.
    // Collective over the groups; call before the first step.
    void shard_layer_wise(const std::function<Communicator&(const nn::Parameter&)>& group_of);
    bool layer_wise() const { return !owner_.empty(); }
    // --muon-tp-mode duplicated / distributed: each Muon parameter's tensor-parallel split.
    void set_tensor_parallel(const std::function<MuonTensorParallel(const nn::Parameter&)>& of);
    // Every parameter's state (first, second, masters as the accessors lay them out), the
    // owners' broadcast to their groups when sharded layer-wise: what checkpoints save.
    struct State {
        std::vector<Tensor> first, second, masters;
    };
    State whole_state();

  private:
    // Whether parameter i keeps Adam's second moment (second()), and whether `p` is updated
    // through an f32 master copy (masters()).
    bool adam_moments(size_t i) const;
    static bool half_precision(const nn::Parameter& p);

    Backend* backend_;
    std::vector<nn::Parameter*> parameters_;
    OptimizerConfig config_;
    std::vector<Tensor> first_, second_, masters_;
    std::vector<bool> muon_;  // per parameter, with --optimizer muon
    // Sharded layer-wise: per parameter its group and the rank in it that updates it.
    std::vector<Communicator*> group_;
    std::vector<int> owner_;
    std::vector<MuonTensorParallel> tp_;  // per parameter, when set
    int64_t steps_ = 0;
};

}  // namespace mt::optim
