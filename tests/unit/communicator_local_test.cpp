// The one-process communicator: collectives are identities; peers other than 0 are errors.
#include <gtest/gtest.h>

#include "mt/communicator.h"

namespace {

TEST(LocalCommunicator, CollectivesAreIdentities) {
    auto comm = mt::make_local_communicator();
    EXPECT_EQ(comm->rank(), 0);
    EXPECT_EQ(comm->size(), 1);
    auto t = mt::Tensor::empty({3}, mt::DType::f32);
    for (int i = 0; i < 3; ++i) t.data<float>()[i] = float(i) + 0.5f;
    comm->all_reduce(t, mt::ReduceOp::sum);
    EXPECT_EQ(t.data<float>()[2], 2.5f);
    auto out = mt::Tensor::zeros({3}, mt::DType::f32);
    comm->all_gather(t, out);
    EXPECT_EQ(out.data<float>()[1], 1.5f);
    auto rs = mt::Tensor::zeros({3}, mt::DType::f32);
    comm->reduce_scatter(t, rs, mt::ReduceOp::sum);
    EXPECT_EQ(rs.data<float>()[0], 0.5f);
    EXPECT_NO_THROW(comm->broadcast(t, 0));
    EXPECT_THROW(comm->send(t, 1), mt::Error);
    auto wrong = mt::Tensor::zeros({2}, mt::DType::f32);
    EXPECT_THROW(comm->all_gather(t, wrong), mt::Error);
}

}  // namespace
