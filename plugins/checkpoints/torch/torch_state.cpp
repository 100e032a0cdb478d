#include "torch_state.h"

#include <algorithm>
#include <numeric>
#include <array>
#include <cmath>
#include <map>

#include "distrib_optim.h"
#include "megatron_rng_state.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/checkpoint/reshard.h"
#include "mt/dtype.h"
#include "mt/error.h"
#include "mt/model.h"
#include "torch_names.h"

namespace mt::plugins::torch_ckpt {

namespace {

using io::PyDict;
using io::PyKind;
using io::PyValue;

PyValue str(const std::string& s) {
    return PyValue::string(s);
}

// torch.<name> for the dtypes an args Namespace names (params_dtype).
constexpr std::pair<const char*, DType> kTorchDtypes[] = {
    {"float32", DType::f32}, {"float16", DType::f16}, {"bfloat16", DType::bf16}};

PyValue arg_to_py(const std::string& name, const ArgValue& v) {
    if (name == "params_dtype" && std::holds_alternative<std::string>(v)) {
        for (const auto& [torch_name, d] : kTorchDtypes)
            if (std::get<std::string>(v) == torch_name) return io::torch_dtype_global(d);
    }
    return std::visit(
        [](const auto& x) -> PyValue {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, std::monostate>)
                return PyValue();
            else if constexpr (std::is_same_v<T, bool>)
                return PyValue::boolean(x);
            else if constexpr (std::is_same_v<T, int64_t>)
                return PyValue::integer(x);
            else if constexpr (std::is_same_v<T, double>)
                return PyValue::real(x);
            else if constexpr (std::is_same_v<T, std::string>)
                return PyValue::string(x);
            else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
                std::vector<PyValue> items;
                for (int64_t i : x) items.push_back(PyValue::integer(i));
                return PyValue::list(std::move(items));
            } else {
                std::vector<PyValue> items;
                for (const std::string& s : x) items.push_back(PyValue::string(s));
                return PyValue::list(std::move(items));
            }
        },
        v);
}

// A number Megatron keeps as int when integral (lr_warmup_steps).
PyValue number(double v) {
    if (std::floor(v) == v && std::fabs(v) < 9e15) return PyValue::integer(int64_t(v));
    return PyValue::real(v);
}

PyValue scalar_tensor(float v) {
    Tensor t = Tensor::empty({}, DType::f32);
    *t.data<float>() = v;
    return PyValue::tensor(t);
}

// Megatron's param groups: keyed by (wd_mult, is_expert_parallel, is_decoupled_lr) in the order
// parameters first reach them.
struct GroupKey {
    bool decay = true, decoupled = false, expert = false, mup = false;
    bool operator==(const GroupKey&) const = default;
};
struct Groups {
    std::vector<GroupKey> keys;                // per group
    std::vector<std::vector<size_t>> members;  // indices into the parameter list

    // The group of `key`, or keys.size().
    size_t find(const GroupKey& key) const {
        size_t k = 0;
        while (k < keys.size() && !(keys[k] == key)) ++k;
        return k;
    }
};

template <class KeyFn>
Groups make_groups(size_t n, KeyFn key_of) {
    Groups g;
    for (size_t i = 0; i < n; ++i) {
        const GroupKey key = key_of(i);
        const size_t k = g.find(key);
        if (k == g.keys.size()) {
            g.keys.push_back(key);
            g.members.emplace_back();
        }
        g.members[k].push_back(i);
    }
    return g;
}

// muP's factor on its group's max and min lr: 1 / width for Adam, width for SGD.
double mup_lr_mult(const OptimizerCheckpoint& o) {
    return o.type == "sgd" ? o.mup_width_mult : 1.0 / o.mup_width_mult;
}

// The overrides core_v0.19's _get_param_groups keys a group by (get_mup_config_overrides' and
// the weight-decay rule's, merged), sorted by name.
std::vector<std::pair<std::string, double>> overrides_of(const GroupKey& key,
                                                         const OptimizerCheckpoint& o) {
    std::vector<std::pair<std::string, double>> out;
    if (key.mup) {
        if (o.type != "sgd") out.emplace_back("eps", o.eps * (1.0 / o.mup_width_mult));
        out.emplace_back("max_lr", o.max_lr * mup_lr_mult(o));
        out.emplace_back("min_lr", o.min_lr * mup_lr_mult(o));
    } else if (key.decoupled) {
        out.emplace_back("max_lr", o.decoupled_max_lr);
        out.emplace_back("min_lr", o.decoupled_min_lr);
    }
    if (!key.decay) out.emplace_back("wd_mult", 0.0);
    return out;
}

// The groups of the checkpoint's parameters, in their order; for core_v0.19 in its: the groups
// without overrides first, then by their overrides.
Groups groups_of(const OptimizerCheckpoint& o) {
    Groups g = make_groups(o.params.size(), [&](size_t i) {
        return GroupKey{o.params[i].weight_decay, o.params[i].decoupled_lr,
                        o.params[i].expert_parallel, o.params[i].mup};
    });
    if (!kept_as_core_v0_19(o)) return g;
    std::vector<size_t> order(g.keys.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const auto x = overrides_of(g.keys[a], o), y = overrides_of(g.keys[b], o);
        if (x.empty() != y.empty()) return x.empty();
        return x < y;
    });
    Groups sorted;
    for (size_t k : order) {
        sorted.keys.push_back(g.keys[k]);
        sorted.members.push_back(std::move(g.members[k]));
    }
    return sorted;
}

bool true_entry(const PyValue& dict, std::string_view key) {
    const PyValue* v = dict.find(key);
    return v && v->kind() == PyKind::boolean && v->as_bool();
}

// Whether a saved group is one of core_v0.19's with a schedule of its own (default_config False):
// --decoupled-lr's, or muP's.
bool own_schedule(const PyValue& group) {
    const PyValue* default_config = group.find("default_config");
    return default_config && default_config->kind() == PyKind::boolean &&
           !default_config->as_bool();
}

// A saved group's key. core_v0.19 keys --decoupled-lr's group by its max and min lr alone
// (is_decoupled_lr False): in a run without muP it is the one group with its own schedule.
GroupKey key_of(const PyValue& group) {
    // (DeepSpeed marks the groups of its MoE layers' experts "moe".)
    return {group["wd_mult"].as_double() != 0.0,
            true_entry(group, "is_decoupled_lr") || own_schedule(group),
            true_entry(group, "is_expert_parallel") || true_entry(group, "moe")};
}

PyValue optimizer_to_py(const OptimizerCheckpoint& o) {
    const bool adam = o.type == "adam", muon = o.type == "muon";
    // (Muon's parts among the chained ones: this is Muon's run, Adam its scalar optimizer.)
    const bool muon_run = muon || (o.chain_parts & 0b11) != 0;
    MT_CHECK(!muon || std::all_of(o.params.begin(), o.params.end(),
                                  [](const OptimizerParamState& p) { return p.muon; }),
             "not supported yet: Muon's and Adam's state in one torch optimizer (Megatron "
             "chains the two)");
    Groups groups = groups_of(o);
    PyValue state = PyValue::dict();
    PyValue param_groups = PyValue::list();
    int64_t next_id = 0;
    for (size_t k = 0; k < groups.keys.size(); ++k) {
        const double wd_mult = groups.keys[k].decay ? 1.0 : 0.0;
        const bool decoupled = groups.keys[k].decoupled, mup = groups.keys[k].mup;
        PyValue g = PyValue::dict();
        auto& gd = g.dict_ref();
        gd.set("wd_mult", PyValue::real(wd_mult));
        gd.set("lr_mult", PyValue::real(1.0));
        gd.set("is_expert_parallel", PyValue::boolean(groups.keys[k].expert));
        // (core_v0.19 keys --decoupled-lr's group by its max and min lr alone: is_decoupled_lr
        // stays False there.)
        const bool core_v0_19 = kept_as_core_v0_19(o);
        gd.set("is_decoupled_lr", PyValue::boolean(decoupled && !core_v0_19));
        // core_v0.19's (Muon is 0.19's): the groups the schedule's lr is read from (all but
        // --decoupled-lr's), and the override that hands Adam the groups Muon does not take,
        // by which Megatron pairs saved groups with its own.
        if (core_v0_19) gd.set("default_config", PyValue::boolean(!decoupled && !mup));
        if (muon_run && adam) gd.set("optimizer", PyValue::string("adam"));
        // (muP's group: its own max and min lr, and lr from them.)
        const double mult = mup ? mup_lr_mult(o) : 1.0;
        gd.set("max_lr", PyValue::real(decoupled ? o.decoupled_max_lr : o.max_lr * mult));
        gd.set("min_lr", PyValue::real(decoupled ? o.decoupled_min_lr : o.min_lr * mult));
        gd.set("lr", PyValue::real(decoupled ? o.decoupled_lr : mup ? o.mup_lr : o.lr));
        if (muon) {  // emerging_optimizers' OrthogonalizedOptimizer defaults
            gd.set("momentum", PyValue::real(o.momentum));
            gd.set("weight_decay", PyValue::real(o.weight_decay * wd_mult));
        } else if (adam) {
            gd.set("betas", PyValue::tuple({PyValue::real(o.beta1), PyValue::real(o.beta2)}));
            gd.set("eps", PyValue::real(mup ? o.eps * (1.0 / o.mup_width_mult) : o.eps));
            gd.set("weight_decay", PyValue::real(o.weight_decay * wd_mult));
            gd.set("amsgrad", PyValue::boolean(false));
            gd.set("maximize", PyValue::boolean(false));
            gd.set("foreach", PyValue());
            gd.set("capturable", PyValue::boolean(false));
            gd.set("differentiable", PyValue::boolean(false));
            gd.set("fused", PyValue());
            gd.set("decoupled_weight_decay", PyValue::boolean(true));
        } else {
            gd.set("momentum", PyValue::real(o.momentum));
            gd.set("dampening", PyValue::integer(0));  // torch.optim.SGD default 0 (an int)
            gd.set("weight_decay", PyValue::real(o.weight_decay * wd_mult));
            gd.set("nesterov", PyValue::boolean(false));
            gd.set("maximize", PyValue::boolean(false));
            gd.set("foreach", PyValue());
            gd.set("differentiable", PyValue::boolean(false));
            gd.set("fused", PyValue());
        }
        PyValue ids = PyValue::list();
        for (size_t i : groups.members[k]) {
            const int64_t id = next_id++;
            ids.items().push_back(PyValue::integer(id));
            if (o.step == 0) continue;  // torch has no state before the first step
            const auto& p = o.params[i];
            PyValue s = PyValue::dict();
            if (adam) {
                s.dict_ref().set("step", scalar_tensor(float(o.step)));
                s.dict_ref().set("exp_avg", PyValue::tensor(p.exp_avg));
                s.dict_ref().set("exp_avg_sq", PyValue::tensor(p.exp_avg_sq));
            } else {
                s.dict_ref().set("momentum_buffer", PyValue::tensor(p.exp_avg));
            }
            state.dict_ref().set(PyValue::integer(id), std::move(s));
        }
        gd.set("params", std::move(ids));
        param_groups.items().push_back(std::move(g));
    }
    PyValue out = PyValue::dict();
    out.dict_ref().set("state", std::move(state));
    out.dict_ref().set("param_groups", std::move(param_groups));
    return out;
}

PyValue scheduler_to_py(const SchedulerCheckpoint& s) {
    PyValue d = PyValue::dict();
    auto& m = d.dict_ref();
    m.set("max_lr", PyValue::real(s.max_lr));
    m.set("lr_warmup_steps", number(s.lr_warmup_steps));
    m.set("num_steps", PyValue::integer(s.num_steps));
    m.set("lr_decay_style", str(s.lr_decay_style));
    m.set("lr_decay_steps", PyValue::integer(s.lr_decay_steps));
    m.set("min_lr", PyValue::real(s.min_lr));
    m.set("start_wd", PyValue::real(s.start_wd));
    m.set("end_wd", PyValue::real(s.end_wd));
    m.set("wd_incr_style", str(s.wd_incr_style));
    m.set("wd_incr_steps", PyValue::integer(s.wd_incr_steps));
    if (s.tokens) {  // Megatron-DeepSpeed's keys
        auto optional = [](std::optional<int64_t> v) {
            return v ? PyValue::integer(*v) : PyValue();
        };
        m.set("lr_warmup_tokens", optional(s.tokens->lr_warmup_tokens));
        m.set("num_tokens", PyValue::integer(s.tokens->num_tokens));
        m.set("lr_decay_tokens", optional(s.tokens->lr_decay_tokens));
    }
    return d;
}

// ---- reading ----

// The attention heads' size the args give: kv_channels, else hidden_size / num_attention_heads.
std::optional<int64_t> head_dim(const CheckpointArgs& args) {
    if (auto kv = int_arg(args, "kv_channels")) return kv;
    const auto hidden = int_arg(args, "hidden_size"), heads = int_arg(args, "num_attention_heads");
    if (hidden && heads && *heads > 0 && *hidden % *heads == 0) return *hidden / *heads;
    return std::nullopt;
}

const PyValue& need(const PyValue& d, std::string_view key, const std::string& file) {
    const PyValue* v = d.find(key);
    MT_CHECK(v != nullptr, file, ": no '", key, "' in the checkpoint");
    return *v;
}

std::optional<ArgValue> arg_from_py(const PyValue& v) {
    switch (v.kind()) {
        case PyKind::none:
            return ArgValue{};
        case PyKind::boolean:
            return ArgValue{v.as_bool()};
        case PyKind::integer:
            return ArgValue{v.as_int()};
        case PyKind::real:
            return ArgValue{v.as_double()};
        case PyKind::string:
            return ArgValue{v.as_string()};
        case PyKind::list:     // of ints (--moe-layer-freq's pattern) or of str; others dropped
        case PyKind::tuple: {  // (core_v0.19's --window-size: a tuple of ints)
            std::vector<int64_t> ints;
            std::vector<std::string> strings;
            for (const PyValue& item : v.items()) {
                if (item.kind() == PyKind::integer && strings.empty())
                    ints.push_back(item.as_int());
                else if (item.kind() == PyKind::string && ints.empty())
                    strings.push_back(item.as_string());
                else
                    return std::nullopt;
            }
            if (!strings.empty()) return ArgValue{std::move(strings)};
            return ArgValue{std::move(ints)};
        }
        case PyKind::global:
            if (auto d = io::torch_dtype_of(v))
                for (const auto& [torch_name, dtype] : kTorchDtypes)
                    if (dtype == *d) return ArgValue{std::string(torch_name)};
            return std::nullopt;
        default:
            return std::nullopt;
    }
}

double step_of(const PyValue& v) {
    if (v.kind() == PyKind::tensor) {
        const Tensor& t = v.as_tensor();
        MT_CHECK(t.numel() == 1, "optimizer step is ", t.describe(), ", not a scalar");
        if (t.dtype() == DType::f32) return *t.data<float>();
        if (t.dtype() == DType::f64) return *t.data<double>();
        if (t.dtype() == DType::i64) return double(*t.data<int64_t>());
        MT_FAIL("optimizer step has dtype ", dtype_name(t.dtype()));
    }
    return v.as_double();
}

// The model's name of entry `i` without a virtual stage's "model<c>.".
std::string_view chunk_free_name(const CheckpointState& s, size_t i) {
    const auto chunk = model_chunk(s.model[i].first);
    return std::string_view(s.model[i].first).substr(chunk ? chunk->second : 0);
}

// One torch optimizer's state (a chain's part, `experts` telling which) paired with s.model.
OptimizerCheckpoint single_optimizer_from_py(const PyValue& opt, const CheckpointState& s,
                                             const std::string& file, bool experts) {
    // Mixed-precision and distributed-optimizer files wrap the torch state dict
    // ({'optimizer': ..., ...}).
    const PyValue& sd = opt.find("param_groups") ? opt : need(opt, "optimizer", file);
    const PyValue& groups = need(sd, "param_groups", file);
    // DistributedOptimizer.state_dict() keeps no "state" (and its groups no parameter ids): the
    // moments are in distrib_optim.pt, which the caller reads into the parameters named here.
    const PyValue* state = sd.find("state");
    MT_CHECK((!state || state->kind() == PyKind::dict) && groups.kind() == PyKind::list, file,
             ": the optimizer is not a torch optimizer state_dict");

    // A file written with --decoupled-lr keeps the embedding and output weights apart.
    bool decoupled_in_file = false;
    bool o_core_v0_19 = false;  // core_v0.19's groups (default_config)
    // DeepSpeed's optimizer of MoE layers (--create-moe-param-group, expert parallelism) keeps
    // the experts in groups of their own.
    bool expert_groups = false;
    const bool mup_run = bool_arg(s.args, "use_mup");
    for (const PyValue& g : groups.items()) {
        decoupled_in_file = decoupled_in_file || key_of(g).decoupled;
        expert_groups = expert_groups || true_entry(g, "moe");
        o_core_v0_19 = o_core_v0_19 || g.find("default_config");
        // core_v0.19's muP groups are paired by name in torch_dist.
        MT_CHECK(!mup_run || !own_schedule(g), "not supported yet: ", file,
                 ": an optimizer param group with a schedule of its own in a muP run "
                 "(core_v0.19's muP groups) in the torch format (torch_dist checkpoints keep it)");
    }
    Groups ours = make_groups(s.model.size(), [&](size_t i) {
        const std::string_view name = chunk_free_name(s, i);
        return GroupKey{
            megatron_weight_decay(name, s.model[i].second.global_shape),
            decoupled_in_file && megatron_embedding_or_output(name),
            experts || (expert_groups && name.find(".mlp.experts.") != std::string_view::npos)};
    });
    OptimizerCheckpoint o;
    o.core_v0_19 = o_core_v0_19;
    o.type = groups.items().empty() || groups.items()[0].find("betas") ? "adam" : "sgd";
    o.params.resize(s.model.size());
    bool have_step = false;
    auto take_step = [&](int64_t step, const std::string& what) {
        MT_CHECK(!have_step || step == o.step, file, ": ", what, " took ", step,
                 " optimizer steps, others ", o.step);
        o.step = step;
        have_step = true;
    };
    for (const PyValue& g : groups.items()) {
        const GroupKey key = key_of(g);
        const bool decay = key.decay;
        const size_t k = ours.find(key);
        const PyValue* ids = g.find("params");
        MT_CHECK(ids || !state, file, ": an optimizer param group has no 'params'");
        const size_t count = ids                    ? ids->items().size()
                             : k < ours.keys.size() ? ours.members[k].size()
                                                    : 0;
        MT_CHECK(k < ours.keys.size() && ours.members[k].size() == count, file,
                 ": an optimizer param group (wd_mult ", g["wd_mult"].as_double(),
                 key.decoupled ? ", decoupled lr" : "", key.expert ? ", expert parallel" : "",
                 ") has ", count, " parameters but the model has ",
                 k < ours.keys.size() ? ours.members[k].size() : 0, " such parameters");
        double& lr = key.decoupled ? o.decoupled_lr : o.lr;
        double& max_lr = key.decoupled ? o.decoupled_max_lr : o.max_lr;
        double& min_lr = key.decoupled ? o.decoupled_min_lr : o.min_lr;
        lr = g["lr"].as_double();
        if (const PyValue* m = g.find("max_lr")) max_lr = m->as_double();
        if (const PyValue* m = g.find("min_lr")) min_lr = m->as_double();
        if (decay) o.weight_decay = g["weight_decay"].as_double();
        if (const PyValue* b = g.find("betas")) {
            o.beta1 = b->items().at(0).as_double();
            o.beta2 = b->items().at(1).as_double();
            o.eps = g["eps"].as_double();
        }
        if (const PyValue* m = g.find("momentum")) o.momentum = m->as_double();
        if (!state)
            if (const PyValue* step = g.find("step")) take_step(int64_t(step_of(*step)), "a group");
        for (size_t j = 0; j < count; ++j) {
            const size_t i = ours.members[k][j];
            const auto& [name, model_tensor] = s.model[i];
            OptimizerParamState& p = o.params[i];
            p.name = name;
            p.weight_decay = decay;
            p.decoupled_lr = key.decoupled;
            p.expert_parallel = key.expert;
            if (!state) continue;  // distrib_optim.pt's
            const PyValue* ps = find_int_key(*state, ids->items()[j].as_int());
            if (!ps) {  // no step taken yet
                // Optimizer state is f32 whatever the weights are (bf16 / fp16 runs).
                p.exp_avg = Tensor::zeros(model_tensor.local.shape(), DType::f32);
                if (o.type == "adam") p.exp_avg_sq = p.exp_avg.clone();
                continue;
            }
            if (o.type == "adam") {
                p.exp_avg = need(*ps, "exp_avg", file).as_tensor();
                p.exp_avg_sq = need(*ps, "exp_avg_sq", file).as_tensor();
                take_step(int64_t(step_of(need(*ps, "step", file))), "parameter '" + name + "'");
            } else {
                p.exp_avg = need(*ps, "momentum_buffer", file).as_tensor();
            }
        }
    }
    // SGD keeps no step count: its iterations are the updates taken.
    if (o.type == "sgd") o.step = s.iteration;
    if (const PyValue* scaler = opt.find("grad_scaler"))
        o.grad_scaler = grad_scaler_from_py(*scaler, file);
    if (const PyValue* masters = opt.find("fp32_from_fp16_params")) {
        MT_CHECK(
            masters->kind() == PyKind::list && masters->items().size() == groups.items().size(),
            file, ": fp32_from_fp16_params does not hold one list per param group");
        for (size_t g = 0; g < groups.items().size(); ++g) {
            const size_t k = ours.find(key_of(groups.items()[g]));  // found above
            const auto& group = (*masters).items()[g].items();
            MT_CHECK(group.size() == ours.members[k].size(), file, ": fp32_from_fp16_params group ",
                     g, " holds ", group.size(), " tensors for ", ours.members[k].size(),
                     " parameters");
            for (size_t j = 0; j < group.size(); ++j)
                o.params[ours.members[k][j]].main_param = group[j].as_tensor();
        }
    }
    return o;
}

OptimizerCheckpoint optimizer_from_py(const PyValue& opt, const CheckpointState& whole,
                                      const std::string& file) {
    // The optimizer's parameters are the model's tensors less its buffers (no state).
    CheckpointState s;
    s.iteration = whole.iteration;
    s.args = whole.args;
    for (const auto& entry : whole.model)
        if (!megatron_buffer(entry.first)) s.model.push_back(entry);
    if (opt.kind() != PyKind::list) return single_optimizer_from_py(opt, s, file, false);
    // Megatron's ChainedOptimizer with expert parallelism: the dense parameters' state, then
    // the experts'.
    MT_CHECK(opt.items().size() == 2, file, ": the optimizer is a chain of ", opt.items().size(),
             " optimizers; Megatron chains two, the dense parameters' and the experts'");
    std::vector<size_t> members[2];
    for (size_t i = 0; i < s.model.size(); ++i)
        members[megatron_expert_parameter(chunk_free_name(s, i)) ? 1 : 0].push_back(i);
    OptimizerCheckpoint out;
    std::vector<OptimizerParamState> params(s.model.size());
    for (size_t c = 0; c < 2; ++c) {
        CheckpointState part;
        part.iteration = s.iteration;
        part.args = s.args;
        for (size_t i : members[c]) part.model.push_back(s.model[i]);
        OptimizerCheckpoint o = single_optimizer_from_py(opt.items()[c], part, file, c == 1);
        MT_CHECK(c == 0 || o.step == out.step, file, ": the experts' optimizer took ", o.step,
                 " steps, the dense parameters' ", out.step);
        for (size_t j = 0; j < members[c].size(); ++j)
            params[members[c][j]] = std::move(o.params[j]);
        if (c == 0) out = std::move(o);
    }
    out.params = std::move(params);
    return out;
}

SchedulerCheckpoint scheduler_from_py(const PyValue& d, const std::string& file) {
    SchedulerCheckpoint s;
    s.max_lr = need(d, "max_lr", file).as_double();
    s.lr_warmup_steps = need(d, "lr_warmup_steps", file).as_double();
    s.num_steps = need(d, "num_steps", file).as_int();
    s.lr_decay_style = need(d, "lr_decay_style", file).as_string();
    s.lr_decay_steps = need(d, "lr_decay_steps", file).as_int();
    s.min_lr = need(d, "min_lr", file).as_double();
    s.start_wd = need(d, "start_wd", file).as_double();
    s.end_wd = need(d, "end_wd", file).as_double();
    s.wd_incr_style = need(d, "wd_incr_style", file).as_string();
    s.wd_incr_steps = need(d, "wd_incr_steps", file).as_int();
    if (const PyValue* tokens = d.find("num_tokens")) {  // Megatron-DeepSpeed's
        auto optional = [&](const char* key) {
            const PyValue& v = need(d, key, file);
            return v.is_none() ? std::nullopt : std::optional<int64_t>(v.as_int());
        };
        s.tokens = SchedulerCheckpoint::Tokens{tokens->as_int(), optional("lr_warmup_tokens"),
                                               optional("lr_decay_tokens")};
    }
    return s;
}

}  // namespace

std::vector<OptimizerChain> optimizer_chains(const OptimizerCheckpoint& o) {
    std::array<OptimizerChain, 4> parts;
    uint8_t present = o.chain_parts;
    for (size_t i = 0; i < o.params.size(); ++i) {
        const int k = chain_part(o.type, o.params[i]);
        parts[size_t(k)].optimizer.params.push_back(o.params[i]);
        parts[size_t(k)].members.push_back(i);
        if (o.chain_parts == 0) present |= uint8_t(1u << k);
    }
    if (present == 0) present = 1u << 2;  // no parameters: one optimizer
    std::vector<OptimizerChain> chains;
    for (size_t k = 0; k < parts.size(); ++k) {
        if (!(present & (1u << k))) {
            MT_CHECK(parts[k].members.empty(), "optimizer state of a chained part not listed");
            continue;
        }
        OptimizerChain c = std::move(parts[k]);
        std::vector<OptimizerParamState> params = std::move(c.optimizer.params);
        c.optimizer = o;
        c.optimizer.params = std::move(params);
        c.optimizer.chain_parts = present;
        if (o.type == "muon" && k >= 2) c.optimizer.type = "adam";
        chains.push_back(std::move(c));
    }
    return chains;
}

PyValue param_groups_without_ids(const OptimizerCheckpoint& o) {
    // The groups alone: step 0 builds no per-parameter state (whose moments may be shards).
    OptimizerCheckpoint groups_only = o;
    groups_only.step = 0;
    groups_only.shards.clear();
    const PyValue torch_sd = optimizer_to_py(groups_only);
    PyValue groups = PyValue::list();
    for (const PyValue& g : torch_sd["param_groups"].items()) {
        PyValue copy = PyValue::dict();
        for (const auto& [k, v] : g.dict_ref().items)
            if (k.as_string() != "params") copy.dict_ref().set(k, v);
        groups.items().push_back(std::move(copy));
    }
    return groups;
}

PyValue distributed_optimizer_to_py(const OptimizerCheckpoint& o) {
    PyValue groups = param_groups_without_ids(o);
    for (PyValue& g : groups.items()) g.dict_ref().set("step", PyValue::real(double(o.step)));
    PyValue inner = PyValue::dict();
    inner.dict_ref().set("param_groups", std::move(groups));
    PyValue out = PyValue::dict();
    out.dict_ref().set("optimizer", std::move(inner));
    return out;
}

PyValue grad_scaler_to_py(const GradScalerCheckpoint& g) {
    PyValue out = PyValue::dict();
    if (!g.dynamic) return out;  // ConstantGradScaler.state_dict() is empty
    Tensor scale = Tensor::empty({1}, DType::f32);
    *scale.data<float>() = g.scale;
    out.dict_ref().set("scale", PyValue::tensor(scale));
    out.dict_ref().set("growth_tracker", PyValue::integer(g.growth_tracker));
    out.dict_ref().set("hysteresis_tracker", PyValue::integer(g.hysteresis_tracker));
    return out;
}

GradScalerCheckpoint grad_scaler_from_py(const PyValue& d, const std::string& file) {
    MT_CHECK(d.kind() == PyKind::dict, file, ": the optimizer's grad_scaler is not a dict");
    GradScalerCheckpoint g;
    const PyValue* scale = d.find("scale");
    g.dynamic = scale != nullptr;
    if (!scale) return g;
    const Tensor& t = scale->as_tensor();
    MT_CHECK(t.numel() == 1 && t.dtype() == DType::f32, file, ": the loss scale is ", t.describe(),
             ", not one f32 value");
    g.scale = *t.contiguous().data<float>();
    g.growth_tracker = need(d, "growth_tracker", file).as_int();
    g.hysteresis_tracker = need(d, "hysteresis_tracker", file).as_int();
    return g;
}

// Float16OptimizerWithFloat16Params.state_dict() (--bf16 / --fp16 without the distributed
// optimizer): the torch state dict beside the f32 master copies, grouped as its param groups.
PyValue mixed_precision_optimizer_to_py(const OptimizerCheckpoint& o) {
    Groups groups = groups_of(o);
    PyValue masters = PyValue::list();
    for (const auto& members : groups.members) {
        PyValue group = PyValue::list();
        for (size_t i : members) group.items().push_back(PyValue::tensor(o.params[i].main_param));
        masters.items().push_back(std::move(group));
    }
    PyValue out = PyValue::dict();
    out.dict_ref().set("optimizer", optimizer_to_py(o));
    if (o.grad_scaler) out.dict_ref().set("grad_scaler", grad_scaler_to_py(*o.grad_scaler));
    out.dict_ref().set("fp32_from_fp16_params", std::move(masters));
    return out;
}

namespace {

// A model tensor's key in the file: core_v0.19's MambaMixer (a model of --hybrid-layer-pattern,
// which core_v0.13 does not have) keeps its convolution as parameters of its own,
// "mixer.conv1d_weight" / "mixer.conv1d_bias" (its torch_dist keys keep core_v0.13's names;
// reading takes either, mt::other_impl_name).
std::string file_key(const std::string& name, bool v019_mixer) {
    if (!v019_mixer) return name;
    std::string v019 = other_impl_name(name);
    return v019.find(".mixer.conv1d_") != std::string::npos ? v019 : name;
}

}  // namespace

PyValue to_py(const CheckpointState& s, const MegatronRngRank* rng_rank) {
    io::PyObject ns;
    ns.module = "argparse";
    ns.name = "Namespace";
    ns.make = io::PyObject::Make::newobj;
    ns.args = PyValue::tuple();
    ns.state = PyValue::dict();
    for (const auto& [name, value] : s.args) ns.state.dict_ref().set(name, arg_to_py(name, value));

    const ArgValue* pattern = find_arg(s.args, "hybrid_layer_pattern");
    const bool v019_mixer = pattern && std::holds_alternative<std::string>(*pattern);
    PyValue model = PyValue::dict(true);
    if (bool_arg(s.args, "use_legacy_models")) {
        ModelTensors tensors;
        for (const auto& [name, t] : s.model) tensors.emplace_back(name, t.local);
        model =
            legacy_model_to_py(tensors, bool_arg(s.args, "untie_embeddings_and_output_weights"));
    } else {
        for (const auto& [name, t] : s.model)
            if (!model_chunk(name))
                model.dict_ref().set(file_key(name, v019_mixer), PyValue::tensor(t.local));
        for (const auto& [alias, original] : s.model_aliases)
            for (const auto& [name, t] : s.model)
                if (name == original) model.dict_ref().set(alias, PyValue::tensor(t.local));
    }
    // Virtual pipeline stages: each chunk's state dict under model0, model1, ...
    std::vector<PyValue> chunks;
    for (const auto& [name, t] : s.model)
        if (auto chunk = model_chunk(name)) {
            while (chunks.size() <= chunk->first) chunks.push_back(PyValue::dict(true));
            chunks[chunk->first].dict_ref().set(file_key(name.substr(chunk->second), v019_mixer),
                                                PyValue::tensor(t.local));
        }
    MT_CHECK(chunks.empty() || model.dict_ref().items.empty(),
             "a checkpoint state mixes model chunks (model0., ...) with other model tensors");

    PyValue root = PyValue::dict();
    auto& r = root.dict_ref();
    r.set("args", PyValue::object(std::move(ns)));
    r.set("checkpoint_version", PyValue::real(3.0));
    r.set("iteration", PyValue::integer(s.iteration));
    if (chunks.empty())
        r.set("model", std::move(model));
    else
        for (size_t c = 0; c < chunks.size(); ++c)
            r.set("model" + std::to_string(c), std::move(chunks[c]));
    if (s.optimizer) {
        auto one = [&](const OptimizerCheckpoint& o) {
            return saved_by_distributed_optimizer(s.args) ? distributed_optimizer_to_py(o)
                   : o.has_master_weights()               ? mixed_precision_optimizer_to_py(o)
                                                          : optimizer_to_py(o);
        };
        // Megatron's ChainedOptimizer.state_dict(): one optimizer's dict, or a list of them.
        MT_CHECK(s.optimizer->type != "muon",
                 "not supported yet: Muon's optimizer state in --ckpt-format torch (torch_dist "
                 "holds it)");
        const std::vector<OptimizerChain> chains = optimizer_chains(*s.optimizer);
        PyValue optimizer = chains.size() == 1 ? one(*s.optimizer) : PyValue::list();
        if (chains.size() > 1)
            for (const OptimizerChain& c : chains) optimizer.items().push_back(one(c.optimizer));
        r.set("optimizer", std::move(optimizer));
    }
    if (s.scheduler) r.set("opt_param_scheduler", scheduler_to_py(*s.scheduler));
    r.set("rerun_state_machine", PyValue());
    if (s.rng) {
        PyValue rng = PyValue::dict();
        rng.dict_ref().set("seed", PyValue::integer(int64_t(s.rng->dropout_seed)));
        rng.dict_ref().set("offset", PyValue::integer(int64_t(s.rng->dropout_offset)));
        PyValue list =
            megatron_rng_state_list(s.args, rng_rank ? *rng_rank : s.rng->megatron_rank);
        if (list.items().empty()) list.items().push_back(PyValue::dict());
        list.items()[0].dict_ref().set(kDropoutRngKey, std::move(rng));
        r.set("rng_state", std::move(list));
    }
    r.set("num_floating_point_operations_so_far",
          PyValue::real(s.num_floating_point_operations_so_far));
    return root;
}

CheckpointArgs args_from_py(const PyValue& root, const std::string& file) {
    MT_CHECK(root.kind() == PyKind::dict, file, ": the checkpoint is a Python ",
             io::py_kind_name(root.kind()), ", not a dict");
    CheckpointArgs out;
    if (const PyValue* args = root.find("args");
        args && args->kind() == PyKind::object && args->object_ref().state.kind() == PyKind::dict)
        for (const auto& [k, v] : args->object_ref().state.dict_ref().items)
            if (k.kind() == PyKind::string)
                if (auto a = arg_from_py(v)) out.emplace_back(k.as_string(), *a);
    as_core_v013_args(out);
    return out;
}

namespace {

// Megatron-DeepSpeed since its FPDT change (commit 676a482c, December 2024, which also added
// --ds-sequence-parallel-fpdt) lays a self-attention's QKV rows out as [all Q | all K | all V]
// (checkpoint_version 0's [3, heads, head_dim]) while writing checkpoint_version 3.0; before
// it, as Megatron-LM. Its grouped-query models split those rows in three equal parts, which
// this order cannot hold, and are refused. The FPDT fields are dropped from the args: the rows
// are Megatron-LM's from here on, whatever saves them.
bool megatron_deepspeed_qkv_blocks(CheckpointArgs& args, const std::string& file) {
    if (!find_arg(args, "deepspeed") || !find_arg(args, "ds_sequence_parallel_fpdt")) return false;
    MT_CHECK(!bool_arg(args, "group_query_attention"), file,
             ": not supported yet: grouped-query attention of Megatron-DeepSpeed after its FPDT "
             "change (num_key_value_heads ",
             int_arg(args, "num_key_value_heads").value_or(0), ")");
    std::erase_if(args,
                  [](const auto& a) { return a.first.starts_with("ds_sequence_parallel_fpdt"); });
    return true;
}

}  // namespace

CheckpointState from_py(const PyValue& root, const std::string& file) {
    CheckpointState s;
    s.args = args_from_py(root, file);
    const PyValue* it = root.find("iteration");
    if (!it) it = root.find("total_iters");
    MT_CHECK(it != nullptr, file, ": no 'iteration' in the checkpoint");
    s.iteration = it->as_int();
    s.consumed_train_samples = int_arg(s.args, "consumed_train_samples").value_or(0);
    s.consumed_valid_samples = int_arg(s.args, "consumed_valid_samples").value_or(0);
    if (const PyValue* f = root.find("num_floating_point_operations_so_far"))
        s.num_floating_point_operations_so_far = f->as_double();

    // Virtual pipeline stages: model0, model1, ... flattened into "model<c>." names.
    ModelTensors tensors;
    for (int c = 0; root.find("model" + std::to_string(c)); ++c)
        for (auto& [name, t] : model_from_py(root["model" + std::to_string(c)], file))
            tensors.emplace_back("model" + std::to_string(c) + "." + name, std::move(t));
    const PyValue& model = tensors.empty() ? need(root, "model", file) : root["model0"];
    if (tensors.empty()) tensors = model_from_py(model, file);
    // A legacy model's file, whatever its (older Megatron's) args say.
    if (model.find("language_model")) set_arg(s.args, "use_legacy_models", true);
    // Megatron's load_checkpoint: a file without checkpoint_version is version 0.
    const PyValue* version = root.find("checkpoint_version");
    double qkv_version = version ? version->as_double() : 0.0;
    if (megatron_deepspeed_qkv_blocks(s.args, file)) qkv_version = 0.0;
    fix_qkv_ordering(tensors, qkv_version, head_dim(s.args), file);
    for (auto& entry : tensors) {
        std::string& name = entry.first;
        const Tensor& t = entry.second;  // a plain reference: lambdas capture it (clang 14)
        // A module a model registers twice (T5Model's position_embeddings and output_layer) is
        // saved once with two keys: the later key is a repeat, with no optimizer state.
        const auto first = std::find_if(s.model.begin(), s.model.end(), [&](const auto& e) {
            const Tensor& u = e.second.local;
            return u.storage() == t.storage() && u.offset() == t.offset() && u.shape() == t.shape();
        });
        if (t.numel() > 0 && first != s.model.end()) {
            s.model_aliases.emplace_back(std::move(name), first->first);
            continue;
        }
        s.model.emplace_back(std::move(name),
                             ShardedTensor{t, t.shape(), Shape(t.shape().size(), 0)});
    }
    if (const PyValue* o = root.find("optimizer"); o && !o->is_none()) {
        s.optimizer = optimizer_from_py(*o, s, file);
        // The moments of QKV rows follow their weights' order.
        for (OptimizerParamState& p : s.optimizer->params)
            for (Tensor* t : {&p.exp_avg, &p.exp_avg_sq, &p.main_param}) {
                if (!t->defined()) continue;
                ModelTensors one{{p.name, *t}};
                fix_qkv_ordering(one, qkv_version, head_dim(s.args), file);
                *t = one[0].second;
            }
    }
    const PyValue* sch = root.find("opt_param_scheduler");
    if (!sch) sch = root.find("lr_scheduler");
    if (sch && !sch->is_none()) s.scheduler = scheduler_from_py(*sch, file);
    if (const PyValue* rng = root.find("rng_state"); rng && rng->kind() == PyKind::list &&
                                                     !rng->items().empty() &&
                                                     rng->items()[0].kind() == PyKind::dict)
        if (const PyValue* ours = rng->items()[0].find(kDropoutRngKey))
            s.rng = RngCheckpoint{uint64_t((*ours)["seed"].as_int()),
                                  uint64_t((*ours)["offset"].as_int())};
    return s;
}

const PyValue* find_int_key(const PyValue& dict, int64_t key) {
    for (const auto& [k, v] : dict.dict_ref().items)
        if (k.kind() == PyKind::integer && k.as_int() == key) return &v;
    return nullptr;
}

}  // namespace mt::plugins::torch_ckpt
