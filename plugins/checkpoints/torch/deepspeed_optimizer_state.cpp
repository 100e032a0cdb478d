#include "deepspeed_optimizer_state.h"

#include <algorithm>
#include <map>

#include "mt/error.h"

namespace mt::plugins::torch_ckpt {

using io::PyValue;

PyValue torch_optimizer_state(const std::vector<DeepSpeedParamGroup>& groups,
                              const std::function<std::string(const std::string&)>& model_name,
                              const std::vector<std::string>& order, bool master_weights,
                              const std::string& what) {
    std::map<std::string, size_t> position;
    for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
    PyValue state = PyValue::dict();
    PyValue param_groups = PyValue::list();
    PyValue masters = PyValue::list();
    int64_t next_id = 0;
    for (const DeepSpeedParamGroup& g : groups) {
        // The group's parameters the model holds, in its order.
        std::vector<std::pair<size_t, const DeepSpeedParamState*>> members;
        for (const DeepSpeedParamState& p : g.params) {
            const std::string name = model_name(p.name);
            if (name.empty()) continue;
            auto it = position.find(name);
            MT_CHECK(it != position.end(), what, ": the optimizer's parameter '",
                     p.name.substr(0, 200), "' is not in the model");
            members.emplace_back(it->second, &p);
        }
        std::sort(members.begin(), members.end(),
                  [](const auto& a, const auto& b) { return a.first < b.first; });
        PyValue group = PyValue::dict();
        for (const auto& [k, v] : g.settings.dict_ref().items)
            if (k.as_string() != "params") group.dict_ref().set(k, v);
        PyValue ids = PyValue::list();
        PyValue group_masters = PyValue::list();
        for (const auto& [at, p] : members) {
            PyValue s = PyValue::dict();
            if (!p->step.is_none()) s.dict_ref().set("step", p->step);
            s.dict_ref().set("exp_avg", PyValue::tensor(p->exp_avg));
            s.dict_ref().set("exp_avg_sq", PyValue::tensor(p->exp_avg_sq));
            state.dict_ref().set(PyValue::integer(next_id), std::move(s));
            ids.items().push_back(PyValue::integer(next_id++));
            group_masters.items().push_back(PyValue::tensor(p->fp32));
        }
        group.dict_ref().set("params", std::move(ids));
        param_groups.items().push_back(std::move(group));
        masters.items().push_back(std::move(group_masters));
    }
    PyValue sd = PyValue::dict();
    sd.dict_ref().set("state", std::move(state));
    sd.dict_ref().set("param_groups", std::move(param_groups));
    if (!master_weights) return sd;
    PyValue wrapped = PyValue::dict();
    wrapped.dict_ref().set("optimizer", std::move(sd));
    wrapped.dict_ref().set("fp32_from_fp16_params", std::move(masters));
    return wrapped;
}

}  // namespace mt::plugins::torch_ckpt
