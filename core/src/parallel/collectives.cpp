// Gathers and scatters along any dimension on top of the dim-0 collectives: a tensor seen as
// (outer, size(dim), inner) is moved as `outer` blocks per rank, rearranged between rank-major
// buffers and dim-major tensors by one block-wise copy (memcpy per block, blocks in parallel).
#include "mt/parallel/collectives.h"

#include <algorithm>
#include <cstring>

namespace mt::parallel {

namespace {

// The (outer, size(dim), inner) view of a tensor around one dimension.
struct Around {
    int64_t dim = 0, outer = 1, extent = 0, inner = 1;
};

Around around(const Tensor& t, int64_t dim, const char* op) {
    MT_CHECK(t.defined() && t.dim() >= 1, op, ": needs a tensor with at least one dimension, got ",
             t.describe());
    MT_CHECK(t.device().type == DeviceType::cpu, op, ": rearranges CPU tensors, got ",
             t.describe());
    Around a;
    a.dim = dim < 0 ? dim + t.dim() : dim;
    MT_CHECK(a.dim >= 0 && a.dim < t.dim(), op, ": dimension ", dim, " out of range for ",
             t.describe());
    for (int64_t d = 0; d < a.dim; ++d) a.outer *= t.size(d);
    a.extent = t.size(a.dim);
    for (int64_t d = a.dim + 1; d < t.dim(); ++d) a.inner *= t.size(d);
    return a;
}

Around split_around(const Tensor& t, int64_t dim, int parts, const char* op) {
    Around a = around(t, dim, op);
    MT_CHECK(a.extent % parts == 0, op, ": dimension ", a.dim, " of ", t.describe(),
             " does not split into ", parts, " equal parts");
    return a;
}

Shape with_extent(Shape shape, int64_t dim, int64_t extent) {
    shape[dim] = extent;
    return shape;
}

// Copies n0 x n1 blocks of `block` bytes from src + i*s0 + j*s1 to dst + i*d0 + j*d1 (strides
// in bytes). Large copies split the blocks among the OpenMP threads.
void copy_blocks(const char* src, int64_t s0, int64_t s1, char* dst, int64_t d0, int64_t d1,
                 int64_t n0, int64_t n1, int64_t block) {
    const int64_t n = n0 * n1;
    if (n == 0 || block == 0) return;
    const bool parallel = n > 1 && n * block >= (int64_t(1) << 20);
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t k = 0; k < n; ++k) {
        const int64_t i = k / n1, j = k % n1;
        std::memcpy(dst + i * d0 + j * d1, src + i * s0 + j * s1, static_cast<size_t>(block));
    }
}

// (parts, outer, piece) rank-major -> (outer, parts, piece) dim-major, or back with swap.
void rank_major_to_dim_major(const Tensor& buffer, Tensor& out, int64_t outer, int64_t parts,
                             int64_t piece_bytes) {
    copy_blocks(static_cast<const char*>(buffer.raw_data()), outer * piece_bytes, piece_bytes,
                static_cast<char*>(out.raw_data()), piece_bytes, parts * piece_bytes, parts, outer,
                piece_bytes);
}
void dim_major_to_rank_major(const Tensor& in, Tensor& buffer, int64_t outer, int64_t parts,
                             int64_t piece_bytes) {
    copy_blocks(static_cast<const char*>(in.raw_data()), piece_bytes, parts * piece_bytes,
                static_cast<char*>(buffer.raw_data()), outer * piece_bytes, piece_bytes, parts,
                outer, piece_bytes);
}

}  // namespace

Tensor all_gather_along(Communicator& comm, const Tensor& in, int64_t dim) {
    const Around a = around(in, dim, "all_gather_along");
    const int64_t parts = comm.size(), piece = a.extent * a.inner;
    const int64_t piece_bytes = piece * dtype_size(in.dtype());
    Tensor result = Tensor::empty(with_extent(in.shape(), a.dim, a.extent * parts), in.dtype());
    // The collective writes rank-major; with dimensions before `dim` that needs a rearrangement
    // into the result, else it writes the result directly.
    const bool rearrange = a.outer > 1 && parts > 1;
    Tensor buffer = rearrange ? Tensor::empty({parts * a.outer, piece}, in.dtype())
                              : result.view({parts * a.outer, piece});
    comm.all_gather(in.contiguous().view({a.outer, piece}), buffer);
    if (rearrange) rank_major_to_dim_major(buffer, result, a.outer, parts, piece_bytes);
    return result;
}

Tensor reduce_scatter_along(Communicator& comm, const Tensor& in, int64_t dim, ReduceOp op) {
    const int parts = comm.size();
    const Around a = split_around(in, dim, parts, "reduce_scatter_along");
    const int64_t piece = a.extent / parts * a.inner;
    Tensor result = Tensor::empty(with_extent(in.shape(), a.dim, a.extent / parts), in.dtype());
    const Tensor contiguous = in.contiguous();
    Tensor source = contiguous.view({parts * a.outer, piece});
    if (a.outer > 1 && parts > 1) {  // the collective reads rank-major
        source = Tensor::empty({parts * a.outer, piece}, in.dtype());
        dim_major_to_rank_major(contiguous, source, a.outer, parts, piece * dtype_size(in.dtype()));
    }
    Tensor rows = result.view({a.outer, piece});
    comm.reduce_scatter(source, rows, op);
    return result;
}

Tensor split_along(const Communicator& comm, const Tensor& in, int64_t dim) {
    const int parts = comm.size();
    const Around a = split_around(in, dim, parts, "split_along");
    const int64_t extent = a.extent / parts;
    if (!in.is_contiguous())
        return in.slice(a.dim, comm.rank() * extent, (comm.rank() + 1) * extent).clone();
    Tensor out = Tensor::empty(with_extent(in.shape(), a.dim, extent), in.dtype());
    const int64_t es = dtype_size(in.dtype()), piece_bytes = extent * a.inner * es;
    const char* src = static_cast<const char*>(in.raw_data()) + comm.rank() * piece_bytes;
    copy_blocks(src, 0, parts * piece_bytes, static_cast<char*>(out.raw_data()), 0, piece_bytes, 1,
                a.outer, piece_bytes);
    return out;
}

std::vector<std::string> all_gather_bytes(Communicator& comm, std::string_view bytes) {
    Tensor size = Tensor::empty({1}, DType::i64);
    *size.data<int64_t>() = int64_t(bytes.size());
    Tensor sizes = Tensor::empty({comm.size()}, DType::i64);
    comm.all_gather(size, sizes);
    int64_t longest = 1;
    for (int r = 0; r < comm.size(); ++r) longest = std::max(longest, sizes.data<int64_t>()[r]);
    Tensor mine = Tensor::zeros({longest}, DType::u8);
    std::memcpy(mine.raw_data(), bytes.data(), bytes.size());
    Tensor all = Tensor::empty({comm.size() * longest}, DType::u8);
    comm.all_gather(mine, all);
    std::vector<std::string> out;
    for (int r = 0; r < comm.size(); ++r)
        out.emplace_back(static_cast<const char*>(all.raw_data()) + r * longest,
                         size_t(sizes.data<int64_t>()[r]));
    return out;
}

std::string broadcast_bytes(Communicator& comm, std::string bytes, int root) {
    Tensor size = Tensor::empty({1}, DType::i64);
    *size.data<int64_t>() = int64_t(bytes.size());
    comm.broadcast(size, root);
    bytes.resize(size_t(*size.data<int64_t>()));
    Tensor data = Tensor::empty({std::max<int64_t>(1, *size.data<int64_t>())}, DType::u8);
    if (comm.rank() == root) std::memcpy(data.raw_data(), bytes.data(), bytes.size());
    comm.broadcast(data, root);
    std::memcpy(bytes.data(), data.raw_data(), bytes.size());
    return bytes;
}

void all_reduce_values(Communicator& comm, std::vector<double>& values, ReduceOp op) {
    Tensor t = Tensor::from_blob(values.data(), {int64_t(values.size())}, DType::f64);
    comm.all_reduce(t, op);
}

}  // namespace mt::parallel
