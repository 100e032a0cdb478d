// all_gather_along / reduce_scatter_along / split_along and their asynchronous forms, checked
// in one process against a communicator that plays one rank of a larger group.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "mt/communicator.h"
#include "mt/parallel/collectives.h"
#include "test_support.h"

namespace {

using mt::DType;
using mt::ReduceOp;
using mt::Shape;
using mt::Tensor;

constexpr int64_t kShift = 1000;

double get(const Tensor& t, int64_t i) {
    return mt::test::element(t, i);
}
void put(Tensor& t, int64_t i, double v) {
    mt::test::set_element(t, i, v);
}

// Rank r's tensor: distinct small integers, plus r * kShift everywhere.
Tensor rank_tensor(const Shape& shape, DType dtype, int r) {
    Tensor t = Tensor::empty(shape, dtype);
    for (int64_t i = 0; i < t.numel(); ++i) put(t, i, double(i % 97) + double(r * kShift));
    return t;
}

void expect_equal(const Tensor& got, const Tensor& want) {
    ASSERT_EQ(got.shape(), want.shape());
    ASSERT_EQ(got.dtype(), want.dtype());
    ASSERT_TRUE(got.is_contiguous());
    Tensor w = want.contiguous();
    for (int64_t i = 0; i < got.numel(); ++i) ASSERT_EQ(get(got, i), get(w, i)) << "element " << i;
}

// Plays rank `rank` of `size` ranks where rank i's tensor is this rank's plus (i - rank) *
// kShift in every element. Moving elements around keeps that relation, so the dim-0 buffers
// the along-dim functions hand over tell this fake every peer's contribution. The work of an
// asynchronous form happens in wait(), to catch results read before it.
class ShiftedPeers final : public mt::Communicator {
  public:
    ShiftedPeers(int rank, int size) : rank_(rank), size_(size) {}
    std::string_view name() const override { return "shifted"; }
    int rank() const override { return rank_; }
    int size() const override { return size_; }

    void all_gather(const Tensor& in, Tensor& out) override {
        ASSERT_TRUE(in.is_contiguous() && out.is_contiguous());
        ASSERT_EQ(out.size(0), in.size(0) * size_);
        const int64_t n = in.numel();
        for (int i = 0; i < size_; ++i)
            for (int64_t k = 0; k < n; ++k) put(out, i * n + k, get(in, k) + (i - rank_) * kShift);
    }
    void reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) override {
        ASSERT_TRUE(in.is_contiguous() && out.is_contiguous());
        ASSERT_EQ(in.size(0), out.size(0) * size_);
        const int64_t n = out.numel();
        for (int64_t k = 0; k < n; ++k) {
            const double mine = get(in, rank_ * n + k);  // this rank's block of this rank's in
            double acc = op == ReduceOp::min ? 1e300 : op == ReduceOp::max ? -1e300 : 0;
            for (int i = 0; i < size_; ++i) {
                const double v = mine + (i - rank_) * kShift;
                acc = op == ReduceOp::min   ? std::min(acc, v)
                      : op == ReduceOp::max ? std::max(acc, v)
                                            : acc + v;
            }
            put(out, k, op == ReduceOp::avg ? acc / size_ : acc);
        }
    }
    std::unique_ptr<mt::CommRequest> iall_gather(const Tensor& in, Tensor& out) override {
        return later([this, in, out]() mutable { all_gather(in, out); });
    }
    std::unique_ptr<mt::CommRequest> ireduce_scatter(const Tensor& in, Tensor& out,
                                                     ReduceOp op) override {
        return later([this, in, out, op]() mutable { reduce_scatter(in, out, op); });
    }

    void all_reduce(Tensor&, ReduceOp) override { MT_FAIL("not used"); }
    void broadcast(Tensor&, int) override { MT_FAIL("not used"); }
    void all_to_all(const Tensor&, std::span<const int64_t>, Tensor&,
                    std::span<const int64_t>) override {
        MT_FAIL("not used");
    }
    void send(const Tensor&, int) override { MT_FAIL("not used"); }
    void recv(Tensor&, int) override { MT_FAIL("not used"); }
    void barrier() override {}
    std::unique_ptr<mt::CommRequest> isend(const Tensor&, int, int) override {
        MT_FAIL("not used");
    }
    std::unique_ptr<mt::CommRequest> irecv(Tensor&, int, int) override { MT_FAIL("not used"); }
    std::unique_ptr<mt::CommRequest> iall_reduce(Tensor&, ReduceOp) override {
        MT_FAIL("not used");
    }
    std::unique_ptr<Communicator> split(int, int) override { MT_FAIL("not used"); }
    void abort(int) override {}
    int64_t bytes_sent() const override { return 0; }

  private:
    class Later final : public mt::CommRequest {
      public:
        explicit Later(std::function<void()> work) : work_(std::move(work)) {}
        void wait() override {
            if (work_) std::exchange(work_, nullptr)();
        }

      private:
        std::function<void()> work_;
    };
    static std::unique_ptr<mt::CommRequest> later(std::function<void()> work) {
        return std::make_unique<Later>(std::move(work));
    }
    int rank_, size_;
};

Tensor expected_gather(const Shape& piece, DType dtype, int size, int64_t dim) {
    Shape shape = piece;
    shape[dim] *= size;
    Tensor want = Tensor::empty(shape, dtype);
    for (int i = 0; i < size; ++i)
        want.slice(dim, i * piece[dim], (i + 1) * piece[dim])
            .copy_from(rank_tensor(piece, dtype, i));
    return want;
}

Tensor expected_reduce_scatter(const Shape& shape, DType dtype, int rank, int size, int64_t dim,
                               ReduceOp op) {
    Tensor total = rank_tensor(shape, dtype, 0);
    for (int64_t k = 0; k < total.numel(); ++k) {
        double acc = get(total, k);
        for (int i = 1; i < size; ++i) {
            const double v = get(total, k) + i * kShift;
            acc = op == ReduceOp::min   ? std::min(acc, v)
                  : op == ReduceOp::max ? std::max(acc, v)
                                        : acc + v;
        }
        put(total, k, op == ReduceOp::avg ? acc / size : acc);
    }
    const int64_t e = shape[dim] / size;
    return total.slice(dim, rank * e, (rank + 1) * e).clone();
}

TEST(CommCollectives, AllGatherAlongEveryDimension) {
    const Shape piece{2, 3, 5};
    for (DType dtype : {DType::f32, DType::f64, DType::i64, DType::bf16})
        for (int size : {1, 2, 3, 4})
            for (int rank = 0; rank < size; ++rank)
                for (int64_t dim : {0, 1, 2}) {
                    SCOPED_TRACE(testing::Message() << mt::dtype_name(dtype) << " rank " << rank
                                                    << "/" << size << " dim " << dim);
                    ShiftedPeers comm(rank, size);
                    Tensor got =
                        mt::parallel::all_gather_along(comm, rank_tensor(piece, dtype, rank), dim);
                    expect_equal(got, expected_gather(piece, dtype, size, dim));
                    // Negative dimensions count from the back.
                    Tensor back = mt::parallel::all_gather_along(
                        comm, rank_tensor(piece, dtype, rank), dim - 3);
                    expect_equal(back, expected_gather(piece, dtype, size, dim));
                }
}

TEST(CommCollectives, ReduceScatterAlongEveryDimension) {
    const Shape shape{4, 12, 6};  // dim 0 split in 4, 1 in up to 4, 2 in up to 3
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::avg})
        for (DType dtype : {DType::f32, DType::f64})
            for (int size : {1, 2, 3, 4})
                for (int rank = 0; rank < size; ++rank)
                    for (int64_t dim : {0, 1, 2}) {
                        if (shape[dim] % size) continue;
                        SCOPED_TRACE(testing::Message() << "op " << int(op) << " rank " << rank
                                                        << "/" << size << " dim " << dim);
                        ShiftedPeers comm(rank, size);
                        Tensor got = mt::parallel::reduce_scatter_along(
                            comm, rank_tensor(shape, dtype, rank), dim, op);
                        expect_equal(got,
                                     expected_reduce_scatter(shape, dtype, rank, size, dim, op));
                    }
}

TEST(CommCollectives, SplitAlongTakesThisRanksSlice) {
    const Tensor full = rank_tensor({4, 6, 8}, DType::f32, 0);
    for (int size : {1, 2})
        for (int rank = 0; rank < size; ++rank)
            for (int64_t dim : {0, 1, 2, -1}) {
                ShiftedPeers comm(rank, size);
                const int64_t d = dim < 0 ? dim + 3 : dim, e = full.size(d) / size;
                expect_equal(mt::parallel::split_along(comm, full, dim),
                             full.slice(d, rank * e, (rank + 1) * e));
                // A non-contiguous input gives the same values.
                Tensor t = full.transpose(0, 2);
                const int64_t dt = d == 0 ? 2 : d == 2 ? 0 : 1, et = t.size(dt) / size;
                expect_equal(mt::parallel::split_along(comm, t, dt),
                             t.slice(dt, rank * et, (rank + 1) * et));
            }
    ShiftedPeers three(0, 3);
    EXPECT_THROW(mt::parallel::split_along(three, full, 0), mt::Error);
    EXPECT_THROW(mt::parallel::split_along(three, full, 3), mt::Error);
}

TEST(CommCollectives, SplitThenGatherRoundTrips) {
    // Sequence parallelism's pair on (B, T, H): each rank's split, gathered, is the whole.
    const int size = 4;
    const Tensor full = rank_tensor({2, 8, 3}, DType::f32, 0);
    for (int rank = 0; rank < size; ++rank) {
        ShiftedPeers comm(rank, size);
        Tensor mine = mt::parallel::split_along(comm, full, 1);
        // Peers' pieces differ from this one by the shift, so undo it in the comparison:
        // piece i of the gather is this rank's piece + (i - rank) * kShift.
        Tensor gathered = mt::parallel::all_gather_along(comm, mine, 1);
        for (int i = 0; i < size; ++i) {
            Tensor piece = gathered.slice(1, i * 2, i * 2 + 1).contiguous();
            EXPECT_EQ(get(piece, 0), get(mine, 0) + (i - rank) * kShift);
        }
    }
}

TEST(CommCollectives, NonContiguousInputs) {
    ShiftedPeers comm(1, 2);
    Tensor t = rank_tensor({5, 3, 2}, DType::f64, 1).transpose(0, 2);  // (2, 3, 5) strided
    Tensor got = mt::parallel::all_gather_along(comm, t, 1);
    ASSERT_EQ(got.shape(), (Shape{2, 6, 5}));
    expect_equal(got.slice(1, 3, 6).contiguous(), t);
    Tensor in = rank_tensor({4, 3, 2}, DType::f64, 1).transpose(0, 2);  // (2, 3, 4)
    Tensor rs = mt::parallel::reduce_scatter_along(comm, in, 2, ReduceOp::max);
    expect_equal(rs, in.slice(2, 2, 4).contiguous());  // rank 1 holds the larger values
}

TEST(CommCollectives, LocalCommunicatorIsTheIdentity) {
    auto comm = mt::make_local_communicator();
    Tensor t = rank_tensor({2, 3, 4}, DType::f32, 0);
    expect_equal(mt::parallel::all_gather_along(*comm, t, 1), t);
    expect_equal(mt::parallel::reduce_scatter_along(*comm, t, 2, ReduceOp::avg), t);
    expect_equal(mt::parallel::split_along(*comm, t, 0), t);
}

TEST(CommCollectives, ErrorsNameTheProblem) {
    ShiftedPeers comm(0, 3);
    Tensor t = rank_tensor({2, 4}, DType::f32, 0);
    EXPECT_NE(mt::test::error_of([&] {
                  mt::parallel::reduce_scatter_along(comm, t, 1, ReduceOp::sum);
              }).find("does not split into 3"),
              std::string::npos);
    EXPECT_NE(mt::test::error_of([&] {
                  mt::parallel::all_gather_along(comm, t, 2);
              }).find("out of range"),
              std::string::npos);
    EXPECT_THROW(mt::parallel::all_gather_along(comm, Tensor(), 0), mt::Error);
}

}  // namespace
