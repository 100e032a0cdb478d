// CPU traversal of the embedding gather (rows in parallel) and scatter-add (serial over tokens,
// so repeated ids add in a fixed order).
#include "cpu_backend.h"

#include <cstring>
#include <vector>

#include "half_as_float.h"
#include "op_support.h"

namespace mt::cpu {

using detail::check_any_float;
using detail::check_float;
using detail::check_float_shape;
using detail::in_t;
using detail::kParallelMin;
using detail::out_t;
using detail::with_float;

namespace {

// The table row of each id, checked against the vocabulary (before any parallel loop). A piece
// of a vocab-parallel table holds rows [start, start + vocab): other ids get row -1 (a zero row,
// no gradient); a whole table (piece = false) must hold every id.
std::vector<int64_t> token_rows(const char* op, const Tensor& ids, int64_t vocab, int64_t start,
                                bool piece) {
    MT_CHECK(ids.defined() && (ids.dtype() == DType::i64 || ids.dtype() == DType::i32), op,
             ": ids must be i64 or i32, got ", ids.describe());
    MT_CHECK(ids.device().type == DeviceType::cpu && ids.is_contiguous(), op,
             ": ids must be a contiguous CPU tensor, got ", ids.describe());
    std::vector<int64_t> out(ids.numel());
    for (size_t i = 0; i < out.size(); ++i) {
        const int64_t id =
            ids.dtype() == DType::i64 ? ids.data<int64_t>()[i] : ids.data<int32_t>()[i];
        const bool inside = id >= start && id < start + vocab;
        MT_CHECK(inside || (piece && id >= 0), op, ": id ", id, " at ", i,
                 " is outside the table's rows [0, ", vocab, ")");
        out[i] = inside ? id - start : -1;
    }
    return out;
}

Shape rows_shape(const Tensor& ids, int64_t hidden) {
    Shape s = ids.shape();
    s.push_back(hidden);
    return s;
}

void gather(const char* op, const Tensor& table, const Tensor& ids, int64_t start, bool piece,
            Tensor& y) {
    check_any_float(op, "table", table);
    MT_CHECK(table.dim() == 2, op, ": table must be (V, H), got ", table.describe());
    const int64_t hidden = table.size(1);
    std::vector<int64_t> id = token_rows(op, ids, table.size(0), start, piece);
    check_any_float(op, "y", y);
    MT_CHECK(y.dtype() == table.dtype() && y.shape() == rows_shape(ids, hidden), op, ": y must be ",
             dtype_name(table.dtype()), " ", shape_str(rows_shape(ids, hidden)), ", got ",
             y.describe());
    const int64_t n = int64_t(id.size());
    const size_t row_bytes = size_t(hidden) * size_t(dtype_size(table.dtype()));
    const char* src = static_cast<const char*>(table.raw_data());
    char* dst = static_cast<char*>(y.raw_data());
#pragma omp parallel for schedule(static) if (n * hidden >= kParallelMin)
    for (int64_t i = 0; i < n; ++i) {
        if (id[i] < 0)
            std::memset(dst + i * row_bytes, 0, row_bytes);
        else
            std::memcpy(dst + i * row_bytes, src + id[i] * row_bytes, row_bytes);
    }
}

void scatter_add(const char* op, const Tensor& dy, const Tensor& ids, int64_t start, bool piece,
                 Tensor& dtable) {
    check_float(op, "dtable", dtable);
    MT_CHECK(dtable.dim() == 2, op, ": dtable must be (V, H), got ", dtable.describe());
    const int64_t hidden = dtable.size(1);
    std::vector<int64_t> id = token_rows(op, ids, dtable.size(0), start, piece);
    check_float_shape(op, "dy", dy, rows_shape(ids, hidden), dtable.dtype());
    with_float(dtable.dtype(), [&](auto t) {
        using T = decltype(t);
        const T* g = in_t<T>(dy);
        T* d = out_t<T>(dtable);
        for (size_t i = 0; i < id.size(); ++i) {
            if (id[i] < 0) continue;
            T* row = d + id[i] * hidden;
            const T* gi = g + int64_t(i) * hidden;
            for (int64_t j = 0; j < hidden; ++j) row[j] += gi[j];
        }
    });
}

}  // namespace

void CpuBackend::embedding_forward(const Tensor& table, const Tensor& ids, Tensor& y) {
    gather("embedding_forward", table, ids, 0, false, y);
}

void CpuBackend::embedding_backward(const Tensor& dy, const Tensor& ids, Tensor& dtable) {
    if (any_half({&dy, &dtable})) {
        HalfAsFloat h;
        embedding_backward(h.in(dy), ids, h.inout(dtable));
        return h.finish();
    }
    scatter_add("embedding_backward", dy, ids, 0, false, dtable);
}

void CpuBackend::embedding_shard_forward(const Tensor& table, const Tensor& ids,
                                         int64_t vocab_start, Tensor& y) {
    gather("embedding_shard_forward", table, ids, vocab_start, true, y);
}

void CpuBackend::embedding_shard_backward(const Tensor& dy, const Tensor& ids, int64_t vocab_start,
                                          Tensor& dtable) {
    if (any_half({&dy, &dtable})) {
        HalfAsFloat h;
        embedding_shard_backward(h.in(dy), ids, vocab_start, h.inout(dtable));
        return h.finish();
    }
    scatter_add("embedding_shard_backward", dy, ids, vocab_start, true, dtable);
}

}  // namespace mt::cpu
