// Megatron's --pipeline-model-parallel-layout (core_v0.19's PipelineParallelLayerLayout): a
// string of pipeline segments separated by '|', each naming the layers it holds: E (the
// embedding), t (a transformer layer), m (a multi-token prediction layer), L (the loss), with
// "x*n" and "(...)*n" repetitions and cosmetic commas ("Et*3|(tt|)*6mL"). Segment i is model
// chunk i / stages of stage i % stages; the segments' count / the stages is the virtual stages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mt/api.h"

namespace mt::parallel {

struct PipelineLayout {
    std::vector<int64_t> decoder_layers;  // per segment, the 't's
    std::vector<int64_t> mtp_layers;      // per segment, the 'm's
    std::string layers;                   // every layer in order, unrolled ("EtttttmL")
};

// The layout string unrolled and split into segments; mt::Error with Megatron's message for an
// unknown character.
MT_API PipelineLayout parse_pipeline_layout(const std::string& layout);

// Megatron's checks of a layout for `stages` pipeline stages, `num_layers` transformer layers
// and `mtp_num_layers` multi-token prediction layers (validate_args, validate_layer_layout):
// the segments divide among the stages, the embedding comes first and the loss last (once
// each), the counts match, MTP layers follow every transformer layer and sit together in one
// segment. MTP layers outside the last segment (Megatron's standalone MTP stage) are not
// supported yet. Returns the layout parsed (its segments / `stages`: the virtual stages).
MT_API PipelineLayout check_pipeline_layout(const std::string& layout, int stages,
                                            int64_t num_layers, int64_t mtp_num_layers);

}  // namespace mt::parallel
