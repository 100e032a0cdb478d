// The `model` entry of model_optim_rng.pt in both of Megatron's spellings: Megatron-core's flat
// state dict, and the legacy models' nested one (language_model / embedding / encoder, with
// query_key_value, dense_h_to_4h, ..., §3.3 of the formats spec; BERT's pooler, lm_head and
// binary or task head beside it), which reads into core names (GPT's decoder, BERT's encoder)
// and is written back when the args say use_legacy_models.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mt/io/py_value.h"
#include "mt/tensor.h"

namespace mt::plugins::torch_ckpt {

using ModelTensors = std::vector<std::pair<std::string, Tensor>>;

// The tensors of a `model` entry under Megatron-core names (legacy keys renamed, with
// Megatron's backward-compatible renames: transformer -> encoder, attention -> self_attention,
// layernorm -> norm); Transformer Engine `_extra_state` entries and non-tensors are skipped.
// A legacy model with a pooler, lm_head, binary_head or task head is a BERT: its layers become
// "encoder.layers.N", its heads BertModel's (lm_head.bias -> output_layer.bias, lm_head.norm ->
// lm_head.layer_norm). `file` names the checkpoint in errors.
ModelTensors model_from_py(const io::PyValue& model, const std::string& file);

// Megatron's fix_query_key_value_ordering for files older than checkpoint_version 2.0: version
// 0 kept each rank's QKV rows (weights and biases) as [3, heads, head_dim], 1.0 as [heads,
// head_dim, 3]; both become [heads, 3, head_dim] (§3.5). Newer versions are left as they are.
// A QKV tensor to reorder without `head_dim` is an mt::Error naming `file`.
void fix_qkv_ordering(ModelTensors& tensors, double checkpoint_version,
                      std::optional<int64_t> head_dim, const std::string& file);

// A legacy model's nested state dict holding `tensors` (Megatron-core names, either
// --transformer-impl's norm names), in the order the legacy modules register them. `untied`:
// the last stage's output layer is the model's own (language_model.output_layer) rather than
// the copy of tied embeddings (word_embeddings_for_head). A BERT (encoder.* names) keeps its
// pooler in language_model and its lm_head (bias first) and binary or task head beside it.
io::PyValue legacy_model_to_py(const ModelTensors& tensors, bool untied);

}  // namespace mt::plugins::torch_ckpt
