// A backend that allocates nothing: its storages have a size but no memory, filling and copying
// do nothing, and every op that would read values fails. A model built on it lists its
// parameters' names, shapes, dtypes and shard specs at no memory cost (ModelFamily::parameters:
// a converter reads the layout of a model far larger than the machine's memory).
#pragma once

#include "mt/backend.h"

namespace mt {

class ShapeOnlyBackend final : public Backend {
  public:
    std::string_view name() const override { return "shape-only"; }
    Device device() const override { return Device{}; }
    std::shared_ptr<Storage> allocate(int64_t bytes) override;
    void copy(const Tensor&, Tensor&) override {}
    void synchronize() override {}
    void fill(Tensor&, double) override {}
    void gemm(Transpose, Transpose, float, const Tensor&, const Tensor&, float, Tensor&) override;
    void gemm_batched(Transpose, Transpose, float, const Tensor&, const Tensor&, float,
                      Tensor&) override;
};

}  // namespace mt
