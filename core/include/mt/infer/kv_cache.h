// KvCache: the keys and values of every token a causal model has already read, per layer, so
// incremental decoding reads each new token once (grouped-query aware: ng key/value heads).
#pragma once

#include <cstdint>
#include <vector>

#include "mt/api.h"
#include "mt/tensor.h"

namespace mt::infer {

class MT_API KvCache {
  public:
    // Keys and values of one layer: (batch, capacity, groups, head_dim) each.
    struct Layer {
        Tensor k, v;
    };

    KvCache(int64_t layers, int64_t batch, int64_t capacity, int64_t groups, int64_t head_dim,
            DType dtype);

    int64_t batch() const { return batch_; }
    // Positions filled: the next token a model reads sits at position length().
    int64_t length() const { return length_; }
    Layer& layer(size_t i) { return layers_.at(i); }
    size_t num_layers() const { return layers_.size(); }

    // Marks n more positions filled (after every layer wrote them); mt::Error past capacity.
    void advance(int64_t n);
    // Forgets every position (the tensors are reused for the next batch).
    void clear() { length_ = 0; }

  private:
    int64_t batch_, capacity_, length_ = 0;
    std::vector<Layer> layers_;
};

}  // namespace mt::infer
