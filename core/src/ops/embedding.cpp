// CPU traversal of the embedding gather (rows in parallel) and scatter-add (serial over tokens,
// so repeated ids add in a fixed order).
#include "mt/ops/embedding.h"

#include <cstring>
#include <vector>

#include "op_support.h"

namespace mt::ops {

using detail::check_float;
using detail::check_float_shape;
using detail::in_t;
using detail::kParallelMin;
using detail::out_t;
using detail::with_float;

namespace {

// ids as int64, checked against the vocabulary (before any parallel loop).
std::vector<int64_t> token_ids(const char* op, const Tensor& ids, int64_t vocab) {
    MT_CHECK(ids.defined() && (ids.dtype() == DType::i64 || ids.dtype() == DType::i32), op,
             ": ids must be i64 or i32, got ", ids.describe());
    MT_CHECK(ids.device().type == DeviceType::cpu && ids.is_contiguous(), op,
             ": ids must be a contiguous CPU tensor, got ", ids.describe());
    std::vector<int64_t> out(ids.numel());
    for (size_t i = 0; i < out.size(); ++i) {
        out[i] = ids.dtype() == DType::i64 ? ids.data<int64_t>()[i] : ids.data<int32_t>()[i];
        MT_CHECK(out[i] >= 0 && out[i] < vocab, op, ": id ", out[i], " at ", i,
                 " is outside the table's rows [0, ", vocab, ")");
    }
    return out;
}

Shape rows_shape(const Tensor& ids, int64_t hidden) {
    Shape s = ids.shape();
    s.push_back(hidden);
    return s;
}

}  // namespace

void embedding_forward(const Tensor& table, const Tensor& ids, Tensor& y) {
    const char* op = "embedding_forward";
    check_float(op, "table", table);
    MT_CHECK(table.dim() == 2, op, ": table must be (V, H), got ", table.describe());
    const int64_t hidden = table.size(1);
    std::vector<int64_t> id = token_ids(op, ids, table.size(0));
    check_float_shape(op, "y", y, rows_shape(ids, hidden), table.dtype());
    const int64_t n = int64_t(id.size());
    const size_t row_bytes = size_t(hidden) * size_t(dtype_size(table.dtype()));
    const char* src = static_cast<const char*>(table.raw_data());
    char* dst = static_cast<char*>(y.raw_data());
#pragma omp parallel for schedule(static) if (n * hidden >= kParallelMin)
    for (int64_t i = 0; i < n; ++i)
        std::memcpy(dst + i * row_bytes, src + id[i] * row_bytes, row_bytes);
}

void embedding_backward(const Tensor& dy, const Tensor& ids, Tensor& dtable) {
    const char* op = "embedding_backward";
    check_float(op, "dtable", dtable);
    MT_CHECK(dtable.dim() == 2, op, ": dtable must be (V, H), got ", dtable.describe());
    const int64_t hidden = dtable.size(1);
    std::vector<int64_t> id = token_ids(op, ids, dtable.size(0));
    check_float_shape(op, "dy", dy, rows_shape(ids, hidden), dtable.dtype());
    with_float(dtable.dtype(), [&](auto t) {
        using T = decltype(t);
        const T* g = in_t<T>(dy);
        T* d = out_t<T>(dtable);
        for (size_t i = 0; i < id.size(); ++i) {
            T* row = d + id[i] * hidden;
            const T* gi = g + int64_t(i) * hidden;
            for (int64_t j = 0; j < hidden; ++j) row[j] += gi[j];
        }
    });
}

}  // namespace mt::ops
