// The mpi plugin under mpirun (2 and 4 ranks): every collective against values computed
// locally, the along-dimension collectives, byte strings, point to point with tags,
// asynchronous forms, split and bytes_sent; halves reduced in f32. Every rank runs every test;
// values are small integers so that sums are exact whatever order MPI adds them in.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <vector>

#include "mt/communicator.h"
#include "mt/parallel/collectives.h"
#include "mt/parallel/world.h"
#include "mt/plugin_loader.h"
#include "mt/registry.h"
#include "test_support.h"

namespace {

using mt::DType;
using mt::ReduceOp;
using mt::Shape;
using mt::Tensor;

// The world, made the way the tools make it: through the registry, which loads
// libmt_comm_mpi.so with Boost.DLL.
mt::Communicator& world() {
    static std::unique_ptr<mt::Communicator> comm =
        mt::parallel::make_world_communicator(mt::Registry::global(), "cpu");
    return *comm;
}

double get(const Tensor& t, int64_t i) {
    return mt::test::element(t, i);
}
void put(Tensor& t, int64_t i, double v) {
    mt::test::set_element(t, i, v);
}

// What rank r holds: a different small integer per element and rank.
double value(int r, int64_t i) {
    return double((i * 7 + r * 13) % 23) - 5 + r;
}
bool is_half(DType dtype) {
    return dtype == DType::bf16 || dtype == DType::f16;
}
// Halves are made as f32 and rounded, and read back widened.
Tensor rank_tensor(const Shape& shape, DType dtype, int r) {
    Tensor t = Tensor::empty(shape, is_half(dtype) ? DType::f32 : dtype);
    for (int64_t i = 0; i < t.numel(); ++i) put(t, i, value(r, i));
    return is_half(dtype) ? mt::cast_float(t, dtype) : t;
}

void expect_equal(const Tensor& got, const Tensor& want) {
    ASSERT_EQ(got.shape(), want.shape());
    ASSERT_EQ(got.dtype(), want.dtype());
    Tensor g = got.contiguous(), w = want.contiguous();
    if (is_half(g.dtype())) {
        g = mt::cast_float(g, DType::f32);
        w = mt::cast_float(w, DType::f32);
    }
    for (int64_t i = 0; i < g.numel(); ++i) ASSERT_EQ(get(g, i), get(w, i)) << "element " << i;
}

// The reduction of every rank's rank_tensor, computed here.
Tensor reduced(const Shape& shape, DType dtype, int size, ReduceOp op) {
    if (is_half(dtype)) return mt::cast_float(reduced(shape, DType::f32, size, op), dtype);
    Tensor out = Tensor::empty(shape, dtype);
    for (int64_t i = 0; i < out.numel(); ++i) {
        double acc = value(0, i);
        for (int r = 1; r < size; ++r) {
            const double v = value(r, i);
            acc = op == ReduceOp::max   ? std::max(acc, v)
                  : op == ReduceOp::min ? std::min(acc, v)
                                        : acc + v;
        }
        put(out, i, acc);
        if (op == ReduceOp::avg) put(out, i, get(out, i) / size);  // in the tensor's precision
    }
    return out;
}

TEST(MpiCommunicator, WorldIsTheLaunchedJob) {
    mt::Communicator& comm = world();
    EXPECT_EQ(comm.name(), "mpi");
    EXPECT_TRUE(mt::parallel::launched_by_mpi());
    ASSERT_NE(std::getenv("OMPI_COMM_WORLD_SIZE"), nullptr);
    EXPECT_EQ(comm.size(), std::atoi(std::getenv("OMPI_COMM_WORLD_SIZE")));
    EXPECT_EQ(comm.rank(), std::atoi(std::getenv("OMPI_COMM_WORLD_RANK")));
    // It came through the Boost.DLL path.
    bool loaded = false;
    for (const auto& info : mt::Registry::global().loader().loaded())
        loaded |= info.kind == "comm" && info.name == "mpi";
    EXPECT_TRUE(loaded);
}

TEST(MpiCommunicator, AllReduceEveryOpAndDtype) {
    mt::Communicator& comm = world();
    const Shape shape{3, 5};
    // bf16 / f16 (tensor-parallel activations in --bf16 / --fp16 runs) are added in f32 and
    // rounded back, pair by pair; small integers keep the sums exact.
    for (DType dtype : {DType::f32, DType::f64, DType::i32, DType::i64, DType::bf16, DType::f16})
        for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::avg}) {
            const bool integer = dtype == DType::i32 || dtype == DType::i64;
            Tensor t = rank_tensor(shape, dtype, comm.rank());
            if (integer && op == ReduceOp::avg) {
                EXPECT_NE(
                    mt::test::error_of([&] { comm.all_reduce(t, op); }).find("avg of integers"),
                    std::string::npos);
                continue;
            }
            SCOPED_TRACE(testing::Message() << mt::dtype_name(dtype) << " op " << int(op));
            comm.all_reduce(t, op);
            expect_equal(t, reduced(shape, dtype, comm.size(), op));
        }
    Tensor in = rank_tensor({2 * comm.size(), 3}, DType::bf16, comm.rank());
    Tensor out = Tensor::empty({2, 3}, DType::bf16);
    comm.reduce_scatter(in, out, ReduceOp::sum);
    expect_equal(out, reduced({2 * comm.size(), 3}, DType::bf16, comm.size(), ReduceOp::sum)
                          .slice(0, 2 * comm.rank(), 2 * comm.rank() + 2));
    Tensor bools = Tensor::zeros({4}, DType::boolean);
    EXPECT_NE(mt::test::error_of([&] { comm.all_reduce(bools, ReduceOp::sum); }).find("bool"),
              std::string::npos);
}

TEST(MpiCommunicator, AllGatherAndReduceScatterAlongEachDimension) {
    mt::Communicator& comm = world();
    const int n = comm.size(), me = comm.rank();
    const Shape piece{2, 3, 4};
    for (DType dtype : {DType::f32, DType::f64, DType::i64, DType::bf16})
        for (int64_t dim : {0, 1, 2}) {
            SCOPED_TRACE(testing::Message() << mt::dtype_name(dtype) << " dim " << dim);
            Shape shape = piece;
            shape[dim] *= n;
            Tensor want = Tensor::empty(shape, dtype);
            for (int r = 0; r < n; ++r)
                want.slice(dim, r * piece[dim], (r + 1) * piece[dim])
                    .copy_from(rank_tensor(piece, dtype, r));
            expect_equal(mt::parallel::all_gather_along(comm, rank_tensor(piece, dtype, me), dim),
                         want);
        }
    for (DType dtype : {DType::f32, DType::f64, DType::i64})
        for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::avg})
            for (int64_t dim : {0, 1, 2}) {
                if (op == ReduceOp::avg && dtype == DType::i64) continue;
                SCOPED_TRACE(testing::Message()
                             << mt::dtype_name(dtype) << " op " << int(op) << " dim " << dim);
                Shape shape = piece;
                shape[dim] *= n;
                const Tensor all = reduced(shape, dtype, n, op);
                const Tensor want = all.slice(dim, me * piece[dim], (me + 1) * piece[dim]);
                Tensor in = rank_tensor(shape, dtype, me);
                expect_equal(mt::parallel::reduce_scatter_along(comm, in, dim, op), want);
            }
}

TEST(MpiCommunicator, SequenceParallelRoundTrip) {
    // (B, T, H) split along T, gathered back: every rank has the whole again.
    mt::Communicator& comm = world();
    const Tensor full = rank_tensor({2, 4 * comm.size(), 8}, DType::f32, 0);
    Tensor mine = mt::parallel::split_along(comm, full, 1);
    EXPECT_EQ(mine.size(1), 4);
    expect_equal(mt::parallel::all_gather_along(comm, mine, 1), full);
}

TEST(MpiCommunicator, BroadcastFromEveryRoot) {
    mt::Communicator& comm = world();
    for (int root = 0; root < comm.size(); ++root)
        for (DType dtype : {DType::f32, DType::i64, DType::bf16}) {
            Tensor t = rank_tensor({7}, dtype, comm.rank());
            comm.broadcast(t, root);
            expect_equal(t, rank_tensor({7}, dtype, root));
        }
    Tensor t = Tensor::zeros({1}, DType::f32);
    EXPECT_THROW(comm.broadcast(t, comm.size()), mt::Error);
}

TEST(MpiCommunicator, ByteStringsOfDifferentLengths) {
    mt::Communicator& c = world();
    // Rank r sends r * 3 bytes (rank 0 none), with a zero byte inside.
    std::string mine(size_t(c.rank()) * 3, char('a' + c.rank()));
    if (!mine.empty()) mine[0] = '\0';
    const std::vector<std::string> all = mt::parallel::all_gather_bytes(c, mine);
    ASSERT_EQ(all.size(), size_t(c.size()));
    for (int r = 0; r < c.size(); ++r) {
        std::string want(size_t(r) * 3, char('a' + r));
        if (!want.empty()) want[0] = '\0';
        EXPECT_EQ(all[size_t(r)], want) << "rank " << r;
    }
    const int root = c.size() - 1;
    EXPECT_EQ(mt::parallel::broadcast_bytes(c, c.rank() == root ? "/tmp/iter.tmp.42" : "x", root),
              "/tmp/iter.tmp.42");
}

TEST(MpiCommunicator, AllToAllWithUnequalCounts) {
    mt::Communicator& comm = world();
    const int n = comm.size(), me = comm.rank();
    // Rank s sends rows(s, d) rows to rank d (some zero); row k of that message holds
    // (s, d, k, 7) so the receiver can tell where each came from.
    auto rows = [](int s, int d) { return int64_t((s + 2 * d) % 3); };
    std::vector<int64_t> send(n), recv(n);
    for (int r = 0; r < n; ++r) send[r] = rows(me, r), recv[r] = rows(r, me);
    const int64_t sent = std::accumulate(send.begin(), send.end(), int64_t{0});
    const int64_t received = std::accumulate(recv.begin(), recv.end(), int64_t{0});
    Tensor in = Tensor::empty({sent, 4}, DType::i64),
           out = Tensor::zeros({received, 4}, DType::i64);
    int64_t at = 0;
    for (int d = 0; d < n; ++d)
        for (int64_t k = 0; k < send[d]; ++k, ++at)
            for (int c = 0; c < 4; ++c)
                in.data<int64_t>()[at * 4 + c] = std::vector<int64_t>{me, d, k, 7}[c];
    const int64_t before = comm.bytes_sent();
    comm.all_to_all(in, send, out, recv);
    EXPECT_EQ(comm.bytes_sent() - before, (sent - send[me]) * 4 * 8);  // not the rows to itself
    at = 0;
    for (int s = 0; s < n; ++s)
        for (int64_t k = 0; k < recv[s]; ++k, ++at) {
            const int64_t* row = out.data<int64_t>() + at * 4;
            EXPECT_EQ(row[0], s);
            EXPECT_EQ(row[1], me);
            EXPECT_EQ(row[2], k);
            EXPECT_EQ(row[3], 7);
        }
    // Equal parts: block d of rank s's input goes to rank d, block s of d's output.
    Tensor ein = Tensor::empty({2 * n, 3}, DType::f32),
           eout = Tensor::empty({2 * n, 3}, DType::f32);
    for (int64_t i = 0; i < ein.numel(); ++i) ein.data<float>()[i] = float(me * 1000 + i);
    comm.all_to_all(ein, eout);
    for (int s = 0; s < n; ++s)
        for (int64_t i = 0; i < 6; ++i)
            EXPECT_EQ(eout.data<float>()[s * 6 + i], float(s * 1000 + me * 6 + i));
    std::vector<int64_t> wrong(n, 0);
    EXPECT_THROW(comm.all_to_all(in, wrong, out, recv), mt::Error);
}

TEST(MpiCommunicator, RingExchangeWithTags) {
    mt::Communicator& comm = world();
    const int n = comm.size(), me = comm.rank(), next = (me + 1) % n, prev = (me + n - 1) % n;
    // Two messages per tag to the next rank, received from the previous one with the tags
    // posted in the other order: tags match them, order within a tag is kept.
    Tensor a1 = rank_tensor({5}, DType::f64, me), a2 = rank_tensor({5}, DType::f64, me + 10);
    Tensor b1 = rank_tensor({3}, DType::i64, me + 20), b2 = rank_tensor({3}, DType::i64, me + 30);
    Tensor ra1 = Tensor::zeros({5}, DType::f64), ra2 = Tensor::zeros({5}, DType::f64);
    Tensor rb1 = Tensor::zeros({3}, DType::i64), rb2 = Tensor::zeros({3}, DType::i64);
    std::vector<std::unique_ptr<mt::CommRequest>> requests;
    requests.push_back(comm.irecv(rb1, prev, 2));
    requests.push_back(comm.irecv(ra1, prev, 1));
    requests.push_back(comm.irecv(rb2, prev, 2));
    requests.push_back(comm.irecv(ra2, prev, 1));
    const int64_t before = comm.bytes_sent();
    requests.push_back(comm.isend(a1, next, 1));
    requests.push_back(comm.isend(b1, next, 2));
    requests.push_back(comm.isend(a2, next, 1));
    requests.push_back(comm.isend(b2, next, 2));
    for (auto& r : requests) r->wait();
    EXPECT_EQ(comm.bytes_sent() - before, 2 * 5 * 8 + 2 * 3 * 8);
    expect_equal(ra1, rank_tensor({5}, DType::f64, prev));
    expect_equal(ra2, rank_tensor({5}, DType::f64, prev + 10));
    expect_equal(rb1, rank_tensor({3}, DType::i64, prev + 20));
    expect_equal(rb2, rank_tensor({3}, DType::i64, prev + 30));
}

TEST(MpiCommunicator, BlockingSendRecvInPairs) {
    mt::Communicator& comm = world();
    const int me = comm.rank(), peer = me ^ 1;  // 0<->1, 2<->3
    Tensor mine = rank_tensor({6}, DType::f32, me), theirs = Tensor::zeros({6}, DType::f32);
    if (me % 2 == 0) {
        comm.send(mine, peer);
        comm.recv(theirs, peer);
    } else {
        comm.recv(theirs, peer);
        comm.send(mine, peer);
    }
    expect_equal(theirs, rank_tensor({6}, DType::f32, peer));
    // A message shorter than the tensor is an error on the receiver.
    if (me % 2 == 0) {
        comm.send(Tensor::zeros({2}, DType::f32), peer);
    } else {
        Tensor longer = Tensor::zeros({4}, DType::f32);
        EXPECT_NE(mt::test::error_of([&] { comm.recv(longer, peer); }).find("sent 2 elements"),
                  std::string::npos);
    }
    EXPECT_THROW(comm.send(mine, me), mt::Error);  // to itself would block forever
    EXPECT_THROW(comm.isend(mine, peer, -1), mt::Error);
    comm.barrier();
}

TEST(MpiCommunicator, AsynchronousCollectives) {
    mt::Communicator& comm = world();
    const int n = comm.size(), me = comm.rank();
    Tensor sum = rank_tensor({4, 3}, DType::f64, me), avg = rank_tensor({4, 3}, DType::f32, me);
    Tensor piece = rank_tensor({2, 3}, DType::i64, me),
           gathered = Tensor::zeros({2 * n, 3}, DType::i64);
    Tensor scatter_in = rank_tensor({2 * n, 2}, DType::f64, me);
    Tensor scattered = Tensor::zeros({2, 2}, DType::f64);
    auto r1 = comm.iall_reduce(sum, ReduceOp::sum);
    auto r2 = comm.iall_reduce(avg, ReduceOp::avg);
    auto r3 = comm.iall_gather(piece, gathered);
    auto r4 = comm.ireduce_scatter(scatter_in, scattered, ReduceOp::max);
    r4->wait();
    r2->wait();
    r3->wait();
    r1->wait();
    expect_equal(sum, reduced({4, 3}, DType::f64, n, ReduceOp::sum));
    expect_equal(avg, reduced({4, 3}, DType::f32, n, ReduceOp::avg));
    for (int r = 0; r < n; ++r)
        expect_equal(gathered.slice(0, 2 * r, 2 * r + 2), rank_tensor({2, 3}, DType::i64, r));
    expect_equal(scattered,
                 reduced({2 * n, 2}, DType::f64, n, ReduceOp::max).slice(0, 2 * me, 2 * me + 2));
    // A request dropped without wait() finishes in its destructor.
    Tensor dropped = rank_tensor({8}, DType::f32, me);
    comm.iall_reduce(dropped, ReduceOp::min).reset();
    expect_equal(dropped, reduced({8}, DType::f32, n, ReduceOp::min));
}

TEST(MpiCommunicator, SplitEvenOddAndReversed) {
    mt::Communicator& comm = world();
    const int n = comm.size(), me = comm.rank();
    auto parity = comm.split(me % 2, me);
    EXPECT_EQ(parity->name(), "mpi");
    EXPECT_EQ(parity->size(), me % 2 == 0 ? (n + 1) / 2 : n / 2);
    EXPECT_EQ(parity->rank(), me / 2);
    Tensor ranks = Tensor::empty({1}, DType::i64);
    ranks.data<int64_t>()[0] = me;
    parity->all_reduce(ranks, ReduceOp::sum);
    int64_t want = 0;
    for (int r = me % 2; r < n; r += 2) want += r;
    EXPECT_EQ(ranks.data<int64_t>()[0], want);

    // A key that reverses the order; its gather lists the world ranks backwards.
    auto reversed = comm.split(0, n - me);
    EXPECT_EQ(reversed->size(), n);
    EXPECT_EQ(reversed->rank(), n - 1 - me);
    Tensor mine = Tensor::empty({1}, DType::i32), all = Tensor::empty({n}, DType::i32);
    mine.data<int32_t>()[0] = me;
    reversed->all_gather(mine, all);
    for (int r = 0; r < n; ++r) EXPECT_EQ(all.data<int32_t>()[r], n - 1 - r);

    // Groups of groups, and ties in the key ordered by rank.
    auto pairs = reversed->split(reversed->rank() / 2, 0);
    EXPECT_EQ(pairs->rank(), reversed->rank() % 2);
    EXPECT_EQ(pairs->size(), std::min(2, n - reversed->rank() / 2 * 2));
    pairs->barrier();
    EXPECT_THROW(comm.split(-1, 0), mt::Error);
}

TEST(MpiCommunicator, BytesSentCountsThePayload) {
    mt::Communicator& world_comm = world();
    auto comm = world_comm.split(0, world_comm.rank());
    const int n = comm->size(), me = comm->rank();
    EXPECT_EQ(comm->bytes_sent(), 0);
    Tensor t = rank_tensor({10}, DType::f32, me);
    comm->all_reduce(t, ReduceOp::sum);  // its input: 40
    Tensor piece = rank_tensor({3}, DType::f64, me), all = Tensor::empty({3 * n}, DType::f64);
    comm->all_gather(piece, all);  // this rank's piece: 24
    Tensor in = rank_tensor({2 * n}, DType::f32, me), out = Tensor::empty({2}, DType::f32);
    comm->reduce_scatter(in, out, ReduceOp::sum);  // its input: 8n
    Tensor b = rank_tensor({5}, DType::f32, me);
    comm->broadcast(b, 1);  // 20 on the root only
    int64_t want = 40 + 24 + 8 * n + (me == 1 ? 20 : 0);
    EXPECT_EQ(comm->bytes_sent(), want);
    auto r = comm->iall_reduce(t, ReduceOp::max);  // counted when started
    r->wait();
    EXPECT_EQ(comm->bytes_sent(), want + 40);
}

}  // namespace
