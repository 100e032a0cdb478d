#include "permutation.h"

namespace mt::nn::detail {

std::vector<double> pack_routing(const Routing& r) {
    const int64_t N = r.tokens, E = r.experts;
    std::vector<double> packed(size_t(N * 2 * E));
    for (int64_t t = 0; t < N; ++t)
        for (int64_t e = 0; e < E; ++e) {
            packed[size_t(t * 2 * E + e)] = r.probs[size_t(t * E + e)];
            packed[size_t(t * 2 * E + E + e)] = r.map[size_t(t * E + e)];
        }
    return packed;
}

Permutation permute_by_expert(const double* packed, int64_t tokens, int64_t experts, int64_t first,
                              int64_t count) {
    Permutation p;
    p.per_expert.assign(size_t(count), 0);
    for (int64_t j = 0; j < count; ++j) {
        const int64_t e = first + j;
        for (int64_t t = 0; t < tokens; ++t)
            if (packed[t * 2 * experts + experts + e] != 0) {
                p.token.push_back(t);
                p.expert.push_back(e);
                p.prob.push_back(packed[t * 2 * experts + e]);
                ++p.per_expert[size_t(j)];
            }
    }
    return p;
}

std::vector<double> probs_per_token(Backend& backend, const Tensor& dprobs, const Tensor& index,
                                    const std::vector<int64_t>& experts, int64_t tokens,
                                    int64_t num_experts) {
    const Tensor values = backend.cast_to(dprobs, DType::f64).contiguous();
    const Tensor rows = index.contiguous();
    std::vector<double> out(size_t(tokens * num_experts), 0.0);
    for (int64_t i = 0; i < rows.numel(); ++i)
        out[size_t(rows.data<int64_t>()[i] * num_experts + experts[size_t(i)])] +=
            values.data<double>()[i];
    return out;
}

Tensor index_tensor(Backend& backend, std::vector<int64_t> index) {
    const int64_t n = int64_t(index.size());
    return backend.contiguous(host_tensor(std::move(index), {n}));
}

Tensor gather_rows(Backend& backend, const Tensor& x, const Tensor& index) {
    Tensor rows = backend.empty({index.numel(), x.size(1)}, x.dtype());
    if (index.numel() > 0) backend.embedding_forward(backend.contiguous(x), index, rows);
    return rows;
}

Tensor scatter_add_rows(Backend& backend, const Tensor& rows, const Tensor& index, int64_t n) {
    Tensor out = backend.zeros({n, rows.size(1)}, rows.dtype());
    if (index.numel() > 0) backend.embedding_backward(backend.contiguous(rows), index, out);
    return out;
}

}  // namespace mt::nn::detail

namespace mt::nn {

std::unique_ptr<TokenDispatcher> make_token_dispatcher(const MoeConfig& config, Backend& backend) {
    return config.dispatcher == DispatcherKind::alltoall
               ? detail::make_alltoall_dispatcher(config, backend)
               : detail::make_allgather_dispatcher(config, backend);
}

}  // namespace mt::nn
