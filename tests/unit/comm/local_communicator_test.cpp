// The local communicator's full interface: collectives copy or do nothing, asynchronous forms
// are done at once, split gives another group of one, point to point has no peer.
#include <gtest/gtest.h>

#include <vector>

#include "mt/communicator.h"
#include "test_support.h"

namespace {

using mt::DType;
using mt::ReduceOp;
using mt::Tensor;
using mt::test::error_of;

Tensor iota(const mt::Shape& shape, float start = 0) {
    Tensor t = Tensor::empty(shape, DType::f32);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + float(i);
    return t;
}

TEST(LocalCommunicator, AsynchronousFormsAreDoneAtOnce) {
    auto comm = mt::make_local_communicator();
    Tensor t = iota({4});
    comm->iall_reduce(t, ReduceOp::avg)->wait();
    EXPECT_EQ(t.data<float>()[3], 3.0f);
    Tensor gathered = Tensor::zeros({4}, DType::f32);
    auto request = comm->iall_gather(t, gathered);
    EXPECT_EQ(gathered.data<float>()[2], 2.0f);  // before wait(): already done
    request->wait();
    request->wait();  // a second wait is harmless
    Tensor scattered = Tensor::zeros({4}, DType::f32);
    comm->ireduce_scatter(t, scattered, ReduceOp::sum)->wait();
    EXPECT_EQ(scattered.data<float>()[1], 1.0f);
}

TEST(LocalCommunicator, AllToAllCopies) {
    auto comm = mt::make_local_communicator();
    Tensor in = iota({3, 2});
    Tensor out = Tensor::zeros({3, 2}, DType::f32);
    std::vector<int64_t> rows{3};
    comm->all_to_all(in, rows, out, rows);
    EXPECT_EQ(out.data<float>()[5], 5.0f);
    Tensor equal = Tensor::zeros({3, 2}, DType::f32);
    comm->all_to_all(in, equal);
    EXPECT_EQ(equal.data<float>()[4], 4.0f);
    std::vector<int64_t> wrong{2};
    EXPECT_THROW(comm->all_to_all(in, wrong, out, wrong), mt::Error);
    std::vector<int64_t> two{1, 2};
    EXPECT_THROW(comm->all_to_all(in, two, out, two), mt::Error);
}

TEST(LocalCommunicator, PointToPointHasNoPeer) {
    auto comm = mt::make_local_communicator();
    Tensor t = iota({2});
    for (int peer : {0, 1}) {
        EXPECT_NE(error_of([&] { comm->isend(t, peer, 3); }).find("has no peer"),
                  std::string::npos);
        EXPECT_NE(error_of([&] { comm->irecv(t, peer); }).find("has no peer"), std::string::npos);
        EXPECT_THROW(comm->send(t, peer), mt::Error);
        EXPECT_THROW(comm->recv(t, peer), mt::Error);
    }
    EXPECT_THROW(comm->broadcast(t, 1), mt::Error);
}

TEST(LocalCommunicator, SplitAbortAndBytes) {
    auto comm = mt::make_local_communicator();
    auto child = comm->split(7, -3);
    ASSERT_NE(child, nullptr);
    EXPECT_EQ(child->name(), "local");
    EXPECT_EQ(child->rank(), 0);
    EXPECT_EQ(child->size(), 1);
    Tensor t = iota({5});
    child->all_reduce(t, ReduceOp::sum);
    comm->broadcast(t, 0);
    EXPECT_NO_THROW(comm->abort(3));  // a group of one returns
    EXPECT_EQ(comm->bytes_sent(), 0);
    EXPECT_EQ(child->bytes_sent(), 0);
}

TEST(LocalCommunicator, GatherChecksDtypes) {
    auto comm = mt::make_local_communicator();
    Tensor in = iota({2});
    Tensor out = Tensor::zeros({2}, DType::f64);
    EXPECT_THROW(comm->all_gather(in, out), mt::Error);
}

}  // namespace
