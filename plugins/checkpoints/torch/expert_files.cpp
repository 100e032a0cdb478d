#include "expert_files.h"

#include <memory>
#include <optional>
#include <regex>
#include <string>

#include "mt/checkpoint/checkpoint_args.h"
#include "mt/error.h"
#include "mt/nn/moe/layer_pattern.h"

namespace mt::plugins::torch_ckpt {

namespace {

// An expert tensor's key: the text around its expert number.
struct ExpertKey {
    std::string before, after;
    int64_t expert = 0;
};

std::optional<ExpertKey> expert_key(const std::string& key) {
    static const std::regex kSequential(R"(^(.*\.mlp\.experts\.local_experts\.)(\d+)(\..*)$)");
    static const std::regex kGrouped(R"(^(.*\.mlp\.experts\.linear_fc[12]\.weight)(\d+)$)");
    std::smatch m;
    if (std::regex_match(key, m, kSequential)) return ExpertKey{m[1], m[3], std::stoll(m[2])};
    if (std::regex_match(key, m, kGrouped)) return ExpertKey{m[1], "", std::stoll(m[2])};
    return std::nullopt;
}

std::string renumbered(const ExpertKey& k, int64_t expert) {
    return k.before + std::to_string(expert) + k.after;
}

// The experts each rank holds of a MoE layer: num_experts / ep, or (Megatron-DeepSpeed's
// per-layer counts) the layer's own count / ep.
struct ExpertSplit {
    int64_t uniform = 0;
    std::vector<int64_t> per_layer;  // by decoder layer; 0 for a dense one

    int64_t local(const ExpertKey& k) const {
        if (per_layer.empty()) return uniform;
        static const std::regex kLayer(R"((?:^|\.)layers\.(\d+)\.)");
        std::smatch m;
        MT_CHECK(std::regex_search(k.before, m, kLayer), "no layer number in expert tensor '",
                 k.before.substr(0, 200), "'");
        const size_t layer = size_t(std::stoll(m[1]));
        MT_CHECK(layer < per_layer.size() && per_layer[layer] > 0, "expert tensor '",
                 k.before.substr(0, 200), "' of a layer without experts");
        return per_layer[layer];
    }
};

ExpertSplit expert_split(const CheckpointArgs& args, int64_t ep) {
    MT_CHECK(ep > 0, "an expert-parallel size of ", ep);
    ExpertSplit split;
    const ArgValue* counts = find_arg(args, "num_experts");
    const auto* list = counts ? std::get_if<std::vector<int64_t>>(counts) : nullptr;
    const auto interval = int_arg(args, "expert_interval"), layers = int_arg(args, "num_layers");
    if (!list || !interval || !layers) {
        const int64_t experts = num_experts(args, "the checkpoint");
        MT_CHECK(experts % ep == 0, "--num-experts (", experts,
                 ") must be a multiple of the expert-parallel size (", ep, ")");
        split.uniform = experts / ep;
        return split;
    }
    for (int64_t n : nn::MoeLayerPattern::deepspeed(*list, *interval, *layers).experts) {
        MT_CHECK(n % ep == 0, "--num-experts ", int_list_text(*list),
                 ": a layer's experts must be a multiple of the expert-parallel size (", ep, ")");
        split.per_layer.push_back(n / ep);
    }
    return split;
}

// The entries of `names` rank `ep_rank` keeps, with their keys there.
std::vector<std::pair<size_t, std::string>> rank_entries(const std::vector<std::string>& names,
                                                         const ExpertSplit& split,
                                                         int64_t ep_rank) {
    std::vector<std::pair<size_t, std::string>> out;
    for (size_t i = 0; i < names.size(); ++i) {
        const auto k = expert_key(names[i]);
        if (!k) {
            out.emplace_back(i, names[i]);
            continue;
        }
        const int64_t local = split.local(*k);
        if (k->expert / local == ep_rank) out.emplace_back(i, renumbered(*k, k->expert % local));
    }
    return out;
}

std::vector<std::string> model_names(const CheckpointState& state) {
    std::vector<std::string> names;
    for (const auto& [name, t] : state.model) names.push_back(name);
    return names;
}

// Rank `ep_rank`'s optimizer: the dense parameters' state and its own experts', renamed as its
// model (`out`, whose optimizer it sets).
void keep_rank_optimizer(const CheckpointState& state, const ExpertSplit& split, int64_t ep_rank,
                         CheckpointState& out) {
    if (!state.optimizer) return;
    OptimizerCheckpoint o = *state.optimizer;
    o.params.clear();
    std::vector<std::string> names;
    for (const OptimizerParamState& p : state.optimizer->params) names.push_back(p.name);
    for (const auto& [i, key] : rank_entries(names, split, ep_rank)) {
        o.params.push_back(state.optimizer->params[i]);
        o.params.back().name = key;
    }
    out.optimizer = std::move(o);
}

CheckpointState without_model(const CheckpointState& state) {
    CheckpointState out = state;
    out.model.clear();
    return out;
}

}  // namespace

int64_t num_experts(const CheckpointArgs& args, const std::string& file) {
    const auto n = int_arg(args, "num_experts");
    MT_CHECK(n && *n > 0, file, ": an expert-parallel checkpoint whose args have no num_experts");
    return *n;
}

CheckpointState expert_rank_state(const CheckpointState& state, int64_t ep, int64_t ep_rank) {
    CheckpointState out = without_model(state);
    const ExpertSplit split = expert_split(state.args, ep);
    for (const auto& [i, key] : rank_entries(model_names(state), split, ep_rank))
        out.model.emplace_back(key, state.model[i].second);
    keep_rank_optimizer(state, split, ep_rank, out);
    return out;
}

StreamedState expert_rank_state(const StreamedState& state, int64_t ep, int64_t ep_rank) {
    MT_CHECK(!state.state.optimizer,
             "not supported yet: optimizer state in expert-parallel torch checkpoints");
    StreamedState out{without_model(state.state), {}};
    auto source = std::make_shared<std::vector<size_t>>();
    for (const auto& [i, key] :
         rank_entries(model_names(state.state), expert_split(state.state.args, ep), ep_rank)) {
        out.state.model.emplace_back(key, state.state.model[i].second);
        source->push_back(i);
    }
    out.make = [make = state.make, source](size_t i) { return make((*source)[i]); };
    return out;
}

CheckpointState join_expert_ranks(std::vector<CheckpointState> ranks) {
    MT_CHECK(!ranks.empty(), "no expert-parallel ranks to join");
    const ExpertSplit split = expert_split(ranks[0].args, int64_t(ranks.size()));
    CheckpointState out = std::move(ranks[0]);
    for (size_t e = 1; e < ranks.size(); ++e)
        MT_CHECK(bool(ranks[e].optimizer) == bool(out.optimizer), "expert-parallel rank ", e,
                 out.optimizer ? " has no" : " has", " optimizer state, rank 0 the reverse");
    // Rank 0's entries, then every other rank's experts, numbered globally.
    for (auto& [key, t] : out.model)
        if (const auto k = expert_key(key)) key = renumbered(*k, k->expert);
    if (out.optimizer)
        for (OptimizerParamState& p : out.optimizer->params)
            if (const auto k = expert_key(p.name)) p.name = renumbered(*k, k->expert);
    for (size_t e = 1; e < ranks.size(); ++e) {
        for (auto& [key, t] : ranks[e].model)
            if (const auto k = expert_key(key))
                out.model.emplace_back(renumbered(*k, int64_t(e) * split.local(*k) + k->expert),
                                       std::move(t));
        if (out.optimizer)
            for (OptimizerParamState& p : ranks[e].optimizer->params)
                if (const auto k = expert_key(p.name)) {
                    p.name = renumbered(*k, int64_t(e) * split.local(*k) + k->expert);
                    out.optimizer->params.push_back(std::move(p));
                }
    }
    return out;
}

}  // namespace mt::plugins::torch_ckpt
