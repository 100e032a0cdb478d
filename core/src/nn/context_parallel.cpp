#include "mt/nn/context_parallel.h"

#include <cstring>
#include <vector>

#include "mt/error.h"

namespace mt::nn {

Tensor context_parallel_slice(const ContextParallel& cp, const Tensor& t, int64_t dim) {
    if (!cp.active()) return t;
    MT_CHECK(t.device().type == DeviceType::cpu && dim >= 0 && dim < t.dim(),
             "context parallelism: cannot split ", t.describe(), " along dim ", dim);
    const int64_t length = t.size(dim), chunks = 2 * cp.size();
    MT_CHECK(length % chunks == 0, "--context-parallel-size ", cp.size(), ": the sequence (",
             length, ") must be a multiple of 2 x the context-parallel size (", chunks, ")");
    const int64_t chunk = length / chunks;
    const Tensor whole = t.contiguous();
    Shape shape = whole.shape();
    shape[size_t(dim)] = 2 * chunk;
    Tensor out = Tensor::empty(shape, whole.dtype());
    // Rows of `outer` blocks, each a run of `chunk` slices of `inner` bytes per chunk.
    int64_t outer = 1, inner = dtype_size(whole.dtype());
    for (int64_t d = 0; d < dim; ++d) outer *= shape[size_t(d)];
    for (int64_t d = dim + 1; d < whole.dim(); ++d) inner *= shape[size_t(d)];
    const auto* from = static_cast<const char*>(whole.raw_data());
    auto* to = static_cast<char*>(out.raw_data());
    const int64_t starts[2] = {cp.first_chunk_start(2 * chunk), cp.second_chunk_start(2 * chunk)};
    for (int64_t o = 0; o < outer; ++o)
        for (int half = 0; half < 2; ++half)
            std::memcpy(to + (o * 2 * chunk + half * chunk) * inner,
                        from + (o * length + starts[half]) * inner, size_t(chunk * inner));
    return out;
}

Tensor context_parallel_positions(const ContextParallel& cp, int64_t batch, int64_t local_length) {
    std::vector<int64_t> positions(size_t(batch * local_length));
    const int64_t chunk = local_length / 2;
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t t = 0; t < local_length; ++t)
            positions[size_t(b * local_length + t)] =
                (t < chunk ? cp.first_chunk_start(local_length)
                           : cp.second_chunk_start(local_length) - chunk) +
                t;
    return host_tensor(std::move(positions), {batch, local_length});
}

}  // namespace mt::nn
