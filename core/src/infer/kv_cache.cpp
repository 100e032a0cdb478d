// KvCache: allocation and the filled-length bookkeeping.
#include "mt/infer/kv_cache.h"

#include "mt/error.h"

namespace mt::infer {

KvCache::KvCache(int64_t layers, int64_t batch, int64_t capacity, int64_t groups,
                 int64_t head_dim, DType dtype)
    : batch_(batch), capacity_(capacity) {
    MT_CHECK(layers >= 0 && batch > 0 && capacity > 0 && groups > 0 && head_dim > 0,
             "KvCache: sizes must be positive (layers ", layers, ", batch ", batch, ", capacity ",
             capacity, ", groups ", groups, ", head dim ", head_dim, ")");
    layers_.reserve(size_t(layers));
    for (int64_t i = 0; i < layers; ++i)
        layers_.push_back({Tensor::empty({batch, capacity, groups, head_dim}, dtype),
                           Tensor::empty({batch, capacity, groups, head_dim}, dtype)});
}

void KvCache::advance(int64_t n) {
    MT_CHECK(n >= 0 && length_ + n <= capacity_, "KvCache: ", length_, " + ", n,
             " positions exceed the capacity of ", capacity_);
    length_ += n;
}

}  // namespace mt::infer
