// Megatron-core core names <-> torch_dist sharded keys. torch_dist stacks the homogeneous
// transformer layers: "decoder.layers.3.mlp.linear_fc1.weight" is layer 3 of the key
// "decoder.layers.mlp.linear_fc1.weight", whose global shape has a leading layer axis; the local
// spec's separate norms take the Transformer Engine names (input_layernorm ->
// self_attention.linear_qkv.layer_norm_*), and each layer's linear modules carry an
// `_extra_state` object. MoE experts (SequentialMLP.sharded_state_dict) share one key per
// tensor with an expert axis after the layer axis: "decoder.layers.3.mlp.experts.local_experts.
// 5.linear_fc1.weight" is [3, 5] of "decoder.layers.mlp.experts.experts.linear_fc1.weight".
// When not every layer is alike (--moe-layer-freq a list or above 1) Megatron keys each layer
// alone instead: "decoder.layers.3.mlp...", no layer axis.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mt/checkpoint.h"
#include "mt/tensor.h"

namespace mt::plugins::torch_dist {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
// Core-named pieces of tensors with their places in the whole ones; a name may come more than
// once (a piece of several boxes, mt/checkpoint/reshard.h shard_boxes).
using ShardedTensors = std::vector<std::pair<std::string, ShardedTensor>>;

// A tensor as torch_dist stores it: key, global shape and the chunks (offset, data) one rank
// writes (per layer and expert for stacked keys, and per box of its piece).
struct StoredTensor {
    std::string key;
    Shape global_shape;
    std::vector<std::pair<Shape, Tensor>> chunks;
    Shape flattened_from;  // stored flattened: the original global shape (DcpEntry's)
};

// The sizes megatron-core splits a Mamba layer's tensors by: the inner width d_inner, the B (and
// C) width ngroups x d_state and the heads.
struct MambaSplit {
    int64_t inner = 0, group_state = 0, heads = 0;
};

// How a model's tensors are keyed, from its checkpoint args.
struct KeyLayout {
    std::optional<int64_t> num_layers;   // the layer axis (default: up to the last layer held)
    std::optional<int64_t> num_experts;  // the expert axis (default: up to the last expert held)
    bool per_layer = false;              // each layer keyed alone (no layer axis)
    // The decoder's layers' own expert axes where they differ by layer (Megatron-DeepSpeed's
    // per-layer --num-experts; 0 for a dense layer); empty: num_experts.
    std::vector<int64_t> layer_experts;
    // --transformer-impl local (Megatron's default, and ours, is transformer_engine): a MoE
    // layer's pre_mlp_layernorm is stored under the fused norm's name, as the local spec maps it.
    bool local_spec = false;
    // --multi-latent-attention: Megatron's MLA specs keep every norm's module name.
    bool multi_latent = false;
    std::optional<MambaSplit> mamba;  // a MambaStack's sizes (its mixers' tensors split in parts)
};

// num_layers, num_experts, per_layer as Megatron's TransformerBlock decides it (moe_layer_freq
// a list, or an int above 1) or a MambaStack always does (and Megatron-DeepSpeed's MoE layers,
// layer_experts from its num_experts list and expert_interval), local_spec from transformer_impl,
// and a MambaStack's split sizes (hidden_size, mamba_head_dim, mamba_num_groups, mamba_state_dim,
// mamba_num_heads; none when they are missing, which stored_parts reports).
KeyLayout key_layout(const CheckpointArgs& args);

// Where a core-named tensor goes: its key and the leading axes its chunks sit at (the layer,
// then the expert), with their sizes.
struct KeyPlace {
    std::string key;
    Shape lead_offset, lead_size;
};
// `experts` is the expert axis's size (the layout's, or a default the caller knows).
KeyPlace key_place(const std::string& name, const KeyLayout& layout, int64_t num_layers,
                   int64_t num_experts);

// A part of a tensor stored under a key of its own: megatron-core's MambaMixer.sharded_state_dict
// (_split_tensor_factory) keys in_proj.weight's rows as "<name>.z", ".x", ".B", ".C", ".dt" and
// conv1d.weight's and .bias's as ".x", ".B", ".C", each part sharded over the tensor ranks by
// itself. Rows [begin, begin + size) of the whole tensor.
struct TensorPart {
    std::string suffix;  // "z"
    int64_t begin = 0, size = 0;
};
// The parts `name` (a core name, or one with a prefix) is stored in under `layout`; empty when
// it is stored whole.
std::vector<TensorPart> stored_parts(const std::string& name, const KeyLayout& layout);
// The pieces of `piece` (along dim 0 of the whole) in each part it overlaps: the part's suffix,
// the rows of the piece it covers (from, to: offsets in the piece's rows) and the part.
struct PartPiece {
    const TensorPart* part;
    int64_t from = 0, to = 0;  // rows of the piece
    int64_t offset = 0;        // where they start in the part
};
std::vector<PartPiece> part_pieces(const std::vector<TensorPart>& parts, int64_t piece_offset,
                                   int64_t piece_rows);
// The stored parts of `tensors` to join back into the tensors they were cut from, whatever is in
// front of the names: each joined tensor's name and shape, where it goes (the first part's
// position) and its parts' positions in row order. A missing part, or parts of different
// trailing shapes, is an mt::Error naming `where` (shapes only are read: placeholders do).
struct PartJoin {
    std::string name;
    size_t at = 0;
    std::vector<size_t> parts;
    Shape shape;
};
std::vector<PartJoin> part_joins(const NamedTensors& tensors, const std::string& where);
// `parts` one after another along dim 0, in a new tensor of `shape`.
Tensor join_rows(const std::vector<Tensor>& parts, const Shape& shape);
// part_joins applied: each joined tensor in place of its first part.
void join_parts(NamedTensors& tensors, const std::string& where);

// The core-named tensors of a whole stored tensor: a stacked key splits into one view per layer,
// an expert key into one per expert.
NamedTensors unstack(const std::string& key, const Tensor& full);

// A decoder layer's tensor by core name ("decoder.layers.3.mlp.experts.local_experts.5.
// linear_fc1.weight"): its layer, its name within the layer, and its expert if it is one
// (SequentialMLP's or --moe-grouped-gemm's numbering); nullopt for other names.
struct DecoderLayerTensor {
    int64_t layer = 0;
    std::string rest;
    std::optional<int64_t> expert;
};
std::optional<DecoderLayerTensor> decoder_layer_tensor(const std::string& name);

// Where unstack's tensors of a stored tensor of shape `size` lie in it: each core name with its
// leading (layer, expert) indices, one per axis unstack selects, and its own shape (the rest of
// the stored tensor's axes, whole).
struct StackedPiece {
    std::string name;
    Shape leading;
    Shape shape;
};
std::vector<StackedPiece> stacked_pieces(const std::string& key, const Shape& size);

// The stored tensors of core-named pieces, each key prefixed by `prefix` (""; or
// "optimizer.state.exp_avg." for the optimizer's moments, which Megatron shards like their
// parameters). With stacked layers, the layers held (a pipeline stage's run of them, numbered as
// in the whole model) must have the same tensors each (mt::Error naming the first gap
// otherwise). Which layers keep their norms' module names (MoE layers under Transformer
// Engine's spec, multi-latent attention) is read from `model` when given (the whole model's
// tensors: a chained optimizer's part may hold a layer's norm without its router), else from
// `tensors`.
std::vector<StoredTensor> stack(const ShardedTensors& tensors, const KeyLayout& layout,
                                const std::string& prefix = "",
                                const ShardedTensors* model = nullptr);

// The `_extra_state` object keys Megatron-core asks for when loading into a model with these
// tensors: "<block>.layers.<module>._extra_state/shard_<i>_<L>" for each layer's linear modules
// and attention core (Transformer Engine modules keep FP8 metadata there; ours is None; per-layer
// keys: "<block>.layers.<i>.<module>._extra_state/shard_0_1"), each expert's linears with their
// expert index ("shard_<i>.<e>_<L>.<E>"), and BertModel's "output_layer._extra_state/shard_0_1"
// (GPTModel drops its output layer's). Stacked keys cover all the model's layers; per-layer ones
// the layers held.
std::vector<std::string> extra_state_keys(const ShardedTensors& tensors, const KeyLayout& layout);

}  // namespace mt::plugins::torch_dist
