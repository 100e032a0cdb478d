// pipeline_stage_layers against Megatron-core's get_num_layers_to_build and
// get_transformer_layer_offset (core_v0.13.0), worked by hand for each of its cases.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mt/error.h"
#include "mt/parallel/pipeline_layers.h"

namespace mt::parallel {
namespace {

// "first:count" per stage.
std::string stages_of(const PipelineSplit& split) {
    std::string out;
    for (int s = 0; s < split.stages; ++s) {
        const StageLayers l = pipeline_stage_layers(split, s);
        out += (s ? " " : "") + std::to_string(l.first) + ":" + std::to_string(l.count);
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

}  // namespace
}  // namespace mt::parallel
