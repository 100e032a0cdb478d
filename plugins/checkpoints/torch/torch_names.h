// The `model` entry of model_optim_rng.pt in both of Megatron's spellings: Megatron-core's flat
// state dict, and the legacy models' nested one (language_model / embedding / encoder, with
// query_key_value, dense_h_to_4h, ..., §3.3 of the formats spec), which reads into core names
// and is written back when the args say use_legacy_models.
#pragma once

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
// `file` names the checkpoint in errors.
ModelTensors model_from_py(const io::PyValue& model, const std::string& file);

// A legacy model's nested state dict holding `tensors` (Megatron-core names, either
// --transformer-impl's norm names). `untied`: the last stage's output layer is the model's own
// (language_model.output_layer) rather than the copy of tied embeddings
// (word_embeddings_for_head).
io::PyValue legacy_model_to_py(const ModelTensors& tensors, bool untied);

}  // namespace mt::plugins::torch_ckpt
