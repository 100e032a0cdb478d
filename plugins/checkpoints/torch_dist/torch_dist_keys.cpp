#include "torch_dist_keys.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "mt/error.h"

namespace mt::plugins::torch_dist {

namespace {

constexpr const char* kBlocks[] = {"decoder.layers.", "encoder.layers."};

// The local spec's norm modules and the Transformer Engine names torch_dist stores them under
// (megatron/core/transformer/transformer_layer.py, TransformerLayer.sharded_state_dict).
constexpr std::pair<const char*, const char*> kLocalNorms[] = {
    {"input_layernorm.weight", "self_attention.linear_qkv.layer_norm_weight"},
    {"input_layernorm.bias", "self_attention.linear_qkv.layer_norm_bias"},
    {"pre_mlp_layernorm.weight", "mlp.linear_fc1.layer_norm_weight"},
    {"pre_mlp_layernorm.bias", "mlp.linear_fc1.layer_norm_bias"},
};

// Modules whose `_extra_state` Megatron-core's layers shard: the four linears and, with
// Transformer Engine, the attention core.
constexpr const char* kLinears[] = {"self_attention.linear_qkv", "self_attention.linear_proj",
                                    "mlp.linear_fc1", "mlp.linear_fc2"};
constexpr const char* kAttentionCore = "self_attention.core_attention";

struct LayerName {
    std::string block;  // "decoder.layers."
    int64_t layer = 0;
    std::string rest;  // "mlp.linear_fc1.weight"
};

// "decoder.layers.3.mlp..." -> {decoder.layers., 3, mlp...}; nullopt for other names.
std::optional<LayerName> parse_layer(const std::string& name) {
    for (const char* block : kBlocks) {
        if (!name.starts_with(block)) continue;
        const size_t start = std::char_traits<char>::length(block);
        size_t end = start;
        while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
        if (end == start || end >= name.size() || name[end] != '.') return std::nullopt;
        return LayerName{block, std::stoll(name.substr(start, end - start)), name.substr(end + 1)};
    }
    return std::nullopt;
}

// A key of a stacked tensor: "<block>" followed by a module name, not a layer number.
const char* stacked_block(const std::string& key) {
    for (const char* block : kBlocks) {
        const size_t n = std::char_traits<char>::length(block);
        if (key.size() > n && key.starts_with(block) &&
            !std::isdigit(static_cast<unsigned char>(key[n])))
            return block;
    }
    return nullptr;
}

std::string te_name(const std::string& rest) {
    for (const auto& [local, te] : kLocalNorms)
        if (rest == local) return te;
    return rest;
}

// Per block, the layer count and the stacked names in first-seen order.
struct Block {
    std::vector<std::string> rests;
    // rest -> layer -> the boxes of that layer's tensor
    std::map<std::string, std::map<int64_t, std::vector<ShardedTensor>>> layers;
    std::set<int64_t> held;  // the layers held here (a pipeline stage's)
    int64_t first = 0;       // the first of them
    int64_t count = 0;       // the model's layers: the stacked axis
};

std::map<std::string, Block> blocks_of(const ShardedTensors& tensors,
                                       std::optional<int64_t> num_layers) {
    std::map<std::string, Block> blocks;
    for (const auto& [name, t] : tensors) {
        auto ln = parse_layer(name);
        if (!ln) continue;
        Block& b = blocks[ln->block];
        const std::string rest = te_name(ln->rest);
        auto [it, fresh] = b.layers.try_emplace(rest);
        if (fresh) b.rests.push_back(rest);
        std::vector<ShardedTensor>& boxes = it->second[ln->layer];
        for (const ShardedTensor& other : boxes)
            MT_CHECK(other.global_offset != t.global_offset, "two tensors are saved as ", ln->block,
                     ln->layer, ".", rest, " at offset ", shape_str(t.global_offset));
        boxes.push_back(t);
        b.held.insert(ln->layer);
    }
    for (auto& [block, b] : blocks) {
        // A pipeline stage holds some of the model's layers (a run, or with virtual stages one
        // run per model chunk).
        b.first = *b.held.begin();
        const int64_t end = *b.held.rbegin() + 1;
        b.count = num_layers.value_or(end);
        MT_CHECK(end <= b.count, "torch_dist: layer ", end - 1, " of ", block, " past the ",
                 b.count, " layers of the model");
        for (const std::string& rest : b.rests)
            for (int64_t i : b.held)
                MT_CHECK(b.layers.at(rest).count(i), "torch_dist stacks the layers of ", block,
                         " but layer ", i, " has no ", rest,
                         " (the layers held must hold the same tensors)");
    }
    return blocks;
}

}  // namespace

std::pair<std::string, std::optional<int64_t>> sharded_key(const std::string& name) {
    auto ln = parse_layer(name);
    if (!ln) return {name, std::nullopt};
    return {ln->block + te_name(ln->rest), ln->layer};
}

NamedTensors unstack(const std::string& key, const Tensor& full) {
    const char* block = stacked_block(key);
    if (!block) return {{key, full}};
    const std::string rest = key.substr(std::char_traits<char>::length(block));
    MT_CHECK(rest.find("mlp.experts.") == std::string::npos,
             "not supported yet: MoE expert tensor ", key,
             " (an expert axis after the layer axis)");
    MT_CHECK(full.dim() >= 1, "stacked tensor ", key, " has no layer axis");
    NamedTensors out;
    for (int64_t i = 0; i < full.size(0); ++i)
        out.emplace_back(block + std::to_string(i) + "." + rest, full.select(0, i));
    return out;
}

namespace {

// One chunk of a stored tensor: `piece` placed at `offset` of the whole, behind `lead` leading
// axes of size 1 (the layer axis of a stacked key).
std::pair<Shape, Tensor> chunk(const ShardedTensor& piece, Shape lead) {
    Shape offset = std::move(lead), shape(offset.size(), 1);
    offset.insert(offset.end(), piece.global_offset.begin(), piece.global_offset.end());
    shape.insert(shape.end(), piece.local.shape().begin(), piece.local.shape().end());
    return {offset, piece.local.contiguous().view(shape)};
}

}  // namespace

std::vector<StoredTensor> stack(const ShardedTensors& tensors, std::optional<int64_t> num_layers,
                                const std::string& prefix) {
    const std::map<std::string, Block> blocks = blocks_of(tensors, num_layers);
    std::vector<StoredTensor> out;
    std::map<std::string, size_t> index;  // key -> position in out
    auto stored = [&](const std::string& key, const Shape& global_shape) -> StoredTensor& {
        auto [it, fresh] = index.try_emplace(key, out.size());
        if (fresh) out.push_back({key, global_shape, {}, {}});
        StoredTensor& s = out[it->second];
        MT_CHECK(s.global_shape == global_shape, key, ": pieces of a ", shape_str(global_shape),
                 " and of a ", shape_str(s.global_shape), " tensor");
        return s;
    };
    std::set<std::string> emitted;
    for (const auto& [name, t] : tensors) {
        auto ln = parse_layer(name);
        if (!ln) {
            stored(prefix + name, t.global_shape).chunks.push_back(chunk(t, {}));
            continue;
        }
        const std::string rest = te_name(ln->rest);
        if (!emitted.insert(ln->block + rest).second) continue;
        const Block& b = blocks.at(ln->block);
        const auto& per_layer = b.layers.at(rest);
        const Shape& shape = per_layer.at(b.first).front().global_shape;
        Shape global_shape = shape;
        global_shape.insert(global_shape.begin(), b.count);
        StoredTensor& s = stored(prefix + ln->block + rest, global_shape);
        for (const auto& [i, boxes] : per_layer)
            for (const ShardedTensor& box : boxes) {
                MT_CHECK(box.global_shape == shape, name, ": layer ", i, " is ",
                         shape_str(box.global_shape), " but layer ", b.first, " is ",
                         shape_str(shape), " (torch_dist stacks them)");
                s.chunks.push_back(chunk(box, {i}));
            }
    }
    return out;
}

std::vector<std::string> extra_state_keys(const ShardedTensors& tensors,
                                          std::optional<int64_t> num_layers) {
    std::vector<std::string> keys;
    for (const auto& [block, b] : blocks_of(tensors, num_layers)) {
        std::vector<std::string> modules;
        for (const char* linear : kLinears)
            if (b.layers.count(std::string(linear) + ".weight")) modules.push_back(linear);
        if (b.layers.count("self_attention.linear_qkv.weight")) modules.push_back(kAttentionCore);
        for (const std::string& m : modules)
            for (int64_t i = 0; i < b.count; ++i)
                keys.push_back(block + m + "._extra_state/shard_" + std::to_string(i) + "_" +
                               std::to_string(b.count));
    }
    // BERT's output layer (a ColumnParallelLinear with its own bias) keeps its extra state in
    // BertModel's sharded state dict; GPTModel.sharded_state_dict pops it.
    const bool bert_output = std::any_of(tensors.begin(), tensors.end(), [](const auto& t) {
        return t.first == "output_layer.bias";
    });
    if (bert_output) keys.push_back("output_layer._extra_state/shard_0_1");
    return keys;
}

}  // namespace mt::plugins::torch_dist
