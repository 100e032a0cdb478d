#include "torch_dist_optimizer.h"

#include <cctype>

#include "mt/checkpoint/reshard.h"
#include "mt/error.h"
#include "mt/model.h"
#include "torch_dist_flattened.h"
#include "torch_state.h"

namespace mt::plugins::torch_dist {

namespace {

using io::PyKind;
using io::PyValue;

// The moments an optimizer keeps per parameter, as torch names them.
std::vector<std::string> moment_names(const std::string& type) {
    if (type == "adam") return {"exp_avg", "exp_avg_sq"};
    return {"momentum_buffer"};
}

// `name` of p, whose parameter's value here is `value`.
const Tensor& moment(const OptimizerParamState& p, const std::string& name, const Tensor& value) {
    if (name == kFullyReshardableParamName) return p.main_param.defined() ? p.main_param : value;
    if (name == kMasterName) return p.main_param;
    return name == "exp_avg_sq" ? p.exp_avg_sq : p.exp_avg;
}

double step_value(const PyValue& v, const std::string& where) {
    if (v.kind() != PyKind::tensor) return v.as_double();
    const Tensor& t = v.as_tensor();
    MT_CHECK(t.numel() == 1, where, ": optimizer common_step is ", t.describe());
    if (t.dtype() == DType::f32) return *t.data<float>();
    if (t.dtype() == DType::f64) return *t.data<double>();
    if (t.dtype() == DType::i64) return double(*t.data<int64_t>());
    MT_FAIL(where, ": optimizer common_step has dtype ", dtype_name(t.dtype()));
}

const Tensor* find_tensor(const NamedTensors& tensors, const std::string& name) {
    for (const auto& [k, t] : tensors)
        if (k == name) return &t;
    return nullptr;
}

}  // namespace

PyValue optimizer_common_to_py(const OptimizerCheckpoint& optimizer) {
    PyValue groups = torch_ckpt::param_groups_without_ids(optimizer);
    PyValue state = PyValue::dict();
    // Megatron stores the step only once torch has one (after the first update).
    if (optimizer.type == "adam" && optimizer.step > 0) {
        Tensor step = Tensor::empty({}, DType::f32);
        *step.data<float>() = float(optimizer.step);
        state.dict_ref().set("common_step", PyValue::tensor(step));
    }
    PyValue out = PyValue::dict();
    // (Muon's state is its momentum buffers alone, all sharded tensors: dist_checkpointing drops
    // the emptied dict.)
    if (optimizer.type != "muon") out.dict_ref().set("state", std::move(state));
    out.dict_ref().set("param_groups", std::move(groups));
    if (!optimizer.has_master_weights()) return out;
    // Float16OptimizerWithFloat16Params wraps torch's state dict (beside its grad scaler); its
    // fp32_from_fp16_params are all sharded tensors, so dist_checkpointing leaves no trace of
    // them in common.pt.
    PyValue wrapped = PyValue::dict();
    wrapped.dict_ref().set("optimizer", std::move(out));
    if (optimizer.grad_scaler)
        wrapped.dict_ref().set("grad_scaler",
                               torch_ckpt::grad_scaler_to_py(*optimizer.grad_scaler));
    return wrapped;
}

std::vector<StoredTensor> optimizer_moments(const OptimizerCheckpoint& optimizer,
                                            const ShardedTensors& model, const KeyLayout& layout,
                                            const std::string& chain, const ShardedTensors* whole) {
    MT_CHECK(optimizer.params.size() == model.size(), "torch_dist: optimizer state for ",
             optimizer.params.size(), " tensors, the model has ", model.size());
    std::vector<StoredTensor> out;
    std::vector<std::string> names = moment_names(optimizer.type);
    if (optimizer.layout == DistributedOptimizerLayout::fully_reshardable)
        names.insert(names.begin(), kFullyReshardableParamName);
    else if (optimizer.has_master_weights())
        names.insert(names.begin(), kMasterName);
    for (const std::string& m : names) {
        ShardedTensors tensors;
        for (size_t i = 0; i < model.size(); ++i) {
            const OptimizerParamState& p = optimizer.params[i];
            const auto& [name, t] = model[i];
            MT_CHECK(p.name == name || other_impl_name(p.name) == name,
                     "torch_dist: optimizer state ", i, " is ", p.name, ", the model tensor ",
                     name);
            tensors.emplace_back(
                name, ShardedTensor{moment(p, m, t.local), t.global_shape, t.global_offset});
        }
        for (StoredTensor& s : stack(tensors, layout, chain + kMomentPrefix + m + ".", whole))
            out.push_back(std::move(s));
    }
    return out;
}

OptimizerCheckpoint optimizer_from_py(
    const PyValue& common, const NamedTensors& moments,
    const std::vector<std::pair<std::string, ShardedTensor>>& model, int64_t iteration,
    const std::string& where) {
    const PyValue* sharding = nullptr;  // content_metadata's distrib_optim_sharding_type
    if (const PyValue* meta = common.find("content_metadata"); meta && meta->kind() == PyKind::dict)
        sharding = meta->find("distrib_optim_sharding_type");
    for (const auto& [name, t] : moments)
        MT_CHECK(name.starts_with("exp_avg.") || name.starts_with("exp_avg_sq.") ||
                     name.starts_with("momentum_buffer.") ||
                     name.starts_with(std::string(kMasterName) + "."),
                 "not supported yet: optimizer state ", kMomentPrefix, name, " in ", where);
    // FP32Optimizer: torch's state dict (the step in state.common_step); Float16Optimizer...:
    // {'optimizer': that}; DistributedOptimizer: {'optimizer': {'param_groups'},
    // 'param_state_sharding_type'}, the step in each group.
    // A ChainedOptimizer's: {0: ..., 1: ...}: the dense parameters' and the experts', or
    // (core_v0.19's Muon) Muon's parts and then Adam's.
    const PyValue& stored = common["optimizer"];
    std::vector<const PyValue*> tops;
    if (stored.kind() == PyKind::dict && torch_ckpt::find_int_key(stored, 0)) {
        while (const PyValue* part = torch_ckpt::find_int_key(stored, int64_t(tops.size())))
            tops.push_back(part);
        MT_CHECK(tops.size() == stored.dict_ref().items.size(), "not supported yet: the optimizer ",
                 "layout of ", where, " (chained optimizers not numbered from 0)");
    } else {
        tops.push_back(&stored);
    }
    const bool chained = tops.size() > 1;
    struct Part {
        const PyValue* top;
        const PyValue* opt;  // torch's state dict (or the DistributedOptimizer's groups)
        std::string type;
    };
    std::vector<Part> parts;
    const bool distributed =
        tops[0]->kind() == PyKind::dict && tops[0]->find("param_state_sharding_type") != nullptr;
    for (const PyValue* top : tops) {
        const bool wrapped = top->kind() == PyKind::dict && top->find("optimizer");
        const PyValue& opt = wrapped ? (*top)["optimizer"] : *top;
        MT_CHECK(opt.kind() == PyKind::dict && opt.find("param_groups") &&
                     opt["param_groups"].kind() == PyKind::list &&
                     !opt["param_groups"].items().empty() &&
                     (top->kind() == PyKind::dict &&
                      (top->find("param_state_sharding_type") != nullptr) == distributed),
                 "not supported yet: the optimizer layout of ", where,
                 " (neither Megatron's FP32Optimizer nor its DistributedOptimizer, or both)");
        // Adam's groups have betas, torch SGD's dampening, Muon's (emerging_optimizers') a
        // momentum alone.
        const PyValue& g = opt["param_groups"].items()[0];
        const std::string type = g.find("betas")       ? "adam"
                                 : g.find("dampening") ? "sgd"
                                 : g.find("momentum")  ? "muon"
                                                       : "";
        MT_CHECK(!type.empty(), "not supported yet: the optimizer of ", where,
                 " (its param groups are neither Adam's, SGD's nor Muon's)");
        // (SGD's and Muon's state is their momentum buffers alone, all sharded tensors:
        // core_v0.19's dist_checkpointing drops the emptied dict.)
        MT_CHECK(distributed || type == "muon" || type == "sgd" || opt.find("state"),
                 "not supported yet: the optimizer layout of ", where, " (no state)");
        parts.push_back({top, &opt, type});
    }
    OptimizerCheckpoint o;
    o.type = parts[0].type;
    for (const Part& part : parts) {
        if (part.type == "muon") o.type = "muon";
        MT_CHECK(part.type == parts[0].type || part.type == "muon" || parts[0].type == "muon",
                 "not supported yet: the optimizer layout of ", where, " (a chain of ",
                 parts[0].type, " and ", part.type, ")");
    }
    // (Muon's layer-wise distributed optimizer saves whole tensors, as a plain one; so does
    // core_v0.19's fully_reshardable layout; its dp_reshardable buckets come here as moments.)
    const std::string layout =
        sharding && sharding->kind() == PyKind::string ? sharding->as_string() : "";
    if (sharding)
        MT_CHECK(layout == kFullyShardedModelSpace || layout == kFullyReshardable ||
                     layout == kDpReshardable,
                 "not supported yet: the distributed optimizer's ", io::short_repr(*sharding),
                 " state in ", where, " (read: ", kFullyShardedModelSpace, ", ", kFullyReshardable,
                 ", ", kDpReshardable, ")");
    o.layer_wise = o.type == "muon" && sharding != nullptr;
    using Layout = DistributedOptimizerLayout;
    if (distributed && !o.layer_wise)
        o.layout = layout == kFullyReshardable ? Layout::fully_reshardable
                   : layout == kDpReshardable  ? Layout::dp_reshardable
                                               : Layout::fully_sharded_model_space;
    // The part whose state holds the step: Adam's (Muon counts none).
    const Part* stepped = &parts[0];
    for (const Part& part : parts)
        if (part.type != "muon") {
            stepped = &part;
            break;
        }
    const PyValue& top = *stepped->top;
    if (const PyValue* scaler =
            top.find("optimizer") && !distributed ? top.find("grad_scaler") : nullptr)
        o.grad_scaler = torch_ckpt::grad_scaler_from_py(*scaler, where);
    bool decoupled_groups = false, expert_groups = false;
    for (const Part& part : parts)
        for (const PyValue& g : (*part.opt)["param_groups"].items()) {
            const PyValue* is_decoupled = g.find("is_decoupled_lr");
            const bool decoupled =
                is_decoupled && is_decoupled->kind() == PyKind::boolean && is_decoupled->as_bool();
            // core_v0.19's groups of other overrides of the schedule (muP's) hold their own lr,
            // max and min lr and eps: the run's are the others'.
            const PyValue* default_config = g.find("default_config");
            o.core_v0_19 = o.core_v0_19 || default_config;
            if (!decoupled && default_config && default_config->kind() == PyKind::boolean &&
                !default_config->as_bool())
                continue;
            decoupled_groups = decoupled_groups || decoupled;
            const PyValue* is_expert = g.find("is_expert_parallel");
            expert_groups = expert_groups || (is_expert && is_expert->kind() == PyKind::boolean &&
                                              is_expert->as_bool());
            (decoupled ? o.decoupled_lr : o.lr) = g["lr"].as_double();
            if (const PyValue* m = g.find("max_lr"))
                (decoupled ? o.decoupled_max_lr : o.max_lr) = m->as_double();
            if (const PyValue* m = g.find("min_lr"))
                (decoupled ? o.decoupled_min_lr : o.min_lr) = m->as_double();
            const PyValue* wd_mult = g.find("wd_mult");
            if (!wd_mult || wd_mult->as_double() != 0.0)
                o.weight_decay = g["weight_decay"].as_double();
            if (const PyValue* b = g.find("betas")) {
                o.beta1 = b->items().at(0).as_double();
                o.beta2 = b->items().at(1).as_double();
                o.eps = g["eps"].as_double();
            }
            if (const PyValue* m = g.find("momentum")) o.momentum = m->as_double();
        }
    const PyValue& opt = *stepped->opt;
    if (distributed) {
        if (const PyValue* step = opt["param_groups"].items()[0].find("step"))
            o.step = int64_t(step_value(*step, where));
    } else if (const PyValue* state = opt.find("state")) {
        if (const PyValue* step = state->find("common_step"))
            o.step = int64_t(step_value(*step, where));
    }
    // SGD keeps no step count: its iterations are the updates taken (as the torch format).
    if (o.type == "sgd") o.step = iteration;

    for (const auto& [name, t] : model) {
        if (megatron_buffer(name)) continue;  // no optimizer state
        OptimizerParamState p;
        p.name = name;
        p.weight_decay = megatron_weight_decay(name, t.global_shape);
        p.decoupled_lr = decoupled_groups && megatron_embedding_or_output(name);
        // (core_v0.13's expert chain; with Muon the groups say whether experts are apart.)
        p.expert_parallel =
            (o.type == "muon" ? expert_groups : chained) && megatron_expert_parameter(name);
        // Muon's parameters are those with its momentum buffer; before the first step, those
        // of Megatron's rule (the 2-D weights but the word embedding and the output layer).
        p.muon =
            o.type == "muon" &&
            (find_tensor(moments, "momentum_buffer." + name) ||
             (o.step == 0 && t.global_shape.size() == 2 && !megatron_embedding_or_output(name)));
        const std::string own_type = o.type != "muon" ? o.type : p.muon ? "muon" : "adam";
        for (const std::string& m : moment_names(own_type)) {
            const Tensor* value = find_tensor(moments, m + "." + name);
            Tensor& slot = m == "exp_avg_sq" ? p.exp_avg_sq : p.exp_avg;
            if (!value) {
                MT_CHECK(o.step == 0 || o.type == "sgd", where, ": no optimizer state ",
                         kMomentPrefix, m, ".", name, " although ", o.step,
                         " optimizer steps were taken");
                slot = Tensor::zeros(t.local.shape(), DType::f32);  // f32 for half weights too
                continue;
            }
            MT_CHECK(value->shape() == t.local.shape(), "not supported yet: optimizer state ",
                     kMomentPrefix, m, ".", name, " is ", value->describe(),
                     " but the parameter is ", shape_str(t.local.shape()),
                     " (flattened distributed-optimizer shards?) in ", where);
            slot = *value;
        }
        if (const Tensor* master = find_tensor(moments, std::string(kMasterName) + "." + name)) {
            MT_CHECK(master->shape() == t.local.shape(), "optimizer state ", kMomentPrefix,
                     kMasterName, ".", name, " is ", master->describe(), " but the parameter is ",
                     shape_str(t.local.shape()), " in ", where);
            p.main_param = *master;
        }
        o.params.push_back(std::move(p));
    }
    return o;
}

std::string unchained(const std::string& key) {
    constexpr std::string_view kChained = "chained_";
    if (!key.starts_with(kChained)) return key;
    size_t end = kChained.size();
    while (end < key.size() && std::isdigit(static_cast<unsigned char>(key[end]))) ++end;
    if (end == kChained.size() || end >= key.size() || key[end] != '.') return key;
    return key.substr(end + 1);
}

}  // namespace mt::plugins::torch_dist
