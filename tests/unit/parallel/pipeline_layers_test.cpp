// pipeline_stage_layers against Megatron-core's get_num_layers_to_build and
// get_transformer_layer_offset (core_v0.13.0), worked by hand for each of its cases.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mt/error.h"
#include "mt/parallel/pipeline_layers.h"

namespace mt::parallel {
namespace {

// "first:count" per stage (chunks of a stage joined by "|").
std::string stages_of(const PipelineSplit& split) {
    std::string out;
    for (int s = 0; s < split.stages; ++s)
        for (int c = 0; c < split.virtual_stages; ++c) {
            const StageLayers l = pipeline_stage_layers(split, s, c);
            out += (s + c == 0 ? ""
                    : c        ? "|"
                               : " ") +
                   std::to_string(l.first) + ":" + std::to_string(l.count);
        }
    return out;
}

TEST(PipelineStageLayers, EvenSplit) {
    EXPECT_EQ(stages_of({8, 1}), "0:8");
    EXPECT_EQ(stages_of({8, 4}), "0:2 2:2 4:2 6:2");
    EXPECT_THROW(stages_of({6, 4}), Error);  // num_layers % pp != 0
}

TEST(PipelineStageLayers, UnevenFirstAndLastStages) {
    // --decoder-first-pipeline-num-layers 1 --decoder-last-pipeline-num-layers 3: the middle
    // stages split the other 4.
    EXPECT_EQ(stages_of({8, 4, 1, 3}), "0:1 1:2 3:2 5:3");
    EXPECT_EQ(stages_of({4, 2, 1}), "0:1 1:3");
    EXPECT_EQ(stages_of({7, 3, -1, 1}), "0:3 3:3 6:1");
    EXPECT_THROW(stages_of({8, 4, 1, 2}), Error);         // 5 left over 2 stages
    EXPECT_THROW(stages_of({8, 2, 1, -1, true}), Error);  // with account-for-embedding
}

TEST(PipelineStageLayers, EmbeddingAndLossCountedAsLayers) {
    // 6 layers + embedding + loss = 8 units, 2 per stage.
    EXPECT_EQ(stages_of({6, 4, -1, -1, true, true}), "0:1 1:2 3:2 5:1");
    EXPECT_EQ(stages_of({7, 4, -1, -1, true, false}), "0:1 1:2 3:2 5:2");
    EXPECT_EQ(stages_of({7, 4, -1, -1, false, true}), "0:2 2:2 4:2 6:1");
}

TEST(PipelineStageLayers, VirtualStages) {
    // Megatron's example: 8 layers, 2 stages, 2 chunks: stage 0 holds [0 1] [4 5].
    EXPECT_EQ(stages_of({8, 2, -1, -1, false, false, 2}), "0:2|4:2 2:2|6:2");
    EXPECT_EQ(stages_of({8, 2, -1, -1, false, false, 4}), "0:1|2:1|4:1|6:1 1:1|3:1|5:1|7:1");
    // 6 layers + embedding + loss = 8 units: the first chunk drops the embedding's unit, the
    // last the loss's.
    EXPECT_EQ(stages_of({6, 2, -1, -1, true, true, 2}), "0:1|3:2 1:2|5:1");
    // Uneven first stage (4 layers, 2 per chunk) and 2 per chunk elsewhere.
    EXPECT_EQ(stages_of({12, 2, 4, -1, false, false, 2}), "0:2|6:2 2:4|8:4");
    EXPECT_THROW(stages_of({8, 2, -1, -1, false, false, 3}), Error);  // 4 layers in 3 chunks
}

TEST(PipelineStageLayers, VirtualPipelineSize) {
    const PipelineSplit eight{8, 2};
    EXPECT_EQ(virtual_pipeline_size(eight, -1, -1), 1);
    EXPECT_EQ(virtual_pipeline_size(eight, 1, -1), 4);  // --num-layers-per-virtual-pipeline-stage
    EXPECT_EQ(virtual_pipeline_size(eight, 2, -1), 2);
    EXPECT_EQ(virtual_pipeline_size(eight, -1, 2), 2);  // --num-virtual-stages-per-pipeline-rank
    EXPECT_THROW(virtual_pipeline_size(eight, 3, -1), Error);
    EXPECT_THROW(virtual_pipeline_size(eight, 1, 2), Error);
    EXPECT_THROW(virtual_pipeline_size({8, 2, 2}, 1, -1), Error);  // uneven: give the count
}

}  // namespace
}  // namespace mt::parallel
