// GradBuffer in one process: Megatron's buffer layout (backward order, 64-element parameter starts
// and 128-aligned bucket ends with the distributed optimizer, buckets by size), parameters
// re-pointed at views of the buffers with their values kept, the shard and its parameters, and
// the bucket bookkeeping of --overlap-grad-reduce. The reductions themselves are checked against
// the one-process training run under mpirun (tests/plugins/gpt/parallel_training_test.cpp).
#include <gtest/gtest.h>

#include <numeric>

#include "mt/communicator.h"
#include "mt/nn/parameter.h"
#include "mt/parallel/grad_buffer.h"
#include "test_support.h"

namespace {

using mt::parallel::DataParallelConfig;
using mt::parallel::GradBuffer;

struct Params {
    std::vector<mt::nn::Parameter> owned;
    std::vector<mt::nn::Parameter*> list;
    explicit Params(const std::vector<mt::Shape>& shapes) {
        for (size_t i = 0; i < shapes.size(); ++i) {
            owned.push_back(mt::nn::make_parameter(mt::single_process_context().backend,
                                                   "p" + std::to_string(i), shapes[i],
                                                   mt::DType::f32, {}, true));
            float* v = owned.back().value.data<float>();
            std::iota(v, v + owned.back().value.numel(), float(100 * i));
        }
        for (auto& p : owned) list.push_back(&p);
    }
};

TEST(GradBuffer, BackwardOrderWithMegatronsPadding) {
    Params ps({{3, 5}, {7}, {70}});
    auto dp = mt::make_local_communicator();
    DataParallelConfig c;
    c.distributed_optimizer = true;
    GradBuffer buffer(ps.list, *dp, c);
    // Last parameter first; each start rounded up to 64 elements; the bucket end to 128.
    EXPECT_EQ(buffer.offset_of(ps.owned[2]), 0);
    EXPECT_EQ(buffer.offset_of(ps.owned[1]), 128);
    EXPECT_EQ(buffer.offset_of(ps.owned[0]), 192);
    EXPECT_EQ(buffer.grads().numel(), 256);
    EXPECT_EQ(buffer.num_buckets(), 1);
    for (size_t i = 0; i < ps.owned.size(); ++i) {
        const auto& p = ps.owned[i];
        EXPECT_EQ(p.value.storage(), buffer.values().storage()) << p.name;
        EXPECT_EQ(p.grad.storage(), buffer.grads().storage()) << p.name;
        EXPECT_EQ(mt::test::element(p.value, 1), double(100 * i + 1)) << "values are kept";
    }
    // One rank: the shard is every parameter, whole.
    ASSERT_EQ(buffer.shard().size(), 3u);
    const auto& shard = buffer.optimizer_parameters();
    ASSERT_EQ(shard.size(), 3u);
    EXPECT_EQ(shard[0]->name, "p2");
    EXPECT_EQ(shard[2]->value.numel(), 15);
    EXPECT_EQ(shard[2]->value.raw_data(), ps.owned[0].value.raw_data());
    EXPECT_EQ(shard[2]->grad.raw_data(), ps.owned[0].grad.raw_data());
}

TEST(GradBuffer, BucketsBySizeWithoutTheDistributedOptimizer) {
    Params ps({{10}, {10}, {10}, {10}});
    auto dp = mt::make_local_communicator();
    DataParallelConfig c;
    c.bucket_size = 20;
    c.overlap_grad_reduce = true;
    GradBuffer buffer(ps.list, *dp, c);
    EXPECT_EQ(buffer.num_buckets(), 2);
    EXPECT_EQ(buffer.grads().numel(), 40);  // no padding
    EXPECT_FALSE(buffer.values().defined());
    EXPECT_TRUE(buffer.shard().empty());
    EXPECT_EQ(buffer.optimizer_parameters(), ps.list);  // the optimizer updates them as they are
    // The values stay where they were; the grads move into the buffer and start at zero.
    EXPECT_NE(ps.owned[0].value.storage(), buffer.grads().storage());
    mt::test::set_element(ps.owned[3].grad, 0, 5.0);
    EXPECT_EQ(mt::test::element(buffer.grads(), 0), 5.0);
    buffer.zero_grads();
    EXPECT_EQ(mt::test::element(ps.owned[3].grad, 0), 0.0);
}

TEST(GradBuffer, AParameterOutsideTheBufferIsAnError) {
    Params ps({{4}, {4}});
    auto dp = mt::make_local_communicator();
    GradBuffer buffer(ps.list, *dp, DataParallelConfig{});
    mt::nn::Parameter stranger = mt::nn::make_parameter(mt::single_process_context().backend,
                                                        "stranger", {4}, mt::DType::f32, {}, true);
    EXPECT_NE(mt::test::error_of([&] {
                  (void)buffer.offset_of(stranger);
              }).find("stranger is not in the gradient buffer"),
              std::string::npos);
}

}  // namespace
