#include "pretrained_checkpoint.h"

#include <set>
#include <vector>

#include "mt/checkpoint/model_weights.h"
#include "mt/checkpoint/reshard.h"
#include "mt/error.h"
#include "mt/nn/parameter.h"
#include "mt/train/checkpoint_io.h"

namespace mt::eval {

int64_t load_task_model(const std::filesystem::path& dir, Model& model, optim::Optimizer* optimizer,
                        const std::string& head_prefix, const parallel::ParallelState& run,
                        const std::function<void(const std::string&)>& print) {
    std::vector<ParameterInfo> params;
    for (const nn::Parameter* p : state_tensors(model)) params.push_back(nn::describe(*p));
    CheckpointState state = train::read_model_tensors(dir, params);
    print(" loading checkpoint from " + dir.string() + " at iteration " +
          std::to_string(state.iteration));
    std::set<std::string> present;
    for (const auto& [name, tensor] : state.model) present.insert(name);
    bool head_missing = false;
    for (nn::Parameter* p : state_tensors(model)) {
        if (present.count(p->name) || present.count(other_impl_name(p->name))) continue;
        MT_CHECK(p->name.starts_with(head_prefix + "."), "the checkpoint ", dir.string(),
                 " has no model tensor '", p->name, "' (the model needs ",
                 shape_str(p->whole_shape), ")");
        // The head keeps its initialisation: its own value goes in as the checkpoint's.
        MT_CHECK(p->tp_size == 1 || p->shard.kind == ShardSpec::Kind::replicated,
                 "not supported yet: a task head split over tensor-parallel ranks ('", p->name,
                 "')");
        state.model.emplace_back(p->name, ShardedTensor::whole(p->value.clone()));
        head_missing = true;
    }
    if (head_missing)
        print("***WARNING*** could not find " + head_prefix +
              " in the checkpoint, initializing to random");
    load_model_weights(state, model, WeightLoad::copy);
    // Megatron's optimizer.reload_model_params(): the masters follow the loaded weights.
    if (optimizer) optimizer->reload_model_params();
    print("  successfully loaded checkpoint from " + dir.string() + " [ t " +
          std::to_string(run.tp().rank() + 1) + "/" + std::to_string(run.tp().size()) +
          ", p 1/1 ] at iteration " + std::to_string(state.iteration));
    return state.iteration;
}

}  // namespace mt::eval
