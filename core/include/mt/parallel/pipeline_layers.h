// Which transformer layers each pipeline stage builds (Megatron-core's get_num_layers_to_build
// and get_transformer_layer_offset, without virtual stages): an even split, uneven first and
// last stages (--decoder-first/last-pipeline-num-layers), or the embedding and the loss counted
// as a layer each (--account-for-embedding/loss-in-pipeline-split).
#pragma once

#include <cstdint>

#include "mt/api.h"

namespace mt::parallel {

struct PipelineSplit {
    int64_t num_layers = 0;
    int stages = 1;                      // --pipeline-model-parallel-size
    int64_t first_stage_layers = -1;     // --decoder-first-pipeline-num-layers (-1: unset)
    int64_t last_stage_layers = -1;      // --decoder-last-pipeline-num-layers (-1: unset)
    bool account_for_embedding = false;  // --account-for-embedding-in-pipeline-split
    bool account_for_loss = false;       // --account-for-loss-in-pipeline-split
};

struct StageLayers {
    int64_t first = 0;  // the global index of the stage's first layer
    int64_t count = 0;
};

// Stage `stage`'s layers; mt::Error (naming the flags) for a split Megatron refuses.
MT_API StageLayers pipeline_stage_layers(const PipelineSplit& split, int stage);

}  // namespace mt::parallel
