#include "mt/io/strided_view.h"

#include "mt/error.h"

namespace mt::io {

Tensor strided_view(const PyStorage& s, const Shape& size, const Shape& stride, int64_t offset) {
    MT_CHECK(offset <= s.numel, "tensor offset ", offset, " outside its storage of ", s.numel,
             " elements");
    // Torch's layout, as is: Tensor keeps arbitrary strides and checks the reach.
    return Tensor::from_storage(s.storage, size, stride, s.dtype, offset);
}

}  // namespace mt::io
