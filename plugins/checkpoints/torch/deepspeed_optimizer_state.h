// The optimizer state DeepSpeed keeps apart from the model (ZeRO's shards, universal
// checkpoints), per parameter, and its reading as the torch optimizer state_dict of the Megatron
// checkpoint the legacy reader pairs with the model.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "mt/io/py_value.h"
#include "mt/tensor.h"

namespace mt::plugins::torch_ckpt {

// One parameter: its DeepSpeed name, fp32 weights, Adam moments and step count.
struct DeepSpeedParamState {
    std::string name;
    Tensor fp32, exp_avg, exp_avg_sq;
    io::PyValue step;
};

// A param group: torch's settings (lr, betas, wd_mult, ...; no "params") and its parameters.
struct DeepSpeedParamGroup {
    io::PyValue settings;
    std::vector<DeepSpeedParamState> params;
};

// `groups` as the torch optimizer state_dict of a checkpoint whose model holds `order` (flat
// parameter names, in its order): {"state", "param_groups"} with each group's ids in the
// model's order, wrapped as {"optimizer": ..., "fp32_from_fp16_params": ...} with
// `master_weights` (a bf16 or fp16 model). `model_name` maps a DeepSpeed name to the model's, or
// to "" for a parameter the model does not hold (a stage's copy of another's); mt::Error naming
// `what` for one it maps to a name the model lacks.
io::PyValue torch_optimizer_state(const std::vector<DeepSpeedParamGroup>& groups,
                                  const std::function<std::string(const std::string&)>& model_name,
                                  const std::vector<std::string>& order, bool master_weights,
                                  const std::string& what);

}  // namespace mt::plugins::torch_ckpt
