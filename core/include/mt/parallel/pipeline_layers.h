// Which transformer layers each pipeline stage builds (Megatron-core's get_num_layers_to_build
// and get_transformer_layer_offset): an even split, uneven first and last stages
// (--decoder-first/last-pipeline-num-layers), or the embedding and the loss counted as a layer
// each (--account-for-embedding/loss-in-pipeline-split); with virtual stages (the interleaved
// schedule) each stage's share is cut into that many chunks, chunk c of every stage coming
// after chunk c-1 of the last stage (8 layers, 2 stages, 2 chunks: stage 0 holds [0 1] [4 5]).
#pragma once

#include <cstdint>
#include <vector>

#include "mt/api.h"

namespace mt::parallel {

struct PipelineSplit {
    int64_t num_layers = 0;
    int stages = 1;                      // --pipeline-model-parallel-size
    int64_t first_stage_layers = -1;     // --decoder-first-pipeline-num-layers (-1: unset)
    int64_t last_stage_layers = -1;      // --decoder-last-pipeline-num-layers (-1: unset)
    bool account_for_embedding = false;  // --account-for-embedding-in-pipeline-split
    bool account_for_loss = false;       // --account-for-loss-in-pipeline-split
    int virtual_stages = 1;              // model chunks per stage (interleaved schedule)
    // Each model chunk's layers in the order chunk c of stage r is c * stages + r (core_v0.19's
    // '|' segments of --hybrid-layer-pattern); empty: the rules above place them.
    std::vector<int64_t> segments = {};
};

struct StageLayers {
    int64_t first = 0;  // the global index of the chunk's first layer
    int64_t count = 0;
};

// Stage `stage`'s layers in its model chunk `virtual_stage`; mt::Error (naming the flags) for
// a split Megatron refuses.
MT_API StageLayers pipeline_stage_layers(const PipelineSplit& split, int stage,
                                         int virtual_stage = 0);

// Megatron's virtual_pipeline_model_parallel_size from --num-layers-per-virtual-pipeline-stage
// (`layers_per_virtual_stage`, -1: unset) or --num-virtual-stages-per-pipeline-rank
// (`virtual_stages`, -1: unset): 1 without either. mt::Error where Megatron refuses the pair.
MT_API int virtual_pipeline_size(const PipelineSplit& split, int64_t layers_per_virtual_stage,
                                 int64_t virtual_stages);

}  // namespace mt::parallel
