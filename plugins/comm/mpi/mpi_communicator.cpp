// Communicator on MPI: each operation checks its tensors (contiguous, CPU, shapes agreeing),
// maps the dtype to an MPI datatype, and runs the matching MPI call with errors returned (not
// fatal) so they surface as mt::Error. ReduceOp::avg is a sum divided by the group size.
#include "mpi_communicator.h"

#include <algorithm>
#include <climits>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "mpi_environment.h"
#include "mt/kernels/bf16.h"

namespace mt::plugins::mpi {

namespace {

// Datatype for moving elements of any dtype (halves and bools as their bits).
MPI_Datatype transfer_type(DType dtype) {
    switch (dtype) {
        case DType::f32:
            return MPI_FLOAT;
        case DType::f64:
            return MPI_DOUBLE;
        case DType::i8:
            return MPI_INT8_T;
        case DType::i16:
            return MPI_INT16_T;
        case DType::i32:
            return MPI_INT32_T;
        case DType::i64:
            return MPI_INT64_T;
        case DType::u8:
        case DType::boolean:
            return MPI_UINT8_T;
        case DType::u16:
        case DType::f16:
        case DType::bf16:
            return MPI_UINT16_T;
    }
    MT_FAIL("mpi: unknown dtype ", static_cast<int>(dtype));
}

bool is_float(DType dtype) {
    return dtype == DType::f32 || dtype == DType::f64;
}

bool is_half(DType dtype) {
    return dtype == DType::bf16 || dtype == DType::f16;
}

float half_value(DType dtype, uint16_t bits) {
    return dtype == DType::bf16 ? k::bf16_to_float(bits) : half_to_float(bits);
}
uint16_t half_bits(DType dtype, float value) {
    return dtype == DType::bf16 ? k::float_to_bf16(value) : float_to_half(value);
}

// Datatype for reducing (halves as their bits, reduced by half_reduce_op); avg of integers is
// not exact.
MPI_Datatype reduce_type(DType dtype, ReduceOp op, const char* what) {
    MT_CHECK(dtype == DType::f32 || dtype == DType::f64 || dtype == DType::i32 ||
                 dtype == DType::i64 || is_half(dtype),
             "mpi ", what, ": reductions take f32, f64, bf16, f16, i32 or i64, not ",
             dtype_name(dtype));
    MT_CHECK(op != ReduceOp::avg || is_float(dtype) || is_half(dtype), "mpi ", what,
             ": avg of integers is refused (it would truncate); reduce with sum and divide");
    return transfer_type(dtype);
}

// MPI has no bf16 / f16 arithmetic: each pair of elements is combined in f32 and rounded back,
// as NCCL reduces halves.
template <DType D, ReduceOp O>
void half_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
    const auto* a = static_cast<const uint16_t*>(in);
    auto* b = static_cast<uint16_t*>(inout);
    for (int i = 0; i < *len; ++i) {
        const float x = half_value(D, a[i]), y = half_value(D, b[i]);
        const float r = O == ReduceOp::max   ? std::max(x, y)
                        : O == ReduceOp::min ? std::min(x, y)
                                             : x + y;
        b[i] = half_bits(D, r);
    }
}

template <DType D>
MPI_User_function* half_reduce_function(ReduceOp op) {
    switch (op) {
        case ReduceOp::max:
            return half_reduce<D, ReduceOp::max>;
        case ReduceOp::min:
            return half_reduce<D, ReduceOp::min>;
        default:  // sum, and avg's sum
            return half_reduce<D, ReduceOp::sum>;
    }
}

// The user op for halves of `dtype`, created once per (dtype, op) and kept until MPI ends.
MPI_Op half_reduce_op(DType dtype, ReduceOp op) {
    static std::mutex lock;
    static std::map<std::pair<DType, ReduceOp>, MPI_Op> ops;
    const std::lock_guard<std::mutex> guard(lock);
    auto [it, created] = ops.try_emplace({dtype, op == ReduceOp::avg ? ReduceOp::sum : op});
    if (created) {
        MPI_User_function* fn = dtype == DType::bf16 ? half_reduce_function<DType::bf16>(op)
                                                     : half_reduce_function<DType::f16>(op);
        MT_MPI_CHECK("reduce", MPI_Op_create(fn, /*commute=*/1, &it->second));
    }
    return it->second;
}

MPI_Op mpi_op(DType dtype, ReduceOp op) {
    if (is_half(dtype)) return half_reduce_op(dtype, op);
    switch (op) {
        case ReduceOp::sum:
        case ReduceOp::avg:
            return MPI_SUM;
        case ReduceOp::max:
            return MPI_MAX;
        case ReduceOp::min:
            return MPI_MIN;
    }
    MT_FAIL("mpi: unknown reduce op ", static_cast<int>(op));
}

// The element count of an MPI call: MPI counts are int (Open MPI 4 has no large-count forms).
int count_of(int64_t n, const char* what) {
    MT_CHECK(n <= INT_MAX, "mpi ", what, ": ", n, " elements exceed MPI's int count (", INT_MAX,
             "); split the tensor");
    return static_cast<int>(n);
}

void check_tensor(const Tensor& t, const char* what) {
    MT_CHECK(t.defined(), "mpi ", what, ": undefined tensor");
    MT_CHECK(t.device().type == DeviceType::cpu, "mpi ", what,
             ": takes CPU tensors (the nccl communicator moves device tensors), got ",
             t.describe());
    MT_CHECK(t.is_contiguous(), "mpi ", what, ": tensors must be contiguous, got ", t.describe());
}

// Divides every element of a float tensor by n (the second half of avg).
void divide(Tensor& t, int n) {
    if (is_half(t.dtype())) {
        auto* p = static_cast<uint16_t*>(t.raw_data());
        for (int64_t i = 0, e = t.numel(); i < e; ++i)
            p[i] = half_bits(t.dtype(), half_value(t.dtype(), p[i]) / static_cast<float>(n));
    } else if (t.dtype() == DType::f32) {
        float* p = t.data<float>();
        for (int64_t i = 0, e = t.numel(); i < e; ++i) p[i] /= static_cast<float>(n);
    } else {
        double* p = t.data<double>();
        for (int64_t i = 0, e = t.numel(); i < e; ++i) p[i] /= n;
    }
}

// A committed contiguous datatype of `elements` items, freed with the object.
class RowType {
  public:
    RowType(int elements, MPI_Datatype element) {
        MT_MPI_CHECK("all_to_all", MPI_Type_contiguous(elements, element, &type_));
        MT_MPI_CHECK("all_to_all", MPI_Type_commit(&type_));
    }
    ~RowType() { MPI_Type_free(&type_); }
    RowType(const RowType&) = delete;
    RowType& operator=(const RowType&) = delete;
    MPI_Datatype get() const { return type_; }

  private:
    MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

// The buffers of requests given up while unwinding from an error (see ~MpiRequest).
std::vector<std::vector<Tensor>>& abandoned_buffers() {
    static auto* buffers = new std::vector<std::vector<Tensor>>();  // never freed
    return *buffers;
}

// An MPI request with what must happen after it (avg's division, a receive's size check),
// holding the tensors so their memory outlives the transfer, and the communicator handle so
// that stays valid until the request is finished.
class MpiRequest final : public CommRequest {
  public:
    MpiRequest(std::shared_ptr<CommHandle> comm, std::string what, std::vector<Tensor> keep,
               std::function<void(MPI_Status&)> after)
        : comm_(std::move(comm)),
          what_(std::move(what)),
          keep_(std::move(keep)),
          after_(std::move(after)) {}
    ~MpiRequest() override {
        // Unwaited: MPI may still read or write the tensors, so finish it (errors have no one
        // to go to here).
        if (!active_) return;
        if (std::uncaught_exceptions() > 0) {
            // Unwinding from an error: the peer may never match this (a pipeline stage waiting
            // on a failed one), and waiting would hang before the error reaches the abort. MPI
            // may still use the tensors: they live as long as the process, which the error ends.
            abandoned_buffers().push_back(std::move(keep_));
            if (!finalized()) MPI_Request_free(&request_);
            comm_->finished();
            return;
        }
        if (!finalized()) MPI_Wait(&request_, MPI_STATUS_IGNORE);
        comm_->finished();
    }
    MpiRequest(const MpiRequest&) = delete;
    MpiRequest& operator=(const MpiRequest&) = delete;

    MPI_Request* handle() { return &request_; }
    // Called once the MPI_I* call that filled handle() succeeded.
    void started() {
        comm_->started();
        active_ = true;
    }

    void wait() override {
        if (!active_) return;
        active_ = false;
        MPI_Status status;
        const int rc = MPI_Wait(&request_, &status);
        comm_->finished();
        MT_MPI_CHECK(what_.c_str(), rc);
        if (after_) after_(status);
        keep_.clear();
    }

  private:
    std::shared_ptr<CommHandle> comm_;
    std::string what_;
    std::vector<Tensor> keep_;
    std::function<void(MPI_Status&)> after_;
    MPI_Request request_ = MPI_REQUEST_NULL;
    bool active_ = false;
};

class MpiCommunicator final : public Communicator {
  public:
    // Takes ownership of `comm` (freed with this object and its requests, or at exit).
    explicit MpiCommunicator(MPI_Comm comm) : handle_(std::make_shared<CommHandle>(comm)) {
        MT_MPI_CHECK("setup", MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
        MT_MPI_CHECK("setup", MPI_Comm_rank(comm, &rank_));
        MT_MPI_CHECK("setup", MPI_Comm_size(comm, &size_));
        int* tag_ub = nullptr;
        int found = 0;
        MT_MPI_CHECK("setup", MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &found));
        if (found && tag_ub) tag_ub_ = *tag_ub;
    }

    std::string_view name() const override { return "mpi"; }
    int rank() const override { return rank_; }
    int size() const override { return size_; }

    void all_reduce(Tensor& t, ReduceOp op) override {
        const MPI_Datatype type = check_all_reduce(t, op, "all_reduce");
        MT_MPI_CHECK("all_reduce",
                     MPI_Allreduce(MPI_IN_PLACE, t.raw_data(), count_of(t.numel(), "all_reduce"),
                                   type, mpi_op(t.dtype(), op), comm()));
        if (op == ReduceOp::avg) divide(t, size_);
    }

    void all_gather(const Tensor& in, Tensor& out) override {
        const int n = check_all_gather(in, out, "all_gather");
        MT_MPI_CHECK("all_gather",
                     MPI_Allgather(gather_send(in, out), n, transfer_type(in.dtype()),
                                   out.raw_data(), n, transfer_type(in.dtype()), comm()));
    }

    void reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) override {
        const MPI_Datatype type = check_reduce_scatter(in, out, op, "reduce_scatter");
        MT_MPI_CHECK("reduce_scatter", MPI_Reduce_scatter_block(in.raw_data(), out.raw_data(),
                                                                static_cast<int>(out.numel()), type,
                                                                mpi_op(in.dtype(), op), comm()));
        if (op == ReduceOp::avg) divide(out, size_);
    }

    void broadcast(Tensor& t, int root) override {
        check_tensor(t, "broadcast");
        check_rank(root, "broadcast root");
        if (rank_ == root && size_ > 1) bytes_sent_ += t.nbytes();  // a lone rank sends nothing
        MT_MPI_CHECK("broadcast", MPI_Bcast(t.raw_data(), count_of(t.numel(), "broadcast"),
                                            transfer_type(t.dtype()), root, comm()));
    }

    void all_to_all(const Tensor& in, std::span<const int64_t> send_rows, Tensor& out,
                    std::span<const int64_t> recv_rows) override;

    void send(const Tensor& t, int dst) override {
        check_p2p(t, dst, 0, "send");
        MT_CHECK(dst != rank_, "mpi send: rank ", rank_,
                 " sends to itself, which blocks forever; use isend/irecv");
        bytes_sent_ += t.nbytes();
        MT_MPI_CHECK("send", MPI_Send(t.raw_data(), count_of(t.numel(), "send"),
                                      transfer_type(t.dtype()), dst, 0, comm()));
    }

    void recv(Tensor& t, int src) override {
        check_p2p(t, src, 0, "recv");
        MT_CHECK(src != rank_, "mpi recv: rank ", rank_,
                 " receives from itself, which blocks forever; use isend/irecv");
        MPI_Status status;
        MT_MPI_CHECK("recv", MPI_Recv(t.raw_data(), count_of(t.numel(), "recv"),
                                      transfer_type(t.dtype()), src, 0, comm(), &status));
        check_received(status, t, src, "recv");
    }

    void barrier() override { MT_MPI_CHECK("barrier", MPI_Barrier(comm())); }

    std::unique_ptr<CommRequest> isend(const Tensor& t, int dst, int tag) override {
        check_p2p(t, dst, tag, "isend");
        auto request = make_request("isend", {t});
        MT_MPI_CHECK("isend",
                     MPI_Isend(t.raw_data(), count_of(t.numel(), "isend"), transfer_type(t.dtype()),
                               dst, tag, comm(), request->handle()));
        request->started();
        bytes_sent_ += t.nbytes();
        return request;
    }

    std::unique_ptr<CommRequest> irecv(Tensor& t, int src, int tag) override {
        check_p2p(t, src, tag, "irecv");
        auto request = make_request("irecv", {t}, [t, src](MPI_Status& status) {
            check_received(status, t, src, "irecv");
        });
        MT_MPI_CHECK("irecv",
                     MPI_Irecv(t.raw_data(), count_of(t.numel(), "irecv"), transfer_type(t.dtype()),
                               src, tag, comm(), request->handle()));
        request->started();
        return request;
    }

    std::unique_ptr<CommRequest> iall_reduce(Tensor& t, ReduceOp op) override {
        const MPI_Datatype type = check_all_reduce(t, op, "iall_reduce");
        auto request = make_request("iall_reduce", {t}, after_avg(t, op));
        MT_MPI_CHECK("iall_reduce",
                     MPI_Iallreduce(MPI_IN_PLACE, t.raw_data(), count_of(t.numel(), "iall_reduce"),
                                    type, mpi_op(t.dtype(), op), comm(), request->handle()));
        request->started();
        return request;
    }

    std::unique_ptr<CommRequest> ireduce_scatter(const Tensor& in, Tensor& out,
                                                 ReduceOp op) override {
        const MPI_Datatype type = check_reduce_scatter(in, out, op, "ireduce_scatter");
        auto request = make_request("ireduce_scatter", {in, out}, after_avg(out, op));
        MT_MPI_CHECK(
            "ireduce_scatter",
            MPI_Ireduce_scatter_block(in.raw_data(), out.raw_data(), static_cast<int>(out.numel()),
                                      type, mpi_op(in.dtype(), op), comm(), request->handle()));
        request->started();
        return request;
    }

    std::unique_ptr<CommRequest> iall_gather(const Tensor& in, Tensor& out) override {
        const int n = check_all_gather(in, out, "iall_gather");
        auto request = make_request("iall_gather", {in, out});
        MT_MPI_CHECK(
            "iall_gather",
            MPI_Iallgather(gather_send(in, out), n, transfer_type(in.dtype()), out.raw_data(), n,
                           transfer_type(in.dtype()), comm(), request->handle()));
        request->started();
        return request;
    }

    std::unique_ptr<Communicator> split(int color, int key) override {
        // MPI_UNDEFINED (negative) would leave this rank without a group; the interface gives
        // every rank one.
        MT_CHECK(color >= 0, "mpi split: color must be non-negative, got ", color);
        MPI_Comm child = MPI_COMM_NULL;
        MT_MPI_CHECK("split", MPI_Comm_split(comm(), color, key, &child));
        return std::make_unique<MpiCommunicator>(child);  // which frees it if it throws
    }

    void abort(int exit_code) override {
        // A job of one process has nobody to stop: the caller's own error path ends it, as
        // with the local communicator. Otherwise the whole job goes, whatever this group is.
        int world = 1;
        MT_MPI_CHECK("abort", MPI_Comm_size(MPI_COMM_WORLD, &world));
        if (world == 1) return;
        MPI_Abort(MPI_COMM_WORLD, exit_code);
        MT_FAIL("mpi abort: MPI_Abort returned");
    }

    int64_t bytes_sent() const override { return bytes_sent_; }

  private:
    void check_rank(int peer, const char* what) const {
        MT_CHECK(peer >= 0 && peer < size_, "mpi ", what, ": rank ", peer,
                 " is not in this group of ", size_);
    }

    void check_p2p(const Tensor& t, int peer, int tag, const char* what) const {
        check_tensor(t, what);
        check_rank(peer, what);
        MT_CHECK(tag >= 0 && tag <= tag_ub_, "mpi ", what, ": tag ", tag, " outside [0, ", tag_ub_,
                 "]");
    }

    // A receive whose message was shorter than the tensor (a longer one fails in MPI itself
    // with MPI_ERR_TRUNCATE).
    static void check_received(MPI_Status& status, const Tensor& t, int src, const char* what) {
        int count = 0;
        MT_MPI_CHECK(what, MPI_Get_count(&status, transfer_type(t.dtype()), &count));
        MT_CHECK(count == t.numel(), "mpi ", what, ": rank ", src, " sent ", count,
                 " elements into ", t.describe(), " (", t.numel(), " elements)");
    }

    MPI_Datatype check_all_reduce(Tensor& t, ReduceOp op, const char* what) {
        check_tensor(t, what);
        const MPI_Datatype type = reduce_type(t.dtype(), op, what);
        count_of(t.numel(), what);
        if (size_ > 1) bytes_sent_ += t.nbytes();  // a lone rank sends nothing
        return type;
    }

    int check_all_gather(const Tensor& in, Tensor& out, const char* what) {
        check_tensor(in, what);
        check_tensor(out, what);
        MT_CHECK(in.dtype() == out.dtype() && in.dim() >= 1 && out.dim() == in.dim() &&
                     out.size(0) == in.size(0) * size_ && out.numel() == in.numel() * size_,
                 "mpi ", what, ": out must hold ", size_, " times the rows of in, got ",
                 in.describe(), " and ", out.describe());
        const int n = count_of(in.numel(), what);
        if (size_ > 1) bytes_sent_ += in.nbytes();
        return n;
    }

    MPI_Datatype check_reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op,
                                      const char* what) {
        check_tensor(in, what);
        check_tensor(out, what);
        MT_CHECK(in.dtype() == out.dtype() && in.dim() >= 1 && out.dim() == in.dim() &&
                     in.size(0) == out.size(0) * size_ && in.numel() == out.numel() * size_,
                 "mpi ", what, ": in must hold ", size_, " times the rows of out, got ",
                 in.describe(), " and ", out.describe());
        MT_CHECK(in.raw_data() != out.raw_data() || in.numel() == 0, "mpi ", what,
                 ": in and out must not share memory");
        const MPI_Datatype type = reduce_type(in.dtype(), op, what);
        count_of(in.numel(), what);
        if (size_ > 1) bytes_sent_ += in.nbytes();
        return type;
    }

    // MPI_IN_PLACE when `in` already sits at this rank's slot of `out`.
    const void* gather_send(const Tensor& in, const Tensor& out) const {
        const char* slot = static_cast<const char*>(out.raw_data()) + rank_ * in.nbytes();
        return in.raw_data() == slot && in.numel() > 0 ? MPI_IN_PLACE : in.raw_data();
    }

    std::function<void(MPI_Status&)> after_avg(const Tensor& t, ReduceOp op) const {
        if (op != ReduceOp::avg) return nullptr;
        return [target = Tensor(t), n = size_](MPI_Status&) mutable { divide(target, n); };
    }

    MPI_Comm comm() const { return handle_->get(); }
    // A request on this communicator, started by the caller's MPI_I* call.
    std::unique_ptr<MpiRequest> make_request(const char* what, std::vector<Tensor> keep,
                                             std::function<void(MPI_Status&)> after = nullptr) {
        return std::make_unique<MpiRequest>(handle_, what, std::move(keep), std::move(after));
    }

    std::shared_ptr<CommHandle> handle_;
    int rank_ = 0, size_ = 1;
    int tag_ub_ = 32767;  // the least MPI guarantees
    int64_t bytes_sent_ = 0;
};

void MpiCommunicator::all_to_all(const Tensor& in, std::span<const int64_t> send_rows, Tensor& out,
                                 std::span<const int64_t> recv_rows) {
    const char* what = "all_to_all";
    check_tensor(in, what);
    check_tensor(out, what);
    MT_CHECK(
        static_cast<int>(send_rows.size()) == size_ && static_cast<int>(recv_rows.size()) == size_,
        "mpi all_to_all: needs ", size_, " send and receive counts, got ", send_rows.size(),
        " and ", recv_rows.size());
    MT_CHECK(in.dtype() == out.dtype() && in.dim() >= 1 && out.dim() == in.dim(),
             "mpi all_to_all: ", in.describe(), " and ", out.describe(), " do not match");
    int64_t row = 1;
    for (int64_t d = 1; d < in.dim(); ++d) {
        MT_CHECK(in.size(d) == out.size(d), "mpi all_to_all: rows of ", in.describe(), " and ",
                 out.describe(), " differ");
        row *= in.size(d);
    }
    const int64_t sent = std::accumulate(send_rows.begin(), send_rows.end(), int64_t{0});
    const int64_t received = std::accumulate(recv_rows.begin(), recv_rows.end(), int64_t{0});
    MT_CHECK(sent == in.size(0) && received == out.size(0), "mpi all_to_all: counts add up to ",
             sent, " rows sent and ", received, " received, but the tensors are ", in.describe(),
             " and ", out.describe());
    // Counts and displacements in rows of a contiguous row datatype, so only a row count (not
    // an element offset) has to fit MPI's int.
    std::vector<int> send_counts(size_), send_displs(size_), recv_counts(size_), recv_displs(size_);
    int64_t send_at = 0, recv_at = 0;
    for (int r = 0; r < size_; ++r) {
        MT_CHECK(send_rows[r] >= 0 && recv_rows[r] >= 0, "mpi all_to_all: negative count");
        send_counts[r] = count_of(send_rows[r], what);
        recv_counts[r] = count_of(recv_rows[r], what);
        send_displs[r] = count_of(send_at, what);
        recv_displs[r] = count_of(recv_at, what);
        send_at += send_rows[r];
        recv_at += recv_rows[r];
        if (r != rank_) bytes_sent_ += send_rows[r] * row * dtype_size(in.dtype());
    }
    if (row == 0) return;  // nothing to move, and MPI refuses an empty datatype
    const RowType row_type(count_of(row, what), transfer_type(in.dtype()));
    MT_MPI_CHECK(what, MPI_Alltoallv(in.raw_data(), send_counts.data(), send_displs.data(),
                                     row_type.get(), out.raw_data(), recv_counts.data(),
                                     recv_displs.data(), row_type.get(), comm()));
}

}  // namespace

std::unique_ptr<Communicator> make_mpi_world() {
    ensure_initialized();
    MPI_Comm world = MPI_COMM_NULL;
    MT_MPI_CHECK("world", MPI_Comm_dup(MPI_COMM_WORLD, &world));
    return std::make_unique<MpiCommunicator>(world);  // which frees it if it throws
}

}  // namespace mt::plugins::mpi
