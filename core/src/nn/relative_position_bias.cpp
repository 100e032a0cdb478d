// RelativePositionBias: the table lookup is an embedding lookup of each (query, key) pair's
// bucket, as megatron-core's nn.Embedding does it; this rank's heads are a column slice of it.
#include "mt/nn/relative_position_bias.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "mt/error.h"

namespace mt::nn {

int64_t relative_position_bucket(int64_t relative_position, bool bidirectional,
                                 const RelativePositionBuckets& buckets) {
    int64_t num_buckets = buckets.num_buckets, bucket = 0, distance = 0;
    if (bidirectional) {
        num_buckets /= 2;
        if (relative_position > 0) bucket += num_buckets;
        distance = std::llabs(relative_position);
    } else {
        distance = -std::min<int64_t>(relative_position, 0);
    }
    const int64_t max_exact = num_buckets / 2;
    if (distance < max_exact) return bucket + distance;
    // torch's float32 arithmetic: (log(d / max_exact) / log(max_distance / max_exact)) *
    // (num_buckets - max_exact), the second logarithm a Python double rounded to float32.
    const float ratio = float(distance) / float(max_exact);
    const auto scale = float(std::log(double(buckets.max_distance) / double(max_exact)));
    const auto large =
        max_exact + int64_t(std::log(ratio) / scale * float(num_buckets - max_exact));
    return bucket + std::min(large, num_buckets - 1);
}

RelativePositionBias::RelativePositionBias(const std::string& prefix, bool bidirectional,
                                           const RelativePositionBuckets& buckets, int64_t heads,
                                           DType dtype, Backend& backend, const TensorParallel& tp)
    : bidirectional_(bidirectional),
      buckets_(buckets),
      heads_(heads),
      local_heads_(heads / tp.size()),
      first_head_(tp.rank() * (heads / tp.size())),
      table_(make_parameter(backend, prefix + ".relative_attention_bias.weight",
                            {buckets.num_buckets, heads}, dtype, ShardSpec{}, true, tp)),
      backend_(&backend) {
    // A quarter of the buckets (half of each side's) for the encoder, half for the decoder give
    // one distance each; past those max_exact distances they grow logarithmically up to
    // max_distance.
    const int64_t exact_share = bidirectional ? 4 : 2;
    MT_CHECK(buckets.num_buckets >= exact_share,
             "--relative-attention-num-buckets must be at least ", exact_share, ", got ",
             buckets.num_buckets);
    const int64_t max_exact = buckets.num_buckets / exact_share;
    MT_CHECK(buckets.max_distance > max_exact, "--relative-attention-max-distance (",
             buckets.max_distance, ") must exceed ", max_exact,
             " (the distances with a bucket each, a quarter of "
             "--relative-attention-num-buckets for the encoder, half for the decoder)");
    MT_CHECK(heads % tp.size() == 0, "RelativePositionBias: ", heads, " heads over ", tp.size(),
             " tensor-parallel ranks");
    // Each rank's backward fills its heads' columns only.
    table_.grad_partial_over_tp = tp.active();
}

Tensor RelativePositionBias::bucket_ids(int64_t first_query, int64_t queries, int64_t keys) const {
    // Each relative position's bucket once (its logarithm is the costly part), then each pair's:
    // key s minus query t runs from lowest (the last query, key 0) to highest.
    const int64_t lowest = -(first_query + queries - 1), highest = keys - 1 - first_query;
    std::vector<int64_t> of_distance(size_t(highest - lowest + 1));
    for (int64_t d = lowest; d <= highest; ++d)
        of_distance[size_t(d - lowest)] = relative_position_bucket(d, bidirectional_, buckets_);
    std::vector<int64_t> ids(size_t(queries * keys));
    for (int64_t t = 0; t < queries; ++t)
        for (int64_t s = 0; s < keys; ++s)
            ids[size_t(t * keys + s)] = of_distance[size_t(s - (first_query + t) - lowest)];
    return backend_->contiguous(host_tensor(std::move(ids), {queries * keys}));
}

Tensor RelativePositionBias::forward(int64_t first_query, int64_t queries, int64_t keys) const {
    MT_CHECK(first_query >= 0 && queries > 0 && keys > 0, "RelativePositionBias: queries from ",
             first_query, " (", queries, ") over ", keys, " keys");
    Tensor rows = backend_->empty({queries * keys, heads_}, table_.value.dtype());
    backend_->embedding_forward(table_.value, bucket_ids(first_query, queries, keys), rows);
    const Tensor wide = backend_->cast_to(rows, upcast_dtype(rows.dtype()));
    Tensor out = backend_->empty({local_heads_, queries, keys}, wide.dtype());
    Tensor as_rows = out.view({local_heads_, queries * keys}).transpose(0, 1);
    backend_->copy(wide.slice(1, first_head_, first_head_ + local_heads_), as_rows);
    return out;
}

void RelativePositionBias::backward(const Tensor& bias_grad) {
    MT_CHECK(bias_grad.dim() == 3 && bias_grad.size(0) == local_heads_,
             "RelativePositionBias: bias_grad must be (", local_heads_, ", queries, keys), got ",
             bias_grad.describe());
    const int64_t queries = bias_grad.size(1), keys = bias_grad.size(2);
    Tensor rows = backend_->zeros({queries * keys, heads_}, table_.grad.dtype());
    Tensor mine = rows.slice(1, first_head_, first_head_ + local_heads_);
    backend_->copy(backend_->cast_to(backend_->contiguous(bias_grad), table_.grad.dtype())
                       .view({local_heads_, queries * keys})
                       .transpose(0, 1),
                   mine);
    backend_->embedding_backward(rows, bucket_ids(0, queries, keys), table_.grad);
}

}  // namespace mt::nn
