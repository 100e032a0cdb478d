// pipeline_order against Megatron-core's schedules.py (core_v0.13.0): the order its
// convert_schedule_table_to_order documents for PP2 with 2 chunks, 5 micro-batches in groups of
// 3, and 1F1B's warm-up, steady state and cool-down.
#include <gtest/gtest.h>

#include <string>

#include "mt/error.h"
#include "mt/parallel.h"

namespace mt {
namespace {

// Megatron's notation: a forward of chunk c is c+1, a backward of chunk c is -(c+1) (it writes
// table_chunk - chunks, the backward running chunk chunks-1-table_chunk).
std::string chunk_order(const std::vector<PipelineSlot>& order) {
    std::string out;
    for (const PipelineSlot& s : order)
        out += (out.empty() ? "" : " ") + std::to_string(s.forward ? s.chunk + 1 : -(s.chunk + 1));
    return out;
}

// "F0 F1 B0 ..." with micro-batches.
std::string micro_batch_order(const std::vector<PipelineSlot>& order) {
    std::string out;
    for (const PipelineSlot& s : order)
        out += (out.empty() ? "" : " ") + std::string(s.forward ? "F" : "B") +
               std::to_string(s.micro_batch);
    return out;
}

TEST(PipelineOrder, InterleavedAsMegatronDocumentsIt) {
    // "PP2 N3M5 with VP2 ... If num_warmup_microbatches is 5, the output order is:"
    // Stage 0's warm-up: (2 - 0 - 1) x 2 + (2 - 1) x 3 = 5.
    const auto order = pipeline_order(5, 2, 3, 2, 0, false);
    EXPECT_EQ(chunk_order(order), "1 1 1 2 2 2 -2 1 -2 1 -2 2 -1 2 -1 -1 -2 -2 -1 -1");
    // micro-batches 0 1 2 0 1 2 3 4 3 4 forward; backward the same on the reversed chunks.
    EXPECT_EQ(micro_batch_order(order),
              "F0 F1 F2 F0 F1 F2 B0 F3 B1 F4 B2 F3 B0 F4 B1 B2 B3 B4 B3 B4");
    // Stage 1 warms up with 3: (2 - 1 - 1) x 2 + 3.
    EXPECT_EQ(chunk_order(pipeline_order(5, 2, 3, 2, 1, false)),
              "1 1 1 2 -2 2 -2 2 -2 1 -1 1 -1 2 -1 2 -2 -2 -1 -1");
}

TEST(PipelineOrder, OneForwardOneBackward) {
    EXPECT_EQ(micro_batch_order(pipeline_order(4, 1, 2, 2, 0, false)), "F0 F1 B0 F2 B1 F3 B2 B3");
    EXPECT_EQ(micro_batch_order(pipeline_order(4, 1, 2, 2, 1, false)), "F0 B0 F1 B1 F2 B2 F3 B3");
    // More stages than micro-batches: all forwards first.
    EXPECT_EQ(micro_batch_order(pipeline_order(2, 1, 4, 4, 0, false)), "F0 F1 B0 B1");
    EXPECT_EQ(micro_batch_order(pipeline_order(3, 1, 2, 2, 0, true)), "F0 F1 F2");
}

TEST(PipelineOrder, InterleavedRefusesWhatMegatronRefuses) {
    EXPECT_THROW(pipeline_order(1, 2, 2, 2, 0, false), Error);  // fewer micro-batches than stages
    EXPECT_THROW(pipeline_order(5, 2, 4, 4, 0, false), Error);  // last group of 1 < 4 stages
    EXPECT_NO_THROW(pipeline_order(6, 2, 4, 2, 0, false));      // last group of 2 = 2 stages
}

}  // namespace
}  // namespace mt
