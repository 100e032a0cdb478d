// RelativePositionBias: megatron-core's RelativePositionEmbedding (T5's relative position
// buckets): a learned table "<prefix>.relative_attention_bias.weight" (buckets, heads), every
// head's on every tensor-parallel rank, whose row for the bucket of (key - query) is added to the
// heads' scaled attention scores (Transformer Engine's post_scale_bias). Near distances get a
// bucket each, farther ones logarithmic buckets up to max_distance; a bidirectional table (the
// encoder's) splits its buckets between keys before and after the query, a causal one (the
// decoder's) has buckets for keys before it only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/parameter.h"
#include "mt/nn/tensor_parallel.h"

namespace mt::nn {

struct RelativePositionBuckets {
    int64_t num_buckets = 32;    // --relative-attention-num-buckets
    int64_t max_distance = 128;  // --relative-attention-max-distance
};

// The bucket of key position - query position, as megatron-core's _relative_position_bucket
// computes it (its logarithm in float32, truncated).
MT_API int64_t relative_position_bucket(int64_t relative_position, bool bidirectional,
                                        const RelativePositionBuckets& buckets);

class MT_API RelativePositionBias {
  public:
    // The table in `dtype`, zero; this rank's heads are [rank * heads / tp, ...).
    RelativePositionBias(const std::string& prefix, bool bidirectional,
                         const RelativePositionBuckets& buckets, int64_t heads, DType dtype,
                         Backend& backend, const TensorParallel& tp);
    RelativePositionBias(const RelativePositionBias&) = delete;
    RelativePositionBias& operator=(const RelativePositionBias&) = delete;

    // The bias (this rank's heads, queries, keys) of queries at positions first_query .. and
    // keys at 0 .., in upcast_dtype of the table's dtype (f32 for bf16): AttentionMask::bias.
    Tensor forward(int64_t first_query, int64_t queries, int64_t keys) const;
    // The table's grad += what `bias_grad` (shaped as forward(0, queries, keys) gave) says;
    // each rank adds its heads' columns (the grad is summed over the tensor-parallel group).
    void backward(const Tensor& bias_grad);

    void collect_parameters(std::vector<Parameter*>& out) { out.push_back(&table_); }

  private:
    // The bucket of each (query, key) pair, row-major, on the backend's device.
    Tensor bucket_ids(int64_t first_query, int64_t queries, int64_t keys) const;

    bool bidirectional_;
    RelativePositionBuckets buckets_;
    int64_t heads_, local_heads_, first_head_;
    Parameter table_;
    Backend* backend_;
};

}  // namespace mt::nn
