// Putting a checkpoint's model tensors into a model's parameters, matched by Megatron-core name
// (either --transformer-impl's spelling of the norms), for training restores and for inference.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/checkpoint.h"
#include "mt/model.h"

namespace mt {

enum class WeightLoad {
    copy,   // into the parameters' own memory (training will write them)
    share,  // the parameters take the checkpoint's contiguous tensors, which may view the file
            // read-only: for inference, which never writes a parameter
};

// Every parameter and buffer (state_tensors) gets the tensor of `state` under its name or the other
// --transformer-impl's (a tensor-parallel piece takes its part of a whole tensor); Transformer
// Engine `_extra_state` entries are skipped. mt::Error naming the key for a missing tensor, a shape
// or dtype that differs, or a tensor that is no parameter of the model.
MT_API void load_model_weights(const CheckpointState& state, Model& model, WeightLoad how);

// The same over tensors made on request: names[i] is the checkpoint's i-th model tensor and
// make(i) makes it (whole), when the parameter that takes it is loaded; its part is copied into
// the parameter's own memory and the tensor let go, so that loading holds the model and one
// whole tensor at a time. `strict`: a tensor no parameter takes is an error; otherwise it is
// never made (a pipeline stage's or an expert-parallel rank's part of a whole checkpoint).
MT_API void load_model_weights_made(const std::vector<std::string>& names,
                                    const std::function<Tensor(size_t)>& make, Model& model,
                                    bool strict);

// Drops from `state` the model tensors (and optimizer parameter states) that are no parameter of
// `model`: a pipeline stage takes its own layers (and the tied word embeddings its output layer
// copies) of a whole checkpoint, the other stages the rest.
MT_API void keep_model_tensors(CheckpointState& state, Model& model);

}  // namespace mt
