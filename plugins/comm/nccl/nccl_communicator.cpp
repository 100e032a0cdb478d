// Communicator on NCCL. Operations are enqueued on the group's own CUDA stream; the blocking
// forms then synchronise it, the asynchronous ones record an event that wait() synchronises.
// The stream is a blocking one (cudaStreamDefault), so it is ordered against the legacy
// default stream that the cuda backend computes on: no extra event is needed before a
// collective reads what a kernel wrote. Untested here (no GPU on the build machine); it is
// compiled and linked on every CUDA build.
#include "nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mt/error.h"

// Checks a CUDA runtime / NCCL call: mt::Error names the operation, the function and the
// library's error text (NCCL adds its last detailed message).
#define MT_NCCL_CUDA_CHECK(what, call)                                                        \
    do {                                                                                      \
        const cudaError_t mt_rc_ = (call);                                                    \
        if (mt_rc_ != cudaSuccess) {                                                          \
            const std::string_view mt_call_(#call);                                           \
            MT_FAIL("nccl ", what, ": ", mt_call_.substr(0, mt_call_.find('(')),              \
                    " failed: ", cudaGetErrorName(mt_rc_), ": ", cudaGetErrorString(mt_rc_)); \
        }                                                                                     \
    } while (0)

#define MT_NCCL_CHECK(what, call)                                                             \
    do {                                                                                      \
        const ncclResult_t mt_rc_ = (call);                                                   \
        if (mt_rc_ != ncclSuccess) {                                                          \
            const std::string_view mt_call_(#call);                                           \
            MT_FAIL("nccl ", what, ": ", mt_call_.substr(0, mt_call_.find('(')),              \
                    " failed: ", ncclGetErrorString(mt_rc_), " (", ncclGetLastError(nullptr), \
                    ")");                                                                     \
        }                                                                                     \
    } while (0)

namespace mt::plugins::nccl {

namespace {

ncclDataType_t reduce_type(DType dtype, ReduceOp op, const char* what) {
    ncclDataType_t type;
    bool floating = true;
    switch (dtype) {
        case DType::f32:
            type = ncclFloat32;
            break;
        case DType::f64:
            type = ncclFloat64;
            break;
        case DType::f16:
            type = ncclFloat16;
            break;
        case DType::bf16:
            type = ncclBfloat16;
            break;
        case DType::i32:
            type = ncclInt32, floating = false;
            break;
        case DType::i64:
            type = ncclInt64, floating = false;
            break;
        default:
            MT_FAIL("nccl ", what, ": reductions take f32, f64, f16, bf16, i32 or i64, not ",
                    dtype_name(dtype));
    }
    MT_CHECK(op != ReduceOp::avg || floating, "nccl ", what,
             ": avg of integers is refused (it would truncate); reduce with sum and divide");
    return type;
}

ncclRedOp_t nccl_op(ReduceOp op) {
    switch (op) {
        case ReduceOp::sum:
            return ncclSum;
        case ReduceOp::max:
            return ncclMax;
        case ReduceOp::min:
            return ncclMin;
        case ReduceOp::avg:
            return ncclAvg;
    }
    MT_FAIL("nccl: unknown reduce op ", static_cast<int>(op));
}

// Operations launched together and the event recorded after them.
struct Batch {
    struct P2p {
        bool send;
        void* data;
        size_t bytes;
        int peer;
    };
    std::vector<P2p> p2p;  // isend/irecv posted but not yet launched
    cudaEvent_t done = nullptr;
    bool launched = false;
    ~Batch() {
        if (done) cudaEventDestroy(done);
    }
};

// One NCCL communicator, its stream and its pending point-to-point batch; shared with the
// requests so that either may outlive the other.
struct Group {
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
    int device = 0, rank = 0, size = 1;
    std::shared_ptr<Communicator> bootstrap;
    std::shared_ptr<Batch> open = std::make_shared<Batch>();
    float* barrier_word = nullptr;

    Group(ncclComm_t c, int dev, std::shared_ptr<Communicator> boot)
        : comm(c), device(dev), bootstrap(std::move(boot)) {
        MT_NCCL_CUDA_CHECK("setup", cudaSetDevice(device));
        MT_NCCL_CUDA_CHECK("setup", cudaStreamCreateWithFlags(&stream, cudaStreamDefault));
        MT_NCCL_CHECK("setup", ncclCommUserRank(comm, &rank));
        MT_NCCL_CHECK("setup", ncclCommCount(comm, &size));
    }
    ~Group() {
        // Errors have no one to go to at destruction.
        cudaSetDevice(device);
        if (stream) cudaStreamSynchronize(stream);
        if (barrier_word) cudaFree(barrier_word);
        if (comm) ncclCommDestroy(comm);
        if (stream) cudaStreamDestroy(stream);
    }
    Group(const Group&) = delete;
    Group& operator=(const Group&) = delete;

    // Launches the queued isend/irecv as one NCCL group (so a ring of sends and receives
    // cannot deadlock on the stream) and records their event. Every other operation flushes
    // first, so every rank launches in the order it posted.
    void flush() {
        if (open->p2p.empty()) return;
        std::shared_ptr<Batch> batch = std::exchange(open, std::make_shared<Batch>());
        MT_NCCL_CUDA_CHECK("p2p", cudaSetDevice(device));
        MT_NCCL_CHECK("p2p", ncclGroupStart());
        for (const auto& op : batch->p2p) {
            if (op.send)
                MT_NCCL_CHECK("isend",
                              ncclSend(op.data, op.bytes, ncclUint8, op.peer, comm, stream));
            else
                MT_NCCL_CHECK("irecv",
                              ncclRecv(op.data, op.bytes, ncclUint8, op.peer, comm, stream));
        }
        MT_NCCL_CHECK("p2p", ncclGroupEnd());
        record(*batch);
    }

    void record(Batch& batch) {
        MT_NCCL_CUDA_CHECK("event", cudaEventCreateWithFlags(&batch.done, cudaEventDisableTiming));
        MT_NCCL_CUDA_CHECK("event", cudaEventRecord(batch.done, stream));
        batch.launched = true;
    }

    // Before an operation: the device current, earlier isend/irecv launched.
    void begin() {
        flush();
        MT_NCCL_CUDA_CHECK("setup", cudaSetDevice(device));
    }
    void synchronize(const char* what) {
        MT_NCCL_CUDA_CHECK(what, cudaStreamSynchronize(stream));
        ncclResult_t async = ncclSuccess;
        MT_NCCL_CHECK(what, ncclCommGetAsyncError(comm, &async));
        MT_CHECK(async == ncclSuccess, "nccl ", what, ": ", ncclGetErrorString(async));
    }
};

class NcclRequest final : public CommRequest {
  public:
    NcclRequest(std::shared_ptr<Group> group, std::shared_ptr<Batch> batch,
                std::vector<Tensor> keep)
        : group_(std::move(group)), batch_(std::move(batch)), keep_(std::move(keep)) {}
    ~NcclRequest() override {
        // Unwaited: the peer expects the operation and the device may still use the tensors.
        if (done_) return;
        try {
            wait();
        } catch (...) {
        }
    }
    void wait() override {
        if (done_) return;
        done_ = true;
        if (!batch_->launched) group_->flush();
        MT_NCCL_CUDA_CHECK("wait", cudaEventSynchronize(batch_->done));
        keep_.clear();
    }

  private:
    std::shared_ptr<Group> group_;
    std::shared_ptr<Batch> batch_;
    std::vector<Tensor> keep_;
    bool done_ = false;
};

class NcclCommunicator final : public Communicator {
  public:
    explicit NcclCommunicator(std::shared_ptr<Group> group) : g_(std::move(group)) {}

    std::string_view name() const override { return "nccl"; }
    int rank() const override { return g_->rank; }
    int size() const override { return g_->size; }

    void all_reduce(Tensor& t, ReduceOp op) override {
        launch_all_reduce(t, op, "all_reduce");
        g_->synchronize("all_reduce");
    }
    void all_gather(const Tensor& in, Tensor& out) override {
        launch_all_gather(in, out, "all_gather");
        g_->synchronize("all_gather");
    }
    void reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) override {
        launch_reduce_scatter(in, out, op, "reduce_scatter");
        g_->synchronize("reduce_scatter");
    }
    void broadcast(Tensor& t, int root) override {
        check_tensor(t, "broadcast");
        check_rank(root, "broadcast root");
        g_->begin();
        if (g_->rank == root && g_->size > 1)
            bytes_sent_ += t.nbytes();  // a lone rank sends nothing
        MT_NCCL_CHECK("broadcast", ncclBroadcast(t.raw_data(), t.raw_data(), bytes(t), ncclUint8,
                                                 root, g_->comm, g_->stream));
        g_->synchronize("broadcast");
    }

    void all_to_all(const Tensor& in, std::span<const int64_t> send_rows, Tensor& out,
                    std::span<const int64_t> recv_rows) override;

    void send(const Tensor& t, int dst) override {
        check_p2p(t, dst, "send");
        g_->begin();
        bytes_sent_ += t.nbytes();
        MT_NCCL_CHECK("send",
                      ncclSend(t.raw_data(), bytes(t), ncclUint8, dst, g_->comm, g_->stream));
        g_->synchronize("send");
    }
    void recv(Tensor& t, int src) override {
        check_p2p(t, src, "recv");
        g_->begin();
        MT_NCCL_CHECK("recv",
                      ncclRecv(t.raw_data(), bytes(t), ncclUint8, src, g_->comm, g_->stream));
        g_->synchronize("recv");
    }
    void barrier() override {
        g_->begin();
        if (!g_->barrier_word)
            MT_NCCL_CUDA_CHECK("barrier", cudaMalloc(&g_->barrier_word, sizeof(float)));
        MT_NCCL_CHECK("barrier", ncclAllReduce(g_->barrier_word, g_->barrier_word, 1, ncclFloat32,
                                               ncclSum, g_->comm, g_->stream));
        g_->synchronize("barrier");
    }

    // NCCL matches point-to-point messages by order, not by tag: between two ranks, sends
    // and receives must be posted in the same order on both sides (which the same-tag rule
    // of the interface implies). They are launched together at the next wait() or operation.
    std::unique_ptr<CommRequest> isend(const Tensor& t, int dst, int tag) override {
        check_p2p(t, dst, "isend");
        g_->open->p2p.push_back({true, t.raw_data(), bytes(t), dst});
        bytes_sent_ += t.nbytes();
        return std::make_unique<NcclRequest>(g_, g_->open, std::vector<Tensor>{t});
    }
    std::unique_ptr<CommRequest> irecv(Tensor& t, int src, int tag) override {
        check_p2p(t, src, "irecv");
        g_->open->p2p.push_back({false, t.raw_data(), bytes(t), src});
        return std::make_unique<NcclRequest>(g_, g_->open, std::vector<Tensor>{t});
    }
    std::unique_ptr<CommRequest> iall_reduce(Tensor& t, ReduceOp op) override {
        launch_all_reduce(t, op, "iall_reduce");
        return launched({t});
    }
    std::unique_ptr<CommRequest> ireduce_scatter(const Tensor& in, Tensor& out,
                                                 ReduceOp op) override {
        launch_reduce_scatter(in, out, op, "ireduce_scatter");
        return launched({in, out});
    }
    std::unique_ptr<CommRequest> iall_gather(const Tensor& in, Tensor& out) override {
        launch_all_gather(in, out, "iall_gather");
        return launched({in, out});
    }

    std::unique_ptr<Communicator> split(int color, int key) override {
        // NCCL_SPLIT_NOCOLOR (negative) would leave this rank without a group; the interface
        // gives every rank one.
        MT_CHECK(color >= 0, "nccl split: color must be non-negative, got ", color);
        g_->begin();
        ncclComm_t child = nullptr;
        MT_NCCL_CHECK("split", ncclCommSplit(g_->comm, color, key, &child, nullptr));
        try {
            return std::make_unique<NcclCommunicator>(
                std::make_shared<Group>(child, g_->device, g_->bootstrap));
        } catch (...) {
            ncclCommDestroy(child);
            throw;
        }
    }

    void abort(int exit_code) override {
        // MPI_Abort stops every process; NCCL kernels still running die with them.
        g_->bootstrap->abort(exit_code);
    }

    int64_t bytes_sent() const override { return bytes_sent_; }

  private:
    static size_t bytes(const Tensor& t) { return static_cast<size_t>(t.nbytes()); }

    void check_tensor(const Tensor& t, const char* what) const {
        MT_CHECK(t.defined() && (t.device() == Device{DeviceType::cuda, g_->device}), "nccl ", what,
                 ": takes tensors on cuda:", g_->device, " (this rank's GPU), got ", t.describe());
        MT_CHECK(t.is_contiguous(), "nccl ", what, ": tensors must be contiguous, got ",
                 t.describe());
    }
    void check_rank(int peer, const char* what) const {
        MT_CHECK(peer >= 0 && peer < g_->size, "nccl ", what, ": rank ", peer,
                 " is not in this group of ", g_->size);
    }
    void check_p2p(const Tensor& t, int peer, const char* what) const {
        check_tensor(t, what);
        check_rank(peer, what);
        MT_CHECK(peer != g_->rank, "nccl ", what, ": rank ", peer,
                 " is this rank; NCCL has no messages to self");
    }

    void launch_all_reduce(Tensor& t, ReduceOp op, const char* what) {
        check_tensor(t, what);
        const ncclDataType_t type = reduce_type(t.dtype(), op, what);
        g_->begin();
        if (g_->size > 1) bytes_sent_ += t.nbytes();  // a lone rank sends nothing
        MT_NCCL_CHECK(
            what, ncclAllReduce(t.raw_data(), t.raw_data(), static_cast<size_t>(t.numel()), type,
                                nccl_op(op), g_->comm, g_->stream));
    }
    void launch_all_gather(const Tensor& in, Tensor& out, const char* what) {
        check_tensor(in, what);
        check_tensor(out, what);
        MT_CHECK(in.dtype() == out.dtype() && in.dim() >= 1 && out.dim() == in.dim() &&
                     out.size(0) == in.size(0) * g_->size && out.numel() == in.numel() * g_->size,
                 "nccl ", what, ": out must hold ", g_->size, " times the rows of in, got ",
                 in.describe(), " and ", out.describe());
        g_->begin();
        if (g_->size > 1) bytes_sent_ += in.nbytes();
        MT_NCCL_CHECK(what, ncclAllGather(in.raw_data(), out.raw_data(), bytes(in), ncclUint8,
                                          g_->comm, g_->stream));
    }
    void launch_reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op, const char* what) {
        check_tensor(in, what);
        check_tensor(out, what);
        MT_CHECK(in.dtype() == out.dtype() && in.dim() >= 1 && out.dim() == in.dim() &&
                     in.size(0) == out.size(0) * g_->size && in.numel() == out.numel() * g_->size,
                 "nccl ", what, ": in must hold ", g_->size, " times the rows of out, got ",
                 in.describe(), " and ", out.describe());
        const ncclDataType_t type = reduce_type(in.dtype(), op, what);
        g_->begin();
        if (g_->size > 1) bytes_sent_ += in.nbytes();
        MT_NCCL_CHECK(
            what, ncclReduceScatter(in.raw_data(), out.raw_data(), static_cast<size_t>(out.numel()),
                                    type, nccl_op(op), g_->comm, g_->stream));
    }
    // A request for what was just enqueued.
    std::unique_ptr<CommRequest> launched(std::vector<Tensor> keep) {
        auto batch = std::make_shared<Batch>();
        g_->record(*batch);
        return std::make_unique<NcclRequest>(g_, std::move(batch), std::move(keep));
    }

    std::shared_ptr<Group> g_;
    int64_t bytes_sent_ = 0;
};

void NcclCommunicator::all_to_all(const Tensor& in, std::span<const int64_t> send_rows, Tensor& out,
                                  std::span<const int64_t> recv_rows) {
    const char* what = "all_to_all";
    check_tensor(in, what);
    check_tensor(out, what);
    const int n = g_->size;
    MT_CHECK(static_cast<int>(send_rows.size()) == n && static_cast<int>(recv_rows.size()) == n,
             "nccl all_to_all: needs ", n, " send and receive counts, got ", send_rows.size(),
             " and ", recv_rows.size());
    MT_CHECK(in.dtype() == out.dtype() && in.dim() >= 1 && out.dim() == in.dim(),
             "nccl all_to_all: ", in.describe(), " and ", out.describe(), " do not match");
    int64_t row = dtype_size(in.dtype());
    for (int64_t d = 1; d < in.dim(); ++d) {
        MT_CHECK(in.size(d) == out.size(d), "nccl all_to_all: rows of ", in.describe(), " and ",
                 out.describe(), " differ");
        row *= in.size(d);
    }
    const int64_t sent = std::accumulate(send_rows.begin(), send_rows.end(), int64_t{0});
    const int64_t received = std::accumulate(recv_rows.begin(), recv_rows.end(), int64_t{0});
    MT_CHECK(sent == in.size(0) && received == out.size(0), "nccl all_to_all: counts add up to ",
             sent, " rows sent and ", received, " received, but the tensors are ", in.describe(),
             " and ", out.describe());
    g_->begin();
    auto* src = static_cast<char*>(in.raw_data());
    auto* dst = static_cast<char*>(out.raw_data());
    MT_NCCL_CHECK(what, ncclGroupStart());
    for (int r = 0; r < n; ++r) {
        MT_CHECK(send_rows[r] >= 0 && recv_rows[r] >= 0, "nccl all_to_all: negative count");
        const size_t out_bytes = static_cast<size_t>(send_rows[r] * row);
        const size_t in_bytes = static_cast<size_t>(recv_rows[r] * row);
        if (r == g_->rank) {
            MT_CHECK(out_bytes == in_bytes, "nccl all_to_all: rank ", r, " sends itself ",
                     send_rows[r], " rows but expects ", recv_rows[r]);
            if (out_bytes)
                MT_NCCL_CUDA_CHECK(what, cudaMemcpyAsync(dst, src, out_bytes,
                                                         cudaMemcpyDeviceToDevice, g_->stream));
        } else {
            if (out_bytes)
                MT_NCCL_CHECK(what, ncclSend(src, out_bytes, ncclUint8, r, g_->comm, g_->stream));
            if (in_bytes)
                MT_NCCL_CHECK(what, ncclRecv(dst, in_bytes, ncclUint8, r, g_->comm, g_->stream));
            bytes_sent_ += static_cast<int64_t>(out_bytes);
        }
        src += out_bytes;
        dst += in_bytes;
    }
    MT_NCCL_CHECK(what, ncclGroupEnd());
    g_->synchronize(what);
}

// This rank's index among the ranks on its host, from the host names of every rank.
int local_rank(Communicator& world) {
    constexpr int64_t kName = 256;
    Tensor mine = Tensor::zeros({1, kName}, DType::u8);
    gethostname(reinterpret_cast<char*>(mine.data<uint8_t>()), kName - 1);
    Tensor all = Tensor::empty({world.size(), kName}, DType::u8);
    world.all_gather(mine, all);
    int local = 0;
    for (int r = 0; r < world.rank(); ++r)
        if (std::memcmp(all.data<uint8_t>() + r * kName, mine.data<uint8_t>(), kName) == 0) ++local;
    return local;
}

}  // namespace

std::unique_ptr<Communicator> make_nccl_world(std::unique_ptr<Communicator> bootstrap) {
    MT_CHECK(bootstrap, "nccl: no bootstrap communicator");
    std::shared_ptr<Communicator> world(std::move(bootstrap));
    int devices = 0;
    const cudaError_t counted = cudaGetDeviceCount(&devices);
    MT_CHECK(counted == cudaSuccess && devices > 0, "nccl: rank ", world->rank(),
             " sees no CUDA device (", cudaGetErrorString(counted),
             "); run CPU ranks with the mpi communicator");
    // One GPU per rank: NCCL refuses two ranks of one communicator on the same device.
    const int local = local_rank(*world);
    MT_CHECK(local < devices, "nccl: rank ", world->rank(), " is local rank ", local,
             " on its host, which has only ", devices, " visible GPUs (one GPU per rank)");
    MT_NCCL_CUDA_CHECK("setup", cudaSetDevice(local));

    Tensor id = Tensor::zeros({static_cast<int64_t>(sizeof(ncclUniqueId))}, DType::u8);
    ncclUniqueId unique{};
    if (world->rank() == 0) {
        MT_NCCL_CHECK("setup", ncclGetUniqueId(&unique));
        std::memcpy(id.raw_data(), &unique, sizeof unique);
    }
    world->broadcast(id, 0);
    std::memcpy(&unique, id.raw_data(), sizeof unique);
    ncclComm_t comm = nullptr;
    MT_NCCL_CHECK("setup", ncclCommInitRank(&comm, world->size(), unique, world->rank()));
    try {
        return std::make_unique<NcclCommunicator>(std::make_shared<Group>(comm, local, world));
    } catch (...) {
        ncclCommDestroy(comm);
        throw;
    }
}

}  // namespace mt::plugins::nccl
