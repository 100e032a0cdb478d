// The nccl plugin under mpirun on one GPU (one rank: NCCL takes one GPU per rank): every
// operation runs on device tensors and comes back right. Skips where no GPU is visible (the
// build machine has none, so this has not run there).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <vector>

#include "mt/communicator.h"
#include "mt/parallel/world.h"
#include "mt/registry.h"

namespace {

using mt::DType;
using mt::ReduceOp;
using mt::Tensor;

bool have_gpu() {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

mt::Communicator& world() {
    static std::unique_ptr<mt::Communicator> comm =
        mt::parallel::make_world_communicator(mt::Registry::global(), "cuda");
    return *comm;
}

// A device copy of host values, on the GPU the communicator uses (cuda:0 with one rank).
Tensor on_device(const std::vector<float>& values) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, values.size() * sizeof(float)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(p, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice),
              cudaSuccess);
    std::shared_ptr<void> owner(p, [](void* q) { cudaFree(q); });
    return Tensor::from_blob(p, {int64_t(values.size())}, DType::f32, owner,
                             {mt::DeviceType::cuda, 0});
}
std::vector<float> on_host(const Tensor& t) {
    std::vector<float> out(t.numel());
    EXPECT_EQ(
        cudaMemcpy(out.data(), t.raw_data(), out.size() * sizeof(float), cudaMemcpyDeviceToHost),
        cudaSuccess);
    return out;
}

class NcclCommunicator : public testing::Test {
  protected:
    void SetUp() override {
        if (!have_gpu())
            GTEST_SKIP() << "no CUDA device visible: the nccl communicator is untested";
    }
};

TEST_F(NcclCommunicator, EveryOperationOnOneRank) {
    mt::Communicator& comm = world();
    ASSERT_EQ(comm.name(), "nccl");
    ASSERT_EQ(comm.size(), 1);
    const std::vector<float> v{1, 2, 3, 4};
    Tensor t = on_device(v);
    comm.all_reduce(t, ReduceOp::avg);
    EXPECT_EQ(on_host(t), v);
    Tensor out = on_device({0, 0, 0, 0});
    comm.all_gather(t, out);
    EXPECT_EQ(on_host(out), v);
    comm.reduce_scatter(t, out, ReduceOp::max);
    EXPECT_EQ(on_host(out), v);
    comm.broadcast(t, 0);
    Tensor moved = on_device({0, 0, 0, 0});
    comm.all_to_all(t, moved);
    EXPECT_EQ(on_host(moved), v);
    comm.iall_reduce(t, ReduceOp::sum)->wait();
    comm.iall_gather(t, out)->wait();
    EXPECT_EQ(on_host(out), v);
    comm.barrier();
    auto child = comm.split(0, 0);
    EXPECT_EQ(child->size(), 1);
    child->all_reduce(t, ReduceOp::sum);
    EXPECT_EQ(on_host(t), v);
    EXPECT_EQ(comm.bytes_sent(), 0);  // a lone rank sends nothing, whatever it runs
    Tensor host = Tensor::zeros({4}, DType::f32);
    EXPECT_THROW(comm.all_reduce(host, ReduceOp::sum), mt::Error);
}

}  // namespace
