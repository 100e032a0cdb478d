// The one-process communicator: a group of size 1, where every collective is the identity and
// nothing leaves the process (so bytes_sent stays 0).
#include "mt/communicator.h"

namespace mt {

namespace {

// Finished when made: a group of one completes every collective at the call.
class DoneRequest final : public CommRequest {
  public:
    void wait() override {}
};

class LocalCommunicator final : public Communicator {
  public:
    std::string_view name() const override { return "local"; }
    int rank() const override { return 0; }
    int size() const override { return 1; }
    void all_reduce(Tensor&, ReduceOp) override {}
    void all_gather(const Tensor& in, Tensor& out) override { copy(in, out, "all_gather"); }
    void reduce_scatter(const Tensor& in, Tensor& out, ReduceOp) override {
        copy(in, out, "reduce_scatter");
    }
    void broadcast(Tensor&, int root) override {
        MT_CHECK(root == 0, "broadcast: root ", root, " does not exist in a group of one");
    }
    void all_to_all(const Tensor& in, std::span<const int64_t> send_rows, Tensor& out,
                    std::span<const int64_t> recv_rows) override {
        MT_CHECK(send_rows.size() == 1 && recv_rows.size() == 1,
                 "all_to_all: a group of one takes one count each way, got ", send_rows.size(),
                 " and ", recv_rows.size());
        MT_CHECK(in.dim() >= 1 && send_rows[0] == in.size(0) && recv_rows[0] == send_rows[0],
                 "all_to_all: a group of one sends all of ", in.describe(),
                 " to itself; counts were ", send_rows[0], " sent and ", recv_rows[0], " received");
        copy(in, out, "all_to_all");
    }
    // A group of one has no peer: a message to itself would deadlock a blocking pair (and
    // hides a wrong group in the caller), so point to point is refused whatever the rank.
    void send(const Tensor&, int dst) override { no_peer("send to", dst); }
    void recv(Tensor&, int src) override { no_peer("recv from", src); }
    void barrier() override {}

    std::unique_ptr<CommRequest> isend(const Tensor&, int dst, int) override {
        no_peer("isend to", dst);
    }
    std::unique_ptr<CommRequest> irecv(Tensor&, int src, int) override {
        no_peer("irecv from", src);
    }
    std::unique_ptr<CommRequest> iall_reduce(Tensor& t, ReduceOp op) override {
        all_reduce(t, op);
        return std::make_unique<DoneRequest>();
    }
    std::unique_ptr<CommRequest> ireduce_scatter(const Tensor& in, Tensor& out,
                                                 ReduceOp op) override {
        reduce_scatter(in, out, op);
        return std::make_unique<DoneRequest>();
    }
    std::unique_ptr<CommRequest> iall_gather(const Tensor& in, Tensor& out) override {
        all_gather(in, out);
        return std::make_unique<DoneRequest>();
    }

    std::unique_ptr<Communicator> split(int, int) override {
        return std::make_unique<LocalCommunicator>();
    }
    void abort(int) override {}  // the caller's own error handling ends the one process
    int64_t bytes_sent() const override { return 0; }

  private:
    static void copy(const Tensor& in, Tensor& out, const char* op) {
        MT_CHECK(in.shape() == out.shape() && in.dtype() == out.dtype(), op,
                 ": a group of one needs equal shapes and dtypes, got ", in.describe(), " and ",
                 out.describe());
        if (in.raw_data() != out.raw_data()) out.copy_from(in);
    }
    [[noreturn]] static void no_peer(const char* op, int peer) {
        MT_FAIL(op, " rank ", peer, ": a group of one (the local communicator) has no peer");
    }
};

}  // namespace

std::unique_ptr<Communicator> make_local_communicator() {
    return std::make_unique<LocalCommunicator>();
}

}  // namespace mt
