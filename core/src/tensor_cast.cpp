// cast_float: a new contiguous CPU tensor through the CPU backend's float conversion.
#include "backends/cpu/half_as_float.h"
#include "mt/tensor.h"

namespace mt {

Tensor cast_float(const Tensor& t, DType to) {
    Tensor out = Tensor::empty(t.shape(), to);
    cpu::convert(t, out);
    return out;
}

}  // namespace mt
