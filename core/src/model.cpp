// Model's inference entry points for families that have none yet.
#include "mt/model.h"

#include "mt/error.h"
#include "mt/infer/kv_cache.h"

namespace mt {

Tensor Model::logits(const Tensor&, infer::KvCache*, int64_t) {
    MT_FAIL("not supported yet: inference (logits) for this model family");
}

std::unique_ptr<infer::KvCache> Model::make_kv_cache(int64_t, int64_t) const {
    MT_FAIL("not supported yet: a KV cache for this model family");
}

}  // namespace mt
