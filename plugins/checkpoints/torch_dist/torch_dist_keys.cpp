#include "torch_dist_keys.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "mt/checkpoint/checkpoint_args.h"
#include "mt/error.h"
#include "mt/nn/mamba_config.h"
#include "mt/nn/moe/layer_pattern.h"

namespace mt::plugins::torch_dist {

namespace {

// The blocks of layers: GPT's decoder and BERT's encoder, stacked (a layer axis unless the layout
// keys each layer alone), and the multi-token prediction depths, whose transformer layers
// Megatron keys one by one under "transformer_layer." (MultiTokenPredictionBlock's
// sharded_state_dict gives them no layer axis).
struct Block {
    const char* prefix;
    const char* inner;  // between the layer number and the layer's modules
    bool stacked;
};
constexpr Block kBlocks[] = {{"decoder.layers.", "", true},
                             {"encoder.layers.", "", true},
                             {"mtp.layers.", "transformer_layer.", false}};

// The local spec's norm modules and the Transformer Engine names torch_dist stores them under
// (megatron/core/transformer/transformer_layer.py, TransformerLayer.sharded_state_dict). Megatron's
// local spec maps pre_mlp_layernorm so in MoE layers too; its Transformer Engine MoE spec keeps a
// separate pre_mlp_layernorm, stored under that name.
constexpr std::pair<const char*, const char*> kLocalNorms[] = {
    {"input_layernorm.weight", "self_attention.linear_qkv.layer_norm_weight"},
    {"input_layernorm.bias", "self_attention.linear_qkv.layer_norm_bias"},
    {"pre_mlp_layernorm.weight", "mlp.linear_fc1.layer_norm_weight"},
    {"pre_mlp_layernorm.bias", "mlp.linear_fc1.layer_norm_bias"},
};

// Modules whose `_extra_state` Megatron-core's layers shard: the linears and, with Transformer
// Engine, the attention core; the experts' linears get theirs with an expert index.
constexpr const char* kLinears[] = {"self_attention.linear_qkv",
                                    "self_attention.linear_proj",
                                    "mlp.linear_fc1",
                                    "mlp.linear_fc2",
                                    "cross_attention.linear_q",
                                    "cross_attention.linear_kv",
                                    "cross_attention.linear_proj",
                                    "mlp.shared_experts.linear_fc1",
                                    "mlp.shared_experts.linear_fc2",
                                    "mixer.in_proj",
                                    "mixer.out_proj",
                                    "self_attention.linear_q_proj",
                                    "self_attention.linear_q_down_proj",
                                    "self_attention.linear_q_up_proj",
                                    "self_attention.linear_kv_down_proj",
                                    "self_attention.linear_kv_up_proj"};

// The Mamba mixer's tensors megatron-core stores in parts, and the parts in their row order.
enum class MambaRows { inner, group_state, heads };
struct SplitRule {
    const char* tail;
    std::vector<std::pair<const char*, MambaRows>> parts;
};
const std::vector<SplitRule>& split_rules() {
    using enum MambaRows;
    static const std::vector<SplitRule> rules = {
        {".mixer.in_proj.weight",
         {{"z", inner}, {"x", inner}, {"B", group_state}, {"C", group_state}, {"dt", heads}}},
        {".mixer.conv1d.weight", {{"x", inner}, {"B", group_state}, {"C", group_state}}},
        {".mixer.conv1d.bias", {{"x", inner}, {"B", group_state}, {"C", group_state}}},
    };
    return rules;
}
const SplitRule* split_rule(const std::string& name) {
    for (const SplitRule& r : split_rules())
        if (name.ends_with(r.tail)) return &r;
    return nullptr;
}
constexpr const char* kAttentionCore = "self_attention.core_attention";
constexpr const char* kExpertLinears[] = {"mlp.experts.experts.linear_fc1",
                                          "mlp.experts.experts.linear_fc2"};
constexpr const char* kRouter = "mlp.router.weight";

// SequentialMLP's names ("mlp.experts.local_experts.<e>.linear_fc1.weight"), Transformer
// Engine's grouped ones ("mlp.experts.linear_fc1.weight<e>") and the key both are stored under.
constexpr const char* kLocalExperts = "mlp.experts.local_experts.";
constexpr const char* kStoredExperts = "mlp.experts.experts.";
constexpr const char* kGroupedExperts = "mlp.experts.";

struct LayerName {
    std::string block;  // "decoder.layers."
    int64_t layer = 0;
    std::string rest;   // "mlp.linear_fc1.weight"
    std::string inner;  // Block::inner
    bool stacked = true;

    // The key of a layer keyed alone: "decoder.layers.3.mlp.linear_fc1.weight".
    std::string alone(const std::string& stored_rest) const {
        return block + std::to_string(layer) + "." + inner + stored_rest;
    }
};

// Digits of `s` from `at`: the number and the end, or nullopt.
std::optional<std::pair<int64_t, size_t>> number_at(const std::string& s, size_t at) {
    size_t end = at;
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
    if (end == at) return std::nullopt;
    return std::pair{std::stoll(s.substr(at, end - at)), end};
}

// "decoder.layers.3.mlp..." -> {decoder.layers., 3, mlp...}; nullopt for other names.
// "mtp.layers.0.transformer_layer.mlp..." -> {mtp.layers., 0, mlp...}; "mtp.layers.0.enorm.weight"
// is not a layer's.
std::optional<LayerName> parse_layer(const std::string& name) {
    for (const Block& block : kBlocks) {
        if (!name.starts_with(block.prefix)) continue;
        auto n = number_at(name, std::char_traits<char>::length(block.prefix));
        if (!n || n->second >= name.size() || name[n->second] != '.') return std::nullopt;
        const size_t rest = n->second + 1;
        if (name.compare(rest, std::char_traits<char>::length(block.inner), block.inner) != 0)
            return std::nullopt;
        return LayerName{block.prefix, n->first,
                         name.substr(rest + std::char_traits<char>::length(block.inner)),
                         block.inner, block.stacked};
    }
    return std::nullopt;
}

// An expert's tensor within a layer: "mlp.experts.local_experts.5.linear_fc1.weight" or
// "mlp.experts.linear_fc1.weight5" -> (5, "mlp.experts.experts.linear_fc1.weight").
std::optional<std::pair<int64_t, std::string>> parse_expert(const std::string& rest) {
    if (rest.starts_with(kLocalExperts)) {
        auto n = number_at(rest, std::char_traits<char>::length(kLocalExperts));
        if (!n || n->second >= rest.size() || rest[n->second] != '.') return std::nullopt;
        return std::pair{n->first, kStoredExperts + rest.substr(n->second + 1)};
    }
    if (!rest.starts_with(kGroupedExperts) || rest.starts_with(kStoredExperts)) return std::nullopt;
    size_t digits = rest.size();
    while (digits > 0 && std::isdigit(static_cast<unsigned char>(rest[digits - 1]))) --digits;
    const std::string base = rest.substr(0, digits);
    if (digits == rest.size() || !(base.ends_with(".weight") || base.ends_with(".bias")))
        return std::nullopt;
    return std::pair{std::stoll(rest.substr(digits)),
                     kStoredExperts + base.substr(std::char_traits<char>::length(kGroupedExperts))};
}

// A key of a stacked tensor: "<block>" followed by a module name, not a layer number.
const char* stacked_block(const std::string& key) {
    for (const Block& block : kBlocks) {
        const size_t n = std::char_traits<char>::length(block.prefix);
        if (block.stacked && key.size() > n && key.starts_with(block.prefix) &&
            !std::isdigit(static_cast<unsigned char>(key[n])))
            return block.prefix;
    }
    return nullptr;
}

// The stored name of a layer's tensor: the norms' Transformer Engine names (unless the layer
// keeps its norms' module names), the experts' shared key; and the expert, if any.
struct LayerPart {
    std::string rest;
    std::optional<int64_t> expert;
};
LayerPart stored_part(const std::string& rest, bool keeps_norm_names) {
    if (auto e = parse_expert(rest)) return {e->second, e->first};
    if (!keeps_norm_names)
        for (const auto& [local, te] : kLocalNorms)
            if (rest == local) return {te, std::nullopt};
    return {rest, std::nullopt};
}

// A layer's tensor that marks a multi-latent attention layer. Megatron's MLA specs keep their
// norms' module names (input_layernorm a TENorm of its own with Transformer Engine; no
// sharded_state_dict_keys_map in the local spec).
constexpr const char* kMlaMarker = "self_attention.linear_kv_down_proj.weight";

// The layers (block, layer) whose norms keep their module names: multi-latent attention layers,
// and MoE layers built by Transformer Engine's spec (their own pre_mlp_layernorm, the only norm
// such a layer has under that name: those with a router and no local input norm).
std::set<std::pair<std::string, int64_t>> layers_keeping_norm_names(const ShardedTensors& tensors) {
    std::set<std::pair<std::string, int64_t>> routed, local, mla;
    for (const auto& [name, t] : tensors)
        if (auto ln = parse_layer(name)) {
            if (ln->rest == kRouter) routed.insert({ln->block, ln->layer});
            if (ln->rest.starts_with("input_layernorm.")) local.insert({ln->block, ln->layer});
            if (ln->rest == kMlaMarker) mla.insert({ln->block, ln->layer});
        }
    std::erase_if(routed, [&](const auto& l) { return local.count(l); });
    routed.insert(mla.begin(), mla.end());
    return routed;
}

// The layer-axis sizes of each block (the layout's count, or up to the last layer held) and the
// expert axis size (the layout's, or up to the last expert held).
struct Extents {
    std::map<std::string, int64_t> layers;
    int64_t experts = 0;
};
Extents extents_of(const ShardedTensors& tensors, const KeyLayout& layout) {
    Extents x;
    int64_t experts = 0;
    std::set<std::string> alone;  // blocks keyed layer by layer whatever the layout
    for (const auto& [name, t] : tensors) {
        auto ln = parse_layer(name);
        if (!ln) continue;
        int64_t& n = x.layers[ln->block];
        n = std::max(n, ln->layer + 1);
        if (!ln->stacked) alone.insert(ln->block);
        if (auto e = parse_expert(ln->rest)) experts = std::max(experts, e->first + 1);
    }
    for (auto& [block, n] : x.layers) {
        if (alone.count(block)) continue;
        if (layout.num_layers)
            MT_CHECK(n <= *layout.num_layers, "torch_dist: layer ", n - 1, " of ", block,
                     " past the ", *layout.num_layers, " layers of the model");
        n = layout.num_layers.value_or(n);
    }
    if (layout.num_experts)
        MT_CHECK(experts <= *layout.num_experts, "torch_dist: expert ", experts - 1, " past the ",
                 *layout.num_experts, " experts of the model");
    x.experts = layout.num_experts.value_or(experts);
    return x;
}

// The expert axis of a layer's experts: the model's, or the layer's own where they differ.
int64_t layer_expert_axis(int64_t model_experts, const KeyLayout& layout, const std::string& block,
                          int64_t layer) {
    if (layout.layer_experts.empty() || block != "decoder.layers.") return model_experts;
    MT_CHECK(layer >= 0 && layer < int64_t(layout.layer_experts.size()), "torch_dist: layer ",
             layer, " of ", block, " past the ", layout.layer_experts.size(),
             " layers of the model");
    return layout.layer_experts[size_t(layer)];
}

// With stacked layers, every layer held must hold the same stored tensors.
void check_alike(const ShardedTensors& tensors, const KeyLayout& layout,
                 const std::set<std::pair<std::string, int64_t>>& keeping_norm_names) {
    if (layout.per_layer) return;
    // block -> stored rest -> layers holding it; block -> layers held
    std::map<std::string, std::map<std::string, std::set<int64_t>>> holders;
    std::map<std::string, std::set<int64_t>> held;
    std::map<std::string, std::vector<std::string>> order;
    for (const auto& [name, t] : tensors) {
        auto ln = parse_layer(name);
        if (!ln || !ln->stacked) continue;
        const std::string rest =
            stored_part(ln->rest, keeping_norm_names.count({ln->block, ln->layer})).rest;
        auto& layers = holders[ln->block][rest];
        if (layers.empty()) order[ln->block].push_back(rest);
        layers.insert(ln->layer);
        held[ln->block].insert(ln->layer);
    }
    for (const auto& [block, rests] : order)
        for (const std::string& rest : rests)
            for (int64_t i : held[block])
                MT_CHECK(holders[block][rest].count(i), "torch_dist stacks the layers of ", block,
                         " but layer ", i, " has no ", rest,
                         " (the layers held must hold the same tensors)");
}

}  // namespace

KeyLayout key_layout(const CheckpointArgs& args) {
    KeyLayout layout;
    layout.num_layers = int_arg(args, "num_layers");
    layout.num_experts = int_arg(args, "num_experts");
    const ArgValue* impl = find_arg(args, "transformer_impl");
    layout.local_spec = impl && *impl == ArgValue(std::string("local"));
    const ArgValue* mla = find_arg(args, "multi_latent_attention");
    layout.multi_latent = mla && *mla == ArgValue(true);
    if (const ArgValue* freq = find_arg(args, "moe_layer_freq"); freq && layout.num_experts) {
        if (std::holds_alternative<std::vector<int64_t>>(*freq)) layout.per_layer = true;
        if (const int64_t* every = std::get_if<int64_t>(freq)) layout.per_layer = *every > 1;
    }
    // Megatron-DeepSpeed's MoE layers (DeepSpeed's, every expert_interval'th layer, a count of
    // experts each): the layers differ, each keyed alone.
    const auto interval = int_arg(args, "expert_interval");
    if (const ArgValue* experts = find_arg(args, "num_experts"); experts && interval)
        if (const auto* list = std::get_if<std::vector<int64_t>>(experts);
            list && layout.num_layers &&
            std::any_of(list->begin(), list->end(), [](int64_t n) { return n > 1; })) {
            layout.per_layer = true;
            layout.layer_experts =
                nn::MoeLayerPattern::deepspeed(*list, *interval, *layout.num_layers).experts;
        }
    // A MambaStack keys each layer alone (its layers differ).
    if (megatron_mamba_model(args)) {
        layout.per_layer = true;
        const auto hidden = int_arg(args, "hidden_size"),
                   head_dim = int_arg(args, "mamba_head_dim"),
                   groups = int_arg(args, "mamba_num_groups"),
                   state = int_arg(args, "mamba_state_dim");
        if (hidden && head_dim && groups && state && *head_dim > 0) {
            nn::MambaConfig m;
            m.head_dim = *head_dim;
            m.num_heads = int_arg(args, "mamba_num_heads").value_or(0);
            const int64_t heads = m.heads(*hidden);
            layout.mamba = MambaSplit{heads * *head_dim, *groups * *state, heads};
        }
    }
    return layout;
}

std::vector<TensorPart> stored_parts(const std::string& name, const KeyLayout& layout) {
    const SplitRule* rule = split_rule(name);
    if (!rule) return {};
    MT_CHECK(layout.mamba.has_value(), "torch_dist: ", name,
             " is a Mamba mixer's tensor, which megatron-core stores in parts, but the args lack "
             "hidden_size, mamba_head_dim, mamba_num_groups or mamba_state_dim");
    std::vector<TensorPart> parts;
    int64_t begin = 0;
    for (const auto& [suffix, rows] : rule->parts) {
        const int64_t size = rows == MambaRows::inner         ? layout.mamba->inner
                             : rows == MambaRows::group_state ? layout.mamba->group_state
                                                              : layout.mamba->heads;
        parts.push_back({suffix, begin, size});
        begin += size;
    }
    return parts;
}

std::vector<PartPiece> part_pieces(const std::vector<TensorPart>& parts, int64_t piece_offset,
                                   int64_t piece_rows) {
    std::vector<PartPiece> out;
    for (const TensorPart& p : parts) {
        const int64_t a = std::max(piece_offset, p.begin);
        const int64_t b = std::min(piece_offset + piece_rows, p.begin + p.size);
        if (a < b) out.push_back({&p, a - piece_offset, b - piece_offset, a - p.begin});
    }
    return out;
}

std::vector<PartJoin> part_joins(const NamedTensors& tensors, const std::string& where) {
    // base name -> the position of its first part and each part's position
    std::map<std::string, std::pair<size_t, std::map<std::string, size_t>>> found;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const std::string& name = tensors[i].first;
        const size_t dot = name.rfind('.');
        if (dot == std::string::npos) continue;
        const std::string base = name.substr(0, dot), suffix = name.substr(dot + 1);
        const SplitRule* rule = split_rule(base);
        if (!rule || std::none_of(rule->parts.begin(), rule->parts.end(),
                                  [&](const auto& p) { return suffix == p.first; }))
            continue;
        auto it = found.try_emplace(base, i, std::map<std::string, size_t>()).first;
        MT_CHECK(it->second.second.emplace(suffix, i).second, where, ": ", name, " twice");
    }
    std::vector<PartJoin> joins;
    for (auto& [base, entry] : found) {
        const auto& [at, parts] = entry;
        PartJoin join{base, at, {}, {}};
        for (const auto& [suffix, kind] : split_rule(base)->parts) {
            auto it = parts.find(suffix);
            MT_CHECK(it != parts.end(), where, ": ", base, " has no part ", base, ".", suffix);
            const Tensor& t = tensors[it->second].second;
            MT_CHECK(t.dim() >= 1 && (join.parts.empty() ||
                                      [&] {
                                          const Tensor& first = tensors[join.parts[0]].second;
                                          Shape a = t.shape(), b = first.shape();
                                          a[0] = b[0] = 0;
                                          return a == b && t.dtype() == first.dtype();
                                      }()),
                     where, ": the parts of ", base, " differ in shape: ", t.describe(), " and ",
                     tensors[join.parts[0]].second.describe());
            if (join.shape.empty())
                join.shape = t.shape();
            else
                join.shape[0] += t.size(0);
            join.parts.push_back(it->second);
        }
        joins.push_back(std::move(join));
    }
    return joins;
}

Tensor join_rows(const std::vector<Tensor>& parts, const Shape& shape) {
    Tensor whole = Tensor::empty(shape, parts.at(0).dtype());
    int64_t row = 0;
    for (const Tensor& t : parts) {
        whole.slice(0, row, row + t.size(0)).copy_from(t);
        row += t.size(0);
    }
    return whole;
}

void join_parts(NamedTensors& tensors, const std::string& where) {
    std::vector<bool> drop(tensors.size(), false);
    for (const PartJoin& join : part_joins(tensors, where)) {
        std::vector<Tensor> parts;
        for (size_t i : join.parts) {
            parts.push_back(tensors[i].second);
            drop[i] = i != join.at;
        }
        tensors[join.at] = {join.name, join_rows(parts, join.shape)};
    }
    size_t i = 0;
    std::erase_if(tensors, [&](const auto&) { return drop[i++]; });
}

namespace {

KeyPlace place_of(const LayerName& ln, const LayerPart& part, const KeyLayout& layout,
                  int64_t num_layers, int64_t model_experts, const std::string& name) {
    const int64_t num_experts = layer_expert_axis(model_experts, layout, ln.block, ln.layer);
    KeyPlace place;
    if (layout.per_layer || !ln.stacked) {
        place.key = ln.alone(part.rest);
    } else {
        MT_CHECK(ln.layer < num_layers, "torch_dist: ", name, " is not a layer of ", num_layers);
        place.key = ln.block + part.rest;
        place.lead_offset.push_back(ln.layer);
        place.lead_size.push_back(num_layers);
    }
    if (part.expert) {
        MT_CHECK(*part.expert < num_experts, "torch_dist: ", name, " is not an expert of ",
                 num_experts);
        place.lead_offset.push_back(*part.expert);
        place.lead_size.push_back(num_experts);
    }
    return place;
}

}  // namespace

KeyPlace key_place(const std::string& name, const KeyLayout& layout, int64_t num_layers,
                   int64_t num_experts) {
    auto ln = parse_layer(name);
    if (!ln) return {name, {}, {}};
    // Only a MoE layer keeps a pre_mlp_layernorm under Transformer Engine's spec; multi-latent
    // attention layers keep their norms' names in both.
    return place_of(*ln, stored_part(ln->rest, !layout.local_spec || layout.multi_latent), layout,
                    num_layers, num_experts, name);
}

NamedTensors unstack(const std::string& key, const Tensor& full) {
    std::string prefix = key, rest;  // the name before the layer axis, and after it
    const char* block = stacked_block(key);
    if (block) {
        prefix = block;
        rest = key.substr(prefix.size());
    }
    NamedTensors layers;  // (name up to where an expert index goes, tensor)
    if (block) {
        MT_CHECK(full.dim() >= 1, "stacked tensor ", key, " has no layer axis");
        for (int64_t i = 0; i < full.size(0); ++i)
            layers.emplace_back(prefix + std::to_string(i) + "." + rest, full.select(0, i));
    } else {
        layers.emplace_back(key, full);
    }
    const size_t at = key.find(kStoredExperts);
    if (at == std::string::npos || !parse_layer(layers.front().first)) return layers;
    NamedTensors out;
    for (const auto& [name, t] : layers) {
        const size_t e_at = name.find(kStoredExperts);
        const std::string head = name.substr(0, e_at) + kLocalExperts;
        const std::string tail = name.substr(e_at + std::char_traits<char>::length(kStoredExperts));
        MT_CHECK(t.dim() >= 1, "expert tensor ", key, " has no expert axis");
        for (int64_t e = 0; e < t.size(0); ++e)
            out.emplace_back(head + std::to_string(e) + "." + tail, t.select(0, e));
    }
    return out;
}

std::optional<DecoderLayerTensor> decoder_layer_tensor(const std::string& name) {
    const std::optional<LayerName> l = parse_layer(name);
    if (!l || l->block != "decoder.layers.") return std::nullopt;
    DecoderLayerTensor out{l->layer, l->rest, std::nullopt};
    if (const auto e = parse_expert(l->rest)) out.expert = e->first;
    return out;
}

std::vector<StackedPiece> stacked_pieces(const std::string& key, const Shape& size) {
    const int64_t elements = shape_numel(size);
    std::vector<StackedPiece> out;
    for (auto& [name, piece] : unstack(key, tensor_placeholder(size, DType::f32))) {
        // unstack selects leading axes: the view's offset gives its indices along them.
        const size_t lead = size.size() - size_t(piece.dim());
        Shape leading(lead, 0);
        int64_t rest = piece.offset(), stride = elements;
        for (size_t d = 0; d < lead && elements > 0; ++d) {
            stride /= size[d];
            leading[d] = rest / stride;
            rest %= stride;
        }
        out.push_back({std::move(name), std::move(leading), piece.shape()});
    }
    return out;
}

namespace {

// One chunk of a stored tensor: `piece` placed at `offset` of the whole, behind leading axes of
// size 1 at `lead` (the layer and expert axes).
std::pair<Shape, Tensor> chunk(const ShardedTensor& piece, Shape lead) {
    Shape offset = std::move(lead), shape(offset.size(), 1);
    offset.insert(offset.end(), piece.global_offset.begin(), piece.global_offset.end());
    shape.insert(shape.end(), piece.local.shape().begin(), piece.local.shape().end());
    return {offset, piece.local.contiguous().view(shape)};
}

}  // namespace

namespace {

// The tensors as stored: each Mamba mixer tensor's piece cut into its parts' pieces, named
// "<name>.<suffix>" and placed in the part.
ShardedTensors in_stored_parts(const ShardedTensors& tensors, const KeyLayout& layout) {
    ShardedTensors out;
    for (const auto& [name, t] : tensors) {
        const std::vector<TensorPart> parts = stored_parts(name, layout);
        if (parts.empty()) {
            out.emplace_back(name, t);
            continue;
        }
        MT_CHECK(
            !t.global_shape.empty() && t.global_shape[0] == parts.back().begin + parts.back().size,
            "torch_dist: ", name, " is ", shape_str(t.global_shape), ", not the ",
            parts.back().begin + parts.back().size, " rows of its parts");
        for (const PartPiece& p : part_pieces(parts, t.global_offset[0], t.local.size(0))) {
            ShardedTensor piece{t.local.slice(0, p.from, p.to), t.global_shape, t.global_offset};
            piece.global_shape[0] = p.part->size;
            piece.global_offset[0] = p.offset;
            out.emplace_back(name + "." + p.part->suffix, std::move(piece));
        }
    }
    return out;
}

}  // namespace

std::vector<StoredTensor> stack(const ShardedTensors& whole_tensors, const KeyLayout& layout,
                                const std::string& prefix, const ShardedTensors* model) {
    const ShardedTensors tensors = in_stored_parts(whole_tensors, layout);
    const auto keeping_norm_names =
        layers_keeping_norm_names(model ? in_stored_parts(*model, layout) : tensors);
    check_alike(tensors, layout, keeping_norm_names);
    const Extents extents = extents_of(tensors, layout);
    std::vector<StoredTensor> out;
    std::map<std::string, size_t> index;             // key -> position in out
    std::map<std::string, std::string> first;        // key -> the name of its first piece
    std::map<std::string, std::set<Shape>> offsets;  // key -> its chunks' offsets
    for (const auto& [name, t] : tensors) {
        KeyPlace place{name, {}, {}};
        if (auto ln = parse_layer(name))
            place = place_of(
                *ln, stored_part(ln->rest, keeping_norm_names.count({ln->block, ln->layer})),
                layout, extents.layers.at(ln->block), extents.experts, name);
        Shape global_shape = place.lead_size;
        global_shape.insert(global_shape.end(), t.global_shape.begin(), t.global_shape.end());
        const std::string key = prefix + place.key;
        auto [it, fresh] = index.try_emplace(key, out.size());
        if (fresh) {
            out.push_back({key, global_shape, {}, {}});
            first[key] = name;
        }
        StoredTensor& s = out[it->second];
        MT_CHECK(s.global_shape == global_shape, name, " is ", shape_str(t.global_shape), " but ",
                 first[key], " is ",
                 shape_str(Shape(s.global_shape.begin() + ptrdiff_t(place.lead_size.size()),
                                 s.global_shape.end())),
                 " (torch_dist stores them as one tensor)");
        auto c = chunk(t, place.lead_offset);
        MT_CHECK(offsets[key].insert(c.first).second, "two tensors are saved as ", key,
                 " at offset ", shape_str(c.first));
        s.chunks.push_back(std::move(c));
    }
    return out;
}

std::vector<std::string> extra_state_keys(const ShardedTensors& tensors, const KeyLayout& layout) {
    const Extents extents = extents_of(tensors, layout);
    // block -> layer -> the stored names of its tensors
    std::map<std::string, std::map<int64_t, std::set<std::string>>> layers;
    std::map<std::string, std::string> alone;  // blocks keyed layer by layer: their inner part
    for (const auto& [name, t] : tensors)
        if (auto ln = parse_layer(name)) {
            layers[ln->block][ln->layer].insert(stored_part(ln->rest, false).rest);
            if (layout.per_layer || !ln->stacked) alone.emplace(ln->block, ln->inner);
        }
    std::vector<std::string> keys;
    for (const auto& [block, held] : layers) {
        const int64_t count = extents.layers.at(block);
        // One layer's modules; `layer` is its place on the layer axis (stacked keys), `experts`
        // its expert axis.
        auto add_layer = [&](const std::set<std::string>& rests, const std::string& base,
                             std::optional<int64_t> layer, int64_t experts) {
            const std::string at = layer ? std::to_string(*layer) : "0";
            const std::string of = layer ? std::to_string(count) : "1";
            std::vector<std::string> modules;
            for (const char* linear : kLinears)
                if (rests.count(std::string(linear) + ".weight")) modules.push_back(linear);
            if (rests.count("self_attention.linear_qkv.weight") || rests.count(kMlaMarker))
                modules.push_back(kAttentionCore);
            // Transformer Engine's MLA spec: input_layernorm is a TENorm.
            if (rests.count(kMlaMarker)) modules.push_back("input_layernorm");
            for (const std::string& m : modules)
                keys.push_back(base + m + "._extra_state/shard_" + at + "_" + of);
            for (const char* linear : kExpertLinears)
                if (rests.count(std::string(linear) + ".weight"))
                    for (int64_t e = 0; e < experts; ++e)
                        keys.push_back(base + linear + "._extra_state/shard_" +
                                       (layer ? at + "." : "") + std::to_string(e) + "_" +
                                       (layer ? of + "." : "") + std::to_string(experts));
        };
        if (auto inner = alone.find(block); inner != alone.end()) {
            for (const auto& [i, rests] : held)
                add_layer(rests, block + std::to_string(i) + "." + inner->second, std::nullopt,
                          layer_expert_axis(extents.experts, layout, block, i));
        } else {
            // The layers are alike (check_alike): each of the model's takes the first's modules.
            for (int64_t i = 0; i < count; ++i)
                add_layer(held.begin()->second, block, i, extents.experts);
        }
    }
    // An output layer with its own bias (BERT's; T5's lm_head.output_layer and its repeat
    // output_layer) keeps its extra state in the model's sharded state dict; GPTModel's
    // sharded_state_dict pops it.
    bool bert_output = false;
    for (const auto& [name, t] : tensors)
        if (name == "output_layer.bias" || name.ends_with(".output_layer.bias")) {
            keys.push_back(name.substr(0, name.size() - 4) + "_extra_state/shard_0_1");
            bert_output = bert_output || name == "output_layer.bias";
        }
    const auto holds = [&](std::string_view name) {
        return std::any_of(tensors.begin(), tensors.end(),
                           [&](const auto& t) { return t.first == name; });
    };
    // A TransformerBlock's final layernorm is Transformer Engine's TENorm when Megatron runs
    // with it (the key is unexpected, and so ignored, by the local spec's torch norm).
    if (holds("decoder.final_layernorm.weight"))
        keys.push_back("decoder.final_layernorm._extra_state/shard_0_1");
    // Each multi-token prediction depth's eh_proj (a linear) and norms (TENorms).
    for (int64_t k = 0; holds("mtp.layers." + std::to_string(k) + ".eh_proj.weight"); ++k)
        for (const char* module : {"enorm", "hnorm", "eh_proj", "final_layernorm"})
            keys.push_back("mtp.layers." + std::to_string(k) + "." + module +
                           "._extra_state/shard_0_1");
    // A MambaStack's final norm is Transformer Engine's (TENorm), with its extra state, and
    // MambaModel keeps its output layer's (GPTModel pops it).
    if (holds("decoder.final_norm.weight")) {
        keys.push_back("decoder.final_norm._extra_state/shard_0_1");
        if (!bert_output) keys.push_back("output_layer._extra_state/shard_0_1");
    }
    return keys;
}

}  // namespace mt::plugins::torch_dist
