#include "mt/checkpoint/reshard.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <optional>

#include "mt/checkpoint/checkpoint_args.h"
#include "mt/error.h"
#include "mt/nn/hybrid_layer_pattern.h"

namespace mt {

namespace {

bool split(const ShardSpec& spec) {
    return spec.kind != ShardSpec::Kind::replicated;
}

// The whole sizes of the parts each rank takes a slice of, along the split dimension of size
// `whole`: the spec's parts, its equal groups (split_each_group), or the whole dimension.
std::vector<int64_t> split_parts(const ShardSpec& spec, int64_t whole, const std::string& what) {
    if (!spec.part_sizes.empty()) {
        int64_t sum = 0;
        for (int64_t p : spec.part_sizes) sum += p;
        MT_CHECK(sum == whole, what, ": its parts (", sum, " in all) do not cover the ", whole,
                 " of the split dimension");
        return spec.part_sizes;
    }
    const int64_t groups = spec.split_each_group ? spec.num_groups : 1;
    MT_CHECK(groups > 0 && whole % groups == 0, what, ": dimension of ", whole,
             " does not split into ", groups, " groups");
    return std::vector<int64_t>(size_t(groups), whole / groups);
}

}  // namespace

Shape shard_shape(const Shape& whole, const ShardSpec& spec, int64_t tp, const std::string& what) {
    if (!split(spec)) return whole;
    const int d = spec.partition_dim;
    MT_CHECK(d < int(whole.size()), what, ": cannot split dimension ", d, " of a tensor of shape ",
             shape_str(whole));
    const std::vector<int64_t> parts = split_parts(spec, whole[d], what);
    for (int64_t part : parts)
        MT_CHECK(part % tp == 0, what, ": dimension ", d, " of ", shape_str(whole),
                 " does not split into ",
                 parts.size() > 1 ? std::to_string(parts.size()) + " parts of " : "", tp,
                 " equal tensor-parallel pieces");
    if (!spec.split_each_group && spec.part_sizes.empty() && spec.num_groups > 1)
        MT_CHECK(spec.num_groups % tp == 0, what, ": its ", spec.num_groups,
                 " groups (query groups) do not split evenly across ", tp,
                 " tensor-parallel ranks");
    Shape out = whole;
    out[d] /= tp;
    return out;
}

namespace {

// A layer's tensor: "decoder.layers.N.rest" (GPT's block) or "encoder.layers.N.rest" (BERT's).
struct LayerKey {
    std::string block;  // "decoder.layers."
    int64_t layer = 0;  // N
    size_t rest = 0;    // the offset of ".rest"
};

std::optional<LayerKey> layer_of(const std::string& name) {
    for (const std::string prefix : {"decoder.layers.", "encoder.layers."}) {
        if (name.rfind(prefix, 0) != 0) continue;
        size_t end = prefix.size();
        while (end < name.size() && name[end] >= '0' && name[end] <= '9') ++end;
        if (end == prefix.size() || end >= name.size() || name[end] != '.') return std::nullopt;
        return LayerKey{prefix, std::stoll(name.substr(prefix.size(), end - prefix.size())), end};
    }
    return std::nullopt;
}

std::string rank_name(int64_t tp, int64_t pp) {
    return "rank (tensor " + std::to_string(tp) + ", pipeline " + std::to_string(pp) + ")";
}

}  // namespace

Tensor shard_tensor(const Tensor& whole, const ShardSpec& spec, int64_t tensor_parallel,
                    int64_t rank) {
    MT_CHECK(rank >= 0 && rank < tensor_parallel, "tensor-parallel rank ", rank, " out of ",
             tensor_parallel);
    if (!split(spec) || tensor_parallel == 1) return whole;
    const Shape piece = shard_shape(whole.shape(), spec, tensor_parallel, "a tensor");
    const int d = spec.partition_dim;
    const std::vector<int64_t> parts = split_parts(spec, whole.shape()[d], "a tensor");
    if (parts.size() == 1) {
        const int64_t part = piece[d];
        return whole.slice(d, rank * part, (rank + 1) * part).contiguous();
    }
    Tensor out = Tensor::empty(piece, whole.dtype());
    int64_t begin = 0, at = 0;  // where the part starts in the whole and in the piece
    for (int64_t size : parts) {
        const int64_t local = size / tensor_parallel;
        out.slice(d, at, at + local)
            .copy_from(whole.slice(d, begin + rank * local, begin + (rank + 1) * local));
        begin += size;
        at += local;
    }
    return out;
}

std::vector<ShardBox> shard_boxes(const Shape& whole, const ShardSpec& spec,
                                  int64_t tensor_parallel, int64_t rank) {
    MT_CHECK(rank >= 0 && rank < tensor_parallel, "tensor-parallel rank ", rank, " out of ",
             tensor_parallel);
    if (!split(spec) || tensor_parallel == 1) return {{Shape(whole.size(), 0), whole}};
    const Shape piece = shard_shape(whole, spec, tensor_parallel, "a tensor");
    const int d = spec.partition_dim;
    std::vector<ShardBox> boxes;
    int64_t begin = 0;
    for (int64_t size : split_parts(spec, whole[d], "a tensor")) {
        const int64_t local = size / tensor_parallel;
        ShardBox b{Shape(whole.size(), 0), piece};
        b.offset[d] = begin + rank * local;
        b.size[d] = local;
        boxes.push_back(std::move(b));
        begin += size;
    }
    return boxes;
}

std::vector<ShardedTensor> piece_boxes(const Tensor& piece, const Shape& whole,
                                       const ShardSpec& spec, int64_t tensor_parallel,
                                       int64_t rank) {
    const std::vector<ShardBox> boxes = shard_boxes(whole, spec, tensor_parallel, rank);
    MT_CHECK(piece.shape() == shard_shape(whole, spec, tensor_parallel, "a tensor"),
             "tensor-parallel rank ", rank, "'s piece of a ", shape_str(whole), " tensor is ",
             piece.describe());
    std::vector<ShardedTensor> out;
    const int d = spec.partition_dim;
    int64_t at = 0;
    for (const ShardBox& box : boxes) {
        // Several boxes (a rank's slice of each part) lie end to end along the split dimension.
        const Tensor view = boxes.size() == 1 ? piece : piece.slice(d, at, at + box.size[d]);
        out.push_back(ShardedTensor{view, whole, box.offset});
        at += box.size[d];
    }
    return out;
}

Tensor unshard_tensor(const std::vector<Tensor>& pieces, const ShardSpec& spec) {
    MT_CHECK(!pieces.empty(), "no tensor-parallel pieces to join");
    if (!split(spec) || pieces.size() == 1) return pieces[0];
    const int64_t tp = int64_t(pieces.size());
    const int d = spec.partition_dim;
    for (const Tensor& p : pieces)
        MT_CHECK(p.shape() == pieces[0].shape() && p.dtype() == pieces[0].dtype(),
                 "tensor-parallel pieces differ: ", p.describe(), " and ", pieces[0].describe());
    Shape whole = pieces[0].shape();
    MT_CHECK(d < int(whole.size()), "cannot join dimension ", d, " of ", shape_str(whole));
    whole[d] *= tp;
    const std::vector<int64_t> parts = split_parts(spec, whole[d], "tensor-parallel pieces");
    Tensor out = Tensor::empty(whole, pieces[0].dtype());
    int64_t begin = 0, at = 0;  // where the part starts in the whole and in a piece
    for (int64_t size : parts) {
        MT_CHECK(size % tp == 0, "tensor-parallel pieces: a part of ", size,
                 " does not split into ", tp);
        const int64_t local = size / tp;
        for (int64_t r = 0; r < tp; ++r)
            out.slice(d, begin + r * local, begin + (r + 1) * local)
                .copy_from(pieces[r].slice(d, at, at + local));
        begin += size;
        at += local;
    }
    return out;
}

Tensor resize_vocab_rows(const Tensor& table, int64_t rows) {
    MT_CHECK(table.dim() >= 1 && table.shape()[0] > 0 && rows > 0,
             "cannot resize the vocabulary table ", table.describe(), " to ", rows, " rows");
    const int64_t have = table.shape()[0];
    if (rows <= have) return table.slice(0, 0, rows);
    Shape shape = table.shape();
    shape[0] = rows;
    Tensor out = Tensor::empty(shape, table.dtype());
    out.slice(0, 0, have).copy_from(table);
    const Tensor last = table.slice(0, have - 1, have);
    for (int64_t r = have; r < rows; ++r) out.slice(0, r, r + 1).copy_from(last);
    return out;
}

namespace {

// "...mlp.experts.linear_fc1.weight5" <-> "...mlp.experts.local_experts.5.linear_fc1.weight",
// and the biases' alike.
std::string other_expert_name(const std::string& name) {
    static const char* kLinears[] = {"linear_fc1.weight", "linear_fc2.weight", "linear_fc1.bias",
                                     "linear_fc2.bias"};
    static const std::string kExperts = ".mlp.experts.", kLocal = "local_experts.";
    const size_t at = name.find(kExperts);
    if (at == std::string::npos) return name;
    const size_t rest = at + kExperts.size();
    auto digits_from = [&](size_t i) {
        size_t end = i;
        while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
        return end;
    };
    if (name.compare(rest, kLocal.size(), kLocal) == 0) {  // sequential -> grouped
        const size_t e = rest + kLocal.size(), end = digits_from(e);
        if (end == e || end >= name.size() || name[end] != '.') return name;
        const std::string linear = name.substr(end + 1);
        if (std::find(std::begin(kLinears), std::end(kLinears), linear) == std::end(kLinears))
            return name;
        return name.substr(0, rest) + linear + name.substr(e, end - e);
    }
    for (const char* linear : kLinears) {  // grouped -> sequential
        const std::string l = linear;
        if (name.compare(rest, l.size(), l) != 0) continue;
        const size_t e = rest + l.size();
        if (e == name.size() || digits_from(e) != name.size()) return name;
        return name.substr(0, rest) + kLocal + name.substr(e) + "." + l;
    }
    return name;
}

}  // namespace

std::string other_impl_name(const std::string& name) {
    static const std::pair<std::string, std::string> kPairs[] = {
        {".self_attention.linear_qkv.layer_norm_weight", ".input_layernorm.weight"},
        {".self_attention.linear_qkv.layer_norm_bias", ".input_layernorm.bias"},
        {".mlp.linear_fc1.layer_norm_weight", ".pre_mlp_layernorm.weight"},
        {".mlp.linear_fc1.layer_norm_bias", ".pre_mlp_layernorm.bias"},
        // core_v0.19's MambaMixer keeps its convolution as parameters of its own (torch files;
        // torch_dist keys them as core_v0.13 named them).
        {".mixer.conv1d.weight", ".mixer.conv1d_weight"},
        {".mixer.conv1d.bias", ".mixer.conv1d_bias"}};
    for (const auto& [te, local] : kPairs) {
        if (name.ends_with(te)) return name.substr(0, name.size() - te.size()) + local;
        if (name.ends_with(local)) return name.substr(0, name.size() - local.size()) + te;
    }
    return other_expert_name(name);
}

std::optional<std::pair<size_t, size_t>> model_chunk(const std::string& name) {
    static const std::string kPrefix = "model";
    if (name.rfind(kPrefix, 0) != 0) return std::nullopt;
    size_t end = kPrefix.size();
    while (end < name.size() && name[end] >= '0' && name[end] <= '9') ++end;
    if (end == kPrefix.size() || end >= name.size() || name[end] != '.') return std::nullopt;
    return std::pair{size_t(std::stoull(name.substr(kPrefix.size(), end - kPrefix.size()))),
                     end + 1};
}

StagePlace stage_place(const parallel::PipelineSplit& split, const std::string& name) {
    const int last_stage = split.stages - 1, last_chunk = split.virtual_stages - 1;
    auto layer = layer_of(name);
    if (!layer) {
        if (name.rfind("embedding.", 0) == 0) return {0, 0, name};
        return {last_stage, last_chunk, name};
    }
    for (int s = 0; s < split.stages; ++s)
        for (int c = 0; c < split.virtual_stages; ++c) {
            const parallel::StageLayers l = parallel::pipeline_stage_layers(split, s, c);
            if (layer->layer >= l.first && layer->layer < l.first + l.count)
                return {s, c,
                        layer->block + std::to_string(layer->layer - l.first) +
                            name.substr(layer->rest)};
        }
    MT_FAIL("'", name, "': layer ", layer->layer, " is past the model's ", split.num_layers,
            " layers");
}

std::string whole_model_name(const parallel::PipelineSplit& split, int stage, int chunk,
                             const std::string& key) {
    auto layer = layer_of(key);
    if (!layer) return key;
    const parallel::StageLayers l = parallel::pipeline_stage_layers(split, stage, chunk);
    MT_CHECK(layer->layer < l.count, "'", key, "': pipeline stage ", stage,
             chunk ? " chunk " + std::to_string(chunk) : std::string(), " holds ", l.count,
             " layers");
    return layer->block + std::to_string(l.first + layer->layer) + key.substr(layer->rest);
}

namespace {

// Every model tensor and optimizer parameter of `state` renamed by `rename`.
template <class Rename>
void rename_tensors(CheckpointState& state, Rename rename) {
    for (auto& [name, t] : state.model) name = rename(name);
    if (state.optimizer) {
        for (OptimizerParamState& p : state.optimizer->params) p.name = rename(p.name);
        for (OptimizerShard& p : state.optimizer->shards) p.name = rename(p.name);
    }
}

}  // namespace

void name_for_stage(CheckpointState& state, const parallel::PipelineSplit& split, int stage) {
    rename_tensors(state, [&](const std::string& name) {
        const StagePlace place = stage_place(split, name);
        MT_CHECK(place.stage == stage, "'", name, "' belongs to pipeline stage ", place.stage,
                 ", not ", stage);
        return split.virtual_stages > 1 ? "model" + std::to_string(place.chunk) + "." + place.key
                                        : place.key;
    });
}

void name_for_whole_model(CheckpointState& state, const parallel::PipelineSplit& split, int stage) {
    rename_tensors(state, [&](const std::string& key) {
        const auto chunk = model_chunk(key);
        MT_CHECK(bool(chunk) == (split.virtual_stages > 1), "'", key, "' in a checkpoint of ",
                 split.virtual_stages, " virtual pipeline stages per rank");
        return chunk ? whole_model_name(split, stage, int(chunk->first), key.substr(chunk->second))
                     : whole_model_name(split, stage, 0, key);
    });
}

parallel::PipelineSplit pipeline_split_of(const CheckpointArgs& args, int64_t pipeline_parallel) {
    const std::optional<int64_t> layers = int_arg(args, "num_layers");
    MT_CHECK(layers.has_value(),
             "the checkpoint's args have no num_layers: its pipeline stages' "
             "layers cannot be placed");
    parallel::PipelineSplit split{*layers, int(pipeline_parallel)};
    split.first_stage_layers = int_arg(args, "decoder_first_pipeline_num_layers").value_or(-1);
    split.last_stage_layers = int_arg(args, "decoder_last_pipeline_num_layers").value_or(-1);
    split.account_for_embedding = bool_arg(args, "account_for_embedding_in_pipeline_split");
    split.account_for_loss = bool_arg(args, "account_for_loss_in_pipeline_split");
    split.virtual_stages = int(int_arg(args, "virtual_pipeline_model_parallel_size").value_or(1));
    // core_v0.19's hybrid pattern: its '|' segments are the model chunks.
    for (const char* name : {"hybrid_layer_pattern", "hybrid_override_pattern"})
        if (const ArgValue* v = find_arg(args, name))
            if (const auto* pattern = std::get_if<std::string>(v);
                pattern && pattern->find('|') != std::string::npos)
                split.segments = nn::hybrid_pipeline_segments(*pattern);
    return split;
}

std::vector<StageKey> stage_keys(const std::vector<ParameterInfo>& params,
                                 const parallel::PipelineSplit& split, int64_t stage) {
    MT_CHECK(split.stages > 0 && stage >= 0 && stage < split.stages, "pipeline stage ", stage,
             " out of ", split.stages);
    const bool chunks = split.virtual_stages > 1;
    std::optional<size_t> word_embeddings;
    bool output_layer = false, mtp = false;
    std::vector<StageKey> out;
    for (size_t i = 0; i < params.size(); ++i) {
        if (params[i].name == "embedding.word_embeddings.weight") word_embeddings = i;
        output_layer |= params[i].name == "output_layer.weight";
        mtp |= params[i].name.starts_with("mtp.");
        StagePlace place = stage_place(split, params[i].name);
        if (place.stage == stage)
            out.push_back({chunks ? "model" + std::to_string(place.chunk) + "." + place.key
                                  : std::move(place.key),
                           i});
    }
    const bool last = stage == split.stages - 1;
    const std::string last_chunk =
        chunks ? "model" + std::to_string(split.virtual_stages - 1) + "." : "";
    if (last && split.stages > 1 && !output_layer && word_embeddings)
        out.push_back({last_chunk + "output_layer.weight", *word_embeddings});
    // Multi-token prediction embeds on the last stage too: its copy comes first, as GPTModel
    // registers its embedding first.
    if (last && split.stages > 1 && mtp && word_embeddings)
        out.insert(out.begin(),
                   {last_chunk + "embedding.word_embeddings.weight", *word_embeddings});
    return out;
}

std::vector<StageKey> stage_keys(const std::vector<ParameterInfo>& params,
                                 int64_t pipeline_parallel, int64_t stage) {
    int64_t num_layers = 0;
    for (const ParameterInfo& p : params)
        if (auto l = layer_of(p.name)) num_layers = std::max(num_layers, l->layer + 1);
    MT_CHECK(pipeline_parallel > 0 && num_layers % pipeline_parallel == 0, "the model's ",
             num_layers, " layers do not split evenly into ", pipeline_parallel,
             " pipeline stages");
    return stage_keys(params, parallel::PipelineSplit{num_layers, int(pipeline_parallel)}, stage);
}

NamedTensors rank_tensors(const std::vector<ParameterInfo>& params,
                          const std::vector<Tensor>& whole, const CheckpointLayout& layout,
                          int64_t tp_rank, int64_t pp_rank) {
    MT_CHECK(whole.size() == params.size(), "rank_tensors: ", whole.size(), " tensors for ",
             params.size(), " parameters");
    NamedTensors out;
    for (const StageKey& k : stage_keys(params, layout.pipeline_parallel, pp_rank)) {
        const ParameterInfo& p = params[k.param];
        MT_CHECK(whole[k.param].shape() == p.shape, "'", p.name, "' has shape ",
                 shape_str(whole[k.param].shape()), " but the model args give ",
                 shape_str(p.shape));
        shard_shape(p.shape, p.shard, layout.tensor_parallel, "'" + p.name + "'");
        out.emplace_back(k.key,
                         shard_tensor(whole[k.param], p.shard, layout.tensor_parallel, tp_rank));
    }
    return out;
}

std::vector<std::vector<Tensor>> parameter_pieces(
    const std::vector<ParameterInfo>& params, const CheckpointLayout& layout,
    const std::function<const NamedTensors&(int64_t tp_rank, int64_t pp_rank)>& rank,
    const parallel::PipelineSplit* split) {
    const int64_t tp = layout.tensor_parallel;
    std::vector<std::vector<Tensor>> pieces(params.size(), std::vector<Tensor>(size_t(tp)));
    for (int64_t pp = 0; pp < layout.pipeline_parallel; ++pp) {
        const std::vector<StageKey> keys = split ? stage_keys(params, *split, pp)
                                                 : stage_keys(params, layout.pipeline_parallel, pp);
        for (int64_t r = 0; r < tp; ++r) {
            const NamedTensors& tensors = rank(r, pp);
            std::map<std::string, size_t> index;
            for (size_t i = 0; i < tensors.size(); ++i) index.emplace(tensors[i].first, i);
            for (const StageKey& k : keys) {
                const ParameterInfo& p = params[k.param];
                auto it = index.find(k.key);
                if (it == index.end()) it = index.find(other_impl_name(k.key));
                // Megatron's copies of the word embeddings on the last stage (tied, multi-token
                // prediction's) are not needed.
                const auto chunk = model_chunk(k.key);
                const bool copy =
                    (k.key.substr(chunk ? chunk->second : 0) == "output_layer.weight" &&
                     p.name != "output_layer.weight") ||
                    (pp > 0 && p.name.starts_with("embedding."));
                if (copy) {
                    if (it != index.end()) index.erase(it);
                    continue;
                }
                MT_CHECK(it != index.end(), rank_name(r, pp), " has no '", k.key, "' (", p.name,
                         ", whole shape ", shape_str(p.shape), ")");
                const Tensor& t = tensors[it->second].second;
                const Shape want = shard_shape(p.shape, p.shard, tp, "'" + p.name + "'");
                MT_CHECK(t.shape() == want, rank_name(r, pp), ": '", k.key, "' has shape ",
                         shape_str(t.shape()), " but the model args give ", shape_str(want),
                         tp > 1 ? " per rank (whole " + shape_str(p.shape) + ")" : std::string());
                pieces[k.param][size_t(r)] = t;
                index.erase(it);
                for (const std::string& alias : p.aliases) index.erase(alias);
            }
            for (const auto& [name, i] : index)
                MT_CHECK(name.ends_with("._extra_state"), rank_name(r, pp), " holds '", name, "' ",
                         shape_str(tensors[i].second.shape()),
                         ", which is not a parameter of the model its args describe");
        }
    }
    return pieces;
}

std::vector<Tensor> whole_tensors(
    const std::vector<ParameterInfo>& params, const CheckpointLayout& layout,
    const std::function<const NamedTensors&(int64_t tp_rank, int64_t pp_rank)>& rank) {
    const std::vector<std::vector<Tensor>> pieces = parameter_pieces(params, layout, rank);
    std::vector<Tensor> out;
    out.reserve(params.size());
    for (size_t i = 0; i < params.size(); ++i)
        out.push_back(unshard_tensor(pieces[i], params[i].shard));
    return out;
}

namespace {

// Each parameter's spec by name, under either norm spelling.
std::map<std::string, const ParameterInfo*> params_by_name(const std::vector<ParameterInfo>& ps) {
    std::map<std::string, const ParameterInfo*> out;
    for (const ParameterInfo& p : ps) {
        out[p.name] = &p;
        out[other_impl_name(p.name)] = &p;
    }
    return out;
}

}  // namespace

NamedTensors model_tensors(const CheckpointState& state) {
    NamedTensors out;
    out.reserve(state.model.size());
    for (const auto& [name, t] : state.model) out.emplace_back(name, t.local);
    return out;
}

Tensor in_own_storage(const Tensor& t) {
    if (t.is_contiguous() && t.offset() == 0 && t.storage()->bytes == t.nbytes()) return t;
    return t.clone();
}

CheckpointState tensor_parallel_piece(const CheckpointState& whole,
                                      const std::vector<ParameterInfo>& params,
                                      int64_t tensor_parallel, int64_t rank) {
    const auto by_name = params_by_name(params);
    auto cut = [&](const std::string& name, const Tensor& t) {
        auto it = by_name.find(name);
        if (it == by_name.end() || !t.defined()) return t;
        MT_CHECK(t.shape() == it->second->shape, "'", name, "' has shape ", shape_str(t.shape()),
                 " but the model's is ", shape_str(it->second->shape));
        return in_own_storage(shard_tensor(t, it->second->shard, tensor_parallel, rank));
    };
    CheckpointState out = whole;
    out.model.clear();
    for (const auto& [name, t] : whole.model)
        out.model.emplace_back(name, ShardedTensor::whole(cut(name, t.local)));
    if (out.optimizer)
        for (OptimizerParamState& s : out.optimizer->params) {
            s.exp_avg = cut(s.name, s.exp_avg);
            s.exp_avg_sq = cut(s.name, s.exp_avg_sq);
        }
    return out;
}

CheckpointState join_tensor_parallel(const std::vector<CheckpointState>& pieces,
                                     const std::vector<ParameterInfo>& params) {
    MT_CHECK(!pieces.empty(), "no tensor-parallel ranks to join");
    // The model tensors through whole_tensors (its checks name the rank and key).
    std::vector<NamedTensors> ranks;
    for (const CheckpointState& piece : pieces) ranks.push_back(model_tensors(piece));
    const std::vector<Tensor> whole = whole_tensors(
        params, CheckpointLayout{int64_t(pieces.size()), 1},
        [&](int64_t tp, int64_t) -> const NamedTensors& { return ranks[size_t(tp)]; });
    CheckpointState out = pieces[0];
    out.model.clear();
    for (size_t i = 0; i < params.size(); ++i)
        out.model.emplace_back(params[i].name, ShardedTensor::whole(whole[i]));
    // The optimizer moments, by name.
    const auto by_name = params_by_name(params);
    auto join = [&](const std::string& name, const std::function<Tensor(size_t)>& piece) {
        std::vector<Tensor> all;
        for (size_t r = 0; r < pieces.size(); ++r) all.push_back(piece(r));
        auto it = by_name.find(name);
        if (it == by_name.end() || !all[0].defined()) return all[0];
        return unshard_tensor(all, it->second->shard);
    };
    if (out.optimizer)
        for (size_t i = 0; i < out.optimizer->params.size(); ++i) {
            auto& s = out.optimizer->params[i];
            auto rank_state = [&](size_t r) -> const OptimizerParamState& {
                MT_CHECK(pieces[r].optimizer && pieces[r].optimizer->params.size() > i &&
                             pieces[r].optimizer->params[i].name == s.name,
                         "tensor rank ", r, " has no optimizer state for '", s.name, "'");
                return pieces[r].optimizer->params[i];
            };
            s.exp_avg = join(s.name, [&](size_t r) { return rank_state(r).exp_avg; });
            s.exp_avg_sq = join(s.name, [&](size_t r) { return rank_state(r).exp_avg_sq; });
        }
    return out;
}

}  // namespace mt
