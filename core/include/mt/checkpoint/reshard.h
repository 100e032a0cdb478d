// Tensor- and pipeline-parallel resharding: a model's whole (canonical, Megatron-core named)
// tensors to the state dict of each (tensor rank, pipeline stage) by each parameter's ShardSpec,
// and back, as Megatron lays them out in its per-rank checkpoints and tools/checkpoint does.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mt/api.h"
#include "mt/checkpoint.h"
#include "mt/model.h"
#include "mt/parallel/pipeline_layers.h"
#include "mt/tensor.h"

namespace mt {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// The shape of one rank's piece of a tensor of shape `whole` split by `spec` among
// `tensor_parallel` ranks; mt::Error naming `what` when it does not split evenly.
MT_API Shape shard_shape(const Shape& whole, const ShardSpec& spec, int64_t tensor_parallel,
                         const std::string& what);

// Rank `rank`'s piece of a whole tensor among `tensor_parallel` ranks: replicated: the tensor;
// column / vocab: a 1/tp slice of dim `partition_dim` (QKV: whole query groups); with
// split_each_group, the rank's slice of every group, concatenated (SwiGLU [gate_r; up_r]);
// row: a slice of dim 1. A dimension that does not divide is an mt::Error.
MT_API Tensor shard_tensor(const Tensor& whole, const ShardSpec& spec, int64_t tensor_parallel,
                           int64_t rank);

// The boxes of the whole tensor that rank `rank`'s piece covers, in the piece's order along the
// split dimension: one (a replicated tensor's whole, a column/row/vocab slice, QKV's whole query
// groups), or with split_each_group one per group (SwiGLU's [gate_r; up_r]: a box of the gate
// rows and one of the up rows), as Megatron-core's sharded state dict describes them.
MT_API std::vector<ShardBox> shard_boxes(const Shape& whole, const ShardSpec& spec,
                                         int64_t tensor_parallel, int64_t rank);

// The whole tensor from every rank's piece (in rank order); the inverse of shard_tensor. Pieces
// of a replicated tensor must be equal, and the first one is returned.
MT_API Tensor unshard_tensor(const std::vector<Tensor>& pieces, const ShardSpec& spec);

// The vocabulary table `table` ([V, h] or [V]) with `rows` rows: truncated, or padded by
// repeating its last row, as tools/checkpoint's savers do for --true-vocab-size.
MT_API Tensor resize_vocab_rows(const Tensor& table, int64_t rows);

// The other --transformer-impl's name of a norm parameter (Transformer Engine fuses the norms
// into the next linear, "linear_qkv.layer_norm_weight"; the local spec keeps them apart,
// "input_layernorm.weight") or of an MoE expert's weight (--moe-grouped-gemm's
// "mlp.experts.linear_fc1.weight<e>", SequentialMLP's "mlp.experts.local_experts.<e>.linear_fc1.
// weight": torch_dist stores both alike) or of a Mamba mixer's convolution (core_v0.19's torch
// files: "mixer.conv1d_weight" for "mixer.conv1d.weight"); any other name is returned as is.
MT_API std::string other_impl_name(const std::string& name);

// The model chunk of a virtual-stage state's key ("model1.decoder.layers.0..." -> {1, 7}: the
// chunk and where its own key starts; see CheckpointState::model), or none.
MT_API std::optional<std::pair<size_t, size_t>> model_chunk(const std::string& name);

// Where a parameter of the whole model (Megatron-core name) lives in a pipeline-split
// checkpoint: the stage, the model chunk (virtual stage) and its key in that chunk's state dict.
// Layers go where pipeline_stage_layers puts them, renumbered from 0 in their chunk; the
// embeddings go to the first chunk of the first stage, the final norm and the output layer to
// the last chunk of the last stage.
struct StagePlace {
    int stage = 0, chunk = 0;
    std::string key;
};
MT_API StagePlace stage_place(const parallel::PipelineSplit& split, const std::string& name);
// The inverse: the whole model's name of `key` in chunk `chunk` of stage `stage`.
MT_API std::string whole_model_name(const parallel::PipelineSplit& split, int stage, int chunk,
                                    const std::string& key);

// `state` (in the whole model's names) renamed to pipeline stage `stage`'s own keys
// (stage_place; "model<c>." in front with virtual stages), its model tensors and optimizer
// parameters alike; mt::Error for a tensor of another stage.
MT_API void name_for_stage(CheckpointState& state, const parallel::PipelineSplit& split, int stage);
// The inverse: stage `stage`'s state in the whole model's names.
MT_API void name_for_whole_model(CheckpointState& state, const parallel::PipelineSplit& split,
                                 int stage);

// How the checkpoint's args say its layers were split over `pipeline_parallel` stages
// (num_layers, decoder_first/last_pipeline_num_layers, account_for_*_in_pipeline_split,
// virtual_pipeline_model_parallel_size); mt::Error without num_layers.
MT_API parallel::PipelineSplit pipeline_split_of(const CheckpointArgs& args,
                                                 int64_t pipeline_parallel);

// One entry of a pipeline stage's state dict: its key there and the parameter it holds (an index
// into the model's parameter list).
struct StageKey {
    std::string key;
    size_t param = 0;
};

// The entries of pipeline stage `stage` of `pipeline_parallel`, in the model's order. Layers
// ("decoder.layers.N.") are split evenly and renumbered from 0 on each stage; the embeddings
// live on the first stage, the final norm and the output layer on the last, and with tied
// embeddings and several stages the last one also holds "output_layer.weight", Megatron's copy
// of the word embeddings (with multi-token prediction also "embedding.word_embeddings.weight",
// first).
MT_API std::vector<StageKey> stage_keys(const std::vector<ParameterInfo>& params,
                                        int64_t pipeline_parallel, int64_t stage);
// The same for the stages of `split` (uneven stages, virtual stages: keys with "model<c>." in
// front, see CheckpointState::model).
MT_API std::vector<StageKey> stage_keys(const std::vector<ParameterInfo>& params,
                                        const parallel::PipelineSplit& split, int64_t stage);

// The state dict of rank (tp_rank, pp_rank) of `layout`, from the whole tensors (`whole[i]` is
// params[i]'s; shapes are checked against params).
MT_API NamedTensors rank_tensors(const std::vector<ParameterInfo>& params,
                                 const std::vector<Tensor>& whole, const CheckpointLayout& layout,
                                 int64_t tp_rank, int64_t pp_rank);

// Each parameter's pieces (pieces[i][tp]: params[i]'s piece on tensor rank tp, viewing the
// rank's tensor) from the state dicts of every rank of `layout` (`rank(tp, pp)`), checked as
// whole_tensors checks them: unshard_tensor(pieces[i], params[i].shard) is the whole tensor, made
// when it is needed (a streaming conversion joins one tensor at a time).
// `split`: how the layers were split over the stages (the checkpoint's args); none: evenly.
MT_API std::vector<std::vector<Tensor>> parameter_pieces(
    const std::vector<ParameterInfo>& params, const CheckpointLayout& layout,
    const std::function<const NamedTensors&(int64_t tp_rank, int64_t pp_rank)>& rank,
    const parallel::PipelineSplit* split = nullptr);

// The whole tensors (one per parameter, in the list's order) from the state dicts of every rank
// of `layout` (`rank(tp, pp)`). Keys may use either --transformer-impl's norm names;
// `_extra_state` entries are ignored. A missing key, a piece whose shape contradicts the
// parameter's, or a key that is no parameter of the model is an mt::Error naming the rank.
MT_API std::vector<Tensor> whole_tensors(
    const std::vector<ParameterInfo>& params, const CheckpointLayout& layout,
    const std::function<const NamedTensors&(int64_t tp_rank, int64_t pp_rank)>& rank);

// A state's model tensors by name (each ShardedTensor's local piece), in its order.
MT_API NamedTensors model_tensors(const CheckpointState& state);

// `t` in a storage of its own: a saved tensor writes its whole storage (as torch.save does), so
// a piece that views a larger one (a slice of a whole tensor, or of a source file's shared
// storage) is copied, and the bytes written depend on the values alone.
MT_API Tensor in_own_storage(const Tensor& t);

// Tensor rank `rank` of `tensor_parallel`'s state from a state of whole tensors (model tensors and
// optimizer moments): each tensor named after a parameter of `params` (either norm spelling) is
// cut by its shard spec; anything else travels as is.
MT_API CheckpointState tensor_parallel_piece(const CheckpointState& whole,
                                             const std::vector<ParameterInfo>& params,
                                             int64_t tensor_parallel, int64_t rank);

// Rank `rank`'s piece of a tensor of shape `whole` as its shard_boxes: views of the piece, each
// placed in the whole (global_shape `whole`, global_offset the box's), in the piece's order.
MT_API std::vector<ShardedTensor> piece_boxes(const Tensor& piece, const Shape& whole,
                                              const ShardSpec& spec, int64_t tensor_parallel,
                                              int64_t rank);

// The inverse: the whole state from every tensor rank's state (in rank order); the scalars and
// args are rank 0's.
MT_API CheckpointState join_tensor_parallel(const std::vector<CheckpointState>& pieces,
                                            const std::vector<ParameterInfo>& params);

}  // namespace mt
