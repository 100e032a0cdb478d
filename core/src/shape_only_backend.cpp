#include "shape_only_backend.h"

#include "mt/error.h"

namespace mt {

std::shared_ptr<Storage> ShapeOnlyBackend::allocate(int64_t bytes) {
    auto storage = std::make_shared<Storage>();
    storage->bytes = bytes;
    storage->device = device();
    return storage;
}

void ShapeOnlyBackend::gemm(Transpose, Transpose, float, const Tensor&, const Tensor&, float,
                            Tensor&) {
    unsupported("gemm");
}

void ShapeOnlyBackend::gemm_batched(Transpose, Transpose, float, const Tensor&, const Tensor&,
                                    float, Tensor&) {
    unsupported("gemm_batched");
}

}  // namespace mt
