// Megatron's ParamAndGradBuffer layout (param_and_grad_buffer.py): backward order, 64-element
// parameter starts and lcm(dp, 128) bucket ends with the distributed optimizer, buckets only
// with --overlap-grad-reduce, and the unpadded positions distrib_optim.pt uses. The numbers are
// worked by hand from Megatron's loop; tests/fixtures/torch_dist/make_tp2_save_and_check.sh
// checks a three-bucket layout against megatron-core's own DistributedOptimizer.
#include <gtest/gtest.h>

#include "mt/parallel/buffer_layout.h"

namespace {

using mt::parallel::buffer_layout;
using mt::parallel::DataParallelConfig;

DataParallelConfig distributed(int64_t bucket_size, bool overlap) {
    DataParallelConfig c;
    c.distributed_optimizer = true;
    c.bucket_size = bucket_size;
    c.overlap_grad_reduce = overlap;
    return c;
}

TEST(BufferLayout, OneBucketWithoutOverlap) {
    // Parameters of 15, 7 and 70 elements: the last one first, starts rounded up to 64.
    const auto l = buffer_layout({15, 7, 70}, 1, distributed(100, false));
    ASSERT_EQ(l.buckets.size(), 1u) << "the bucket size only counts with overlap";
    EXPECT_EQ(l.offsets, (std::vector<int64_t>{192, 128, 0}));
    EXPECT_EQ(l.buckets[0].numel_unpadded, 207);
    EXPECT_EQ(l.buckets[0].end, 256);
    EXPECT_EQ(l.numel, 256);
    EXPECT_EQ(l.buckets[0].params, (std::vector<size_t>{2, 1, 0}));
    EXPECT_EQ(l.unpadded_offset(0), 192);
}

TEST(BufferLayout, BucketsCloseOnceTheyReachTheSizeAndLoseTheirPaddingInTheWorldTensors) {
    const auto l = buffer_layout({15, 7, 70}, 1, distributed(100, true));
    ASSERT_EQ(l.buckets.size(), 2u);
    // 70 < 100 stays open; the 7-element parameter at 128 ends at 135 >= 100 and closes it.
    EXPECT_EQ(l.buckets[0].begin, 0);
    EXPECT_EQ(l.buckets[0].numel_unpadded, 135);
    EXPECT_EQ(l.buckets[0].end, 256);
    EXPECT_EQ(l.buckets[1].begin, 256);
    EXPECT_EQ(l.buckets[1].numel_unpadded, 15);
    EXPECT_EQ(l.buckets[1].end, 384);
    EXPECT_EQ(l.offsets[0], 256);
    EXPECT_EQ(l.bucket_of, (std::vector<size_t>{1, 0, 0}));
    EXPECT_EQ(l.numel_unpadded(), 150);
    // Without bucket 0's 121 padding elements the first parameter starts at 135.
    EXPECT_EQ(l.unpadded_offset(0), 135);
    EXPECT_EQ(l.unpadded_offset(1), 128);
}

TEST(BufferLayout, BucketEndsDivideAmongTheRanks) {
    const auto l = buffer_layout({300}, 3, distributed(0, false));
    EXPECT_EQ(l.numel, 384) << "lcm(3, 128)";
    EXPECT_EQ(l.numel % 3, 0);
    // Megatron's default bucket size with overlap, max(40M, 1M x dp): 20M + 20M closes a 40M
    // bucket at dp 1, not a 50M one at dp 50.
    const std::vector<int64_t> numels{25000000, 20000000, 20000000};
    EXPECT_EQ(buffer_layout(numels, 1, distributed(0, true)).buckets.size(), 2u);
    EXPECT_EQ(buffer_layout(numels, 50, distributed(0, true)).buckets.size(), 1u);
}

// A shared embedding (flagged) closes the bucket before it at its own aligned start (the
// padding up to it counts as the bucket's) and the one it opens after itself, even in one bucket
// without --overlap-grad-reduce (Megatron's _compute_per_buffer_param_layout).
TEST(BufferLayout, SharedEmbeddingsTakeABucketOfTheirOwn) {
    // Registration order: word embeddings (flagged) 100, a 7, the output layer (flagged) 100.
    const auto l = buffer_layout({100, 7, 100}, 1, distributed(0, false), {true, false, true});
    ASSERT_EQ(l.buckets.size(), 3u);
    EXPECT_EQ(l.buckets[0].params, (std::vector<size_t>{2}));
    EXPECT_EQ(l.buckets[0].numel_unpadded, 100);
    EXPECT_EQ(l.buckets[0].end, 128);
    EXPECT_EQ(l.offsets[1], 128);
    // The 7-element parameter's bucket ends at the word embeddings' aligned start, 192.
    EXPECT_EQ(l.buckets[1].numel_unpadded, 64);
    EXPECT_EQ(l.buckets[1].end, 256);
    EXPECT_EQ(l.offsets[0], 256);
    EXPECT_EQ(l.unpadded_offset(0), 100 + 64);
    // Without the distributed optimizer the flags do nothing.
    DataParallelConfig plain;
    EXPECT_EQ(buffer_layout({100, 7, 100}, 1, plain, {true, false, true}).buckets.size(), 1u);
}

TEST(BufferLayout, NoPaddingWithoutTheDistributedOptimizer) {
    DataParallelConfig c;
    c.overlap_grad_reduce = true;
    c.bucket_size = 20;
    const auto l = buffer_layout({10, 10, 10, 10}, 4, c);
    ASSERT_EQ(l.buckets.size(), 2u);
    EXPECT_EQ(l.numel, 40);
    EXPECT_EQ(l.offsets, (std::vector<int64_t>{30, 20, 10, 0}));
}

}  // namespace
