#include "mt/checkpoint/model_weights.h"

#include <map>
#include <set>

#include "mt/checkpoint/reshard.h"
#include "mt/error.h"
#include "mt/nn/parameter.h"

namespace mt {

namespace {

// Loads parameter p from `whole`, the checkpoint's tensor `name` (a tensor-parallel piece takes
// its part).
void load_parameter(nn::Parameter& p, const std::string& name, const Tensor& whole,
                    WeightLoad how) {
    Tensor from = nn::piece_of_whole(p, whole);
    MT_CHECK(from.shape() == p.value.shape(), "model tensor '", name, "' has shape ",
             shape_str(from.shape()), " in the checkpoint but ", shape_str(p.value.shape()),
             " in the model");
    // fp16 / bf16 weights (most Megatron checkpoints) widen exactly into an f32 model; f32
    // weights round into a bf16 one (as torch's copy_ into a bf16 parameter); bf16 and fp16
    // meet through f32 (exact, then one rounding).
    const auto half = [](DType d) { return d == DType::f16 || d == DType::bf16; };
    const auto weight = [&](DType d) { return half(d) || d == DType::f32; };
    if (from.dtype() != p.value.dtype() && weight(from.dtype()) && weight(p.value.dtype())) {
        if (half(from.dtype()) && half(p.value.dtype())) from = cast_float(from, DType::f32);
        from = cast_float(from, p.value.dtype());
    }
    MT_CHECK(from.dtype() == p.value.dtype(), "model tensor '", name, "' is ", from.describe(),
             " in the checkpoint but the model holds ", p.value.describe());
    if (how == WeightLoad::share && from.is_contiguous())
        p.value = from;
    else
        p.value.copy_from(from);
}

// Each parameter and buffer of `model` with the checkpoint tensor (in `names`: name -> what
// `load` takes) under its name or the other --transformer-impl's; the names taken, and their
// aliases, leave `names`.
template <class Load>
void load_each(Model& model, std::map<std::string, size_t>& names, Load load) {
    for (nn::Parameter* p : state_tensors(model)) {
        // A pipeline stage's copy of a tied weight loads the original.
        const std::string& name = p->stored_name();
        auto it = names.find(name);
        if (it == names.end()) it = names.find(other_impl_name(name));
        MT_CHECK(it != names.end(), "the checkpoint has no model tensor '", p->name,
                 "' (the model needs ", shape_str(p->value.shape()), ")");
        load(*p, it->first, it->second);
        names.erase(it);
        for (const std::string& alias : p->aliases) names.erase(alias);
    }
}

}  // namespace

void load_model_weights(const CheckpointState& state, Model& model, WeightLoad how) {
    std::map<std::string, size_t> names;
    for (size_t i = 0; i < state.model.size(); ++i) names[state.model[i].first] = i;
    load_each(model, names, [&](nn::Parameter& p, const std::string& name, size_t i) {
        load_parameter(p, name, state.model[i].second.local, how);
    });
    for (const auto& [name, i] : names)
        MT_CHECK(name.ends_with("._extra_state"), "the checkpoint's model tensor '", name, "' ",
                 shape_str(state.model[i].second.local.shape()),
                 " is not a parameter of this model");
}

void load_model_weights_made(const std::vector<std::string>& names,
                             const std::function<Tensor(size_t)>& make, Model& model, bool strict) {
    std::map<std::string, size_t> left;
    for (size_t i = 0; i < names.size(); ++i) left[names[i]] = i;
    load_each(model, left, [&](nn::Parameter& p, const std::string& name, size_t i) {
        load_parameter(p, name, make(i), WeightLoad::copy);
    });
    if (!strict) return;
    for (const auto& [name, i] : left)
        MT_CHECK(name.ends_with("._extra_state"), "the checkpoint's model tensor '", name,
                 "' is not a parameter of this model");
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
