#include "mt/checkpoint/model_weights.h"

#include <map>
#include <set>

#include "mt/checkpoint/reshard.h"
#include "mt/error.h"
#include "mt/nn/parameter.h"

namespace mt {

void load_model_weights(const CheckpointState& state, Model& model, WeightLoad how) {
    std::map<std::string, const Tensor*> tensors;
    for (const auto& [name, t] : state.model) tensors[name] = &t.local;
    for (nn::Parameter* p : state_tensors(model)) {
        // A pipeline stage's copy of a tied weight loads the original.
        const std::string& name = p->stored_name();
        auto it = tensors.find(name);
        if (it == tensors.end()) it = tensors.find(other_impl_name(name));
        MT_CHECK(it != tensors.end(), "the checkpoint has no model tensor '", p->name,
                 "' (the model needs ", shape_str(p->value.shape()), ")");
        Tensor from = nn::piece_of_whole(*p, *it->second);
        MT_CHECK(from.shape() == p->value.shape(), "model tensor '", it->first, "' has shape ",
                 shape_str(from.shape()), " in the checkpoint but ", shape_str(p->value.shape()),
                 " in the model");
        // fp16 / bf16 weights (most Megatron checkpoints) widen exactly into an f32 model; f32
        // weights round into a bf16 one (as torch's copy_ into a bf16 parameter); bf16 and fp16
        // meet through f32 (exact, then one rounding).
        const auto half = [](DType d) { return d == DType::f16 || d == DType::bf16; };
        const auto weight = [&](DType d) { return half(d) || d == DType::f32; };
        if (from.dtype() != p->value.dtype() && weight(from.dtype()) && weight(p->value.dtype())) {
            if (half(from.dtype()) && half(p->value.dtype())) from = cast_float(from, DType::f32);
            from = cast_float(from, p->value.dtype());
        }
        MT_CHECK(from.dtype() == p->value.dtype(), "model tensor '", it->first, "' is ",
                 from.describe(), " in the checkpoint but the model holds ", p->value.describe());
        if (how == WeightLoad::share && from.is_contiguous())
            p->value = from;
        else
            p->value.copy_from(from);
        tensors.erase(it);
        for (const std::string& alias : p->aliases) tensors.erase(alias);
    }
    for (const auto& [name, t] : tensors)
        MT_CHECK(name.ends_with("._extra_state"), "the checkpoint's model tensor '", name, "' ",
                 shape_str(t->shape()), " is not a parameter of this model");
}

void keep_model_tensors(CheckpointState& state, Model& model) {
    std::set<std::string> names;
    for (const nn::Parameter* p : state_tensors(model)) {
        const std::string& name = p->stored_name();
        names.insert(name);
        names.insert(other_impl_name(name));
        names.insert(p->aliases.begin(), p->aliases.end());
    }
    std::erase_if(state.model, [&](const auto& entry) {
        return !names.count(entry.first) && !entry.first.ends_with("._extra_state");
    });
    if (state.optimizer)
        std::erase_if(state.optimizer->params,
                      [&](const OptimizerParamState& p) { return !names.count(p.name); });
}

}  // namespace mt
