#include "deepspeed_moe_files.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "deepspeed_checkpoint.h"
#include "mt/error.h"
#include "torch_state.h"

namespace mt::plugins::torch_ckpt {

namespace fs = std::filesystem;
using io::PyKind;
using io::PyValue;

namespace {

constexpr std::string_view kEncoder = "language_model.encoder.";

// The tag's files of `mp_rank` whose names scanf `pattern` reads into the leading integers
// (`n` of them), sorted by those.
std::vector<std::pair<std::vector<int>, fs::path>> numbered_files(const fs::path& tag,
                                                                  const char* pattern, int n,
                                                                  int mp_rank) {
    std::vector<std::pair<std::vector<int>, fs::path>> out;
    for (const auto& entry : fs::directory_iterator(tag)) {
        const std::string name = entry.path().filename().string();
        int a = -1, b = -1, mp = -1, used = 0;
        const int got = n == 2 ? std::sscanf(name.c_str(), pattern, &a, &b, &mp, &used)
                               : std::sscanf(name.c_str(), pattern, &a, &mp, &used);
        if (got != n + 1 || used != int(name.size()) || mp != mp_rank) continue;
        out.emplace_back(n == 2 ? std::vector<int>{a, b} : std::vector<int>{a}, entry.path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

// The dict entry `key` of `d` for changing, or null.
PyValue* entry(PyValue& d, std::string_view key) {
    if (d.kind() != PyKind::dict) return nullptr;
    for (auto& [k, v] : d.dict_ref().items)
        if (k.kind() == PyKind::string && k.as_string() == key) return &v;
    return nullptr;
}

}  // namespace

constexpr const char* kExpertFiles = "layer_%d_expert_%d_mp_rank_%d_model_states.pt%n";

bool has_deepspeed_experts(const fs::path& tag, int mp_rank) {
    return !numbered_files(tag, kExpertFiles, 2, mp_rank).empty();
}

bool add_deepspeed_experts(const fs::path& tag, int mp_rank, PyValue& module) {
    const auto files = numbered_files(tag, kExpertFiles, 2, mp_rank);
    if (files.empty()) return false;
    // Each expert's tensors under the encoder's names, by the MoE module ("layers.L.mlp.
    // deepspeed_moe.") they belong to.
    std::map<std::string, std::vector<std::pair<std::string, PyValue>>> experts;
    for (const auto& [number, file] : files) {
        const PyValue sd = read_deepspeed_file(file);
        MT_CHECK(sd.kind() == PyKind::dict, file.string(), ": not a state dict");
        for (const auto& [k, v] : sd.dict_ref().items) {
            MT_CHECK(k.kind() == PyKind::string, file.string(), ": a key that is not a string");
            std::string name = k.as_string();
            if (name.starts_with("module.")) name = name.substr(7);
            const size_t at = name.find(".deepspeed_experts.");
            MT_CHECK(name.starts_with(kEncoder) && at != std::string::npos, file.string(), ": '",
                     name.substr(0, 200), "' is not an expert of an encoder layer");
            name = name.substr(kEncoder.size());
            const std::string owner = name.substr(0, name.find("experts.deepspeed_experts."));
            experts[owner].emplace_back(name, v);
        }
    }
    PyValue* lm = entry(module, "language_model");
    PyValue* encoder = lm ? entry(*lm, "encoder") : nullptr;
    MT_CHECK(encoder && encoder->kind() == PyKind::dict, tag.string(),
             ": the model has no language_model.encoder for its expert files");
    PyValue joined = PyValue::dict(true);
    size_t placed = 0;
    for (const auto& [k, v] : encoder->dict_ref().items) {
        joined.dict_ref().set(k, v);
        const std::string key = k.as_string();
        const std::string gate = "gate.wg.weight";
        if (!key.ends_with(gate)) continue;
        auto it = experts.find(key.substr(0, key.size() - gate.size()));
        if (it == experts.end()) continue;
        for (auto& [name, tensor] : it->second) joined.dict_ref().set(name, tensor);
        placed += 1;
    }
    MT_CHECK(placed == experts.size(), tag.string(), ": expert files of ", experts.size(),
             " MoE layers, of which ", placed, " have a gate in the model");
    *encoder = std::move(joined);
    return true;
}

PyValue deepspeed_expert_optimizer(const fs::path& tag, int mp_rank) {
    const auto files = numbered_files(tag, "expp_rank_%d_mp_rank_%d_optim_states.pt%n", 1, mp_rank);
    if (files.empty()) return PyValue();
    std::vector<PyValue> ranks;
    for (const auto& [number, file] : files) {
        MT_CHECK(number[0] == int(ranks.size()), tag.string(), ": expp_rank_", ranks.size(),
                 " is missing");
        PyValue whole = read_deepspeed_file(file);
        const PyValue* o = whole.find("optimizer");
        // (None under ZeRO: its shards hold the state.)
        if (o && o->is_none()) return PyValue();
        MT_CHECK(o && o->kind() == PyKind::dict && o->find("param_groups") && o->find("state"),
                 file.string(), ": no torch optimizer state dict under 'optimizer'");
        ranks.push_back(*o);
    }
    if (ranks.size() == 1) return ranks[0];
    // Rank 0's dense groups; each "moe" group the ranks' experts in rank order.
    auto is_moe = [](const PyValue& g) {
        const PyValue* m = g.find("moe");
        return m && m->kind() == PyKind::boolean && m->as_bool();
    };
    const auto& groups0 = ranks[0]["param_groups"].items();
    PyValue groups = PyValue::list(), state = PyValue::dict();
    int64_t next = 0;
    for (size_t g = 0; g < groups0.size(); ++g) {
        PyValue group = groups0[g];
        std::vector<PyValue> ids;
        for (size_t r = 0; r < (is_moe(groups0[g]) ? ranks.size() : 1); ++r) {
            const auto& rank_groups = ranks[r]["param_groups"].items();
            MT_CHECK(rank_groups.size() == groups0.size(), tag.string(), ": expp_rank_", r, " has ",
                     rank_groups.size(), " param groups, expp_rank_0 ", groups0.size());
            for (const PyValue& id : rank_groups[g]["params"].items()) {
                if (const PyValue* s = find_int_key(ranks[r]["state"], id.as_int()))
                    state.dict_ref().set(PyValue::integer(next), *s);
                ids.push_back(PyValue::integer(next++));
            }
        }
        group.dict_ref().set("params", PyValue::list(std::move(ids)));
        groups.items().push_back(std::move(group));
    }
    PyValue out = PyValue::dict();
    out.dict_ref().set("state", std::move(state));
    out.dict_ref().set("param_groups", std::move(groups));
    return out;
}

}  // namespace mt::plugins::torch_ckpt
