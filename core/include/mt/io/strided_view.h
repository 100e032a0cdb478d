// Turns torch's (storage, offset, size, stride) into an mt::Tensor view sharing the storage.
#pragma once

#include "mt/api.h"
#include "mt/io/py_value.h"
#include "mt/tensor.h"

namespace mt::io {

// A view over `storage` with torch's (size, stride, offset), all in elements, overlapping and
// broadcast (stride 0) layouts included. Throws when the layout reaches outside the storage.
MT_API Tensor strided_view(const PyStorage& storage, const Shape& size, const Shape& stride,
                           int64_t offset);

}  // namespace mt::io
