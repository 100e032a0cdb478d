#include "mt/nn/attention_mask.h"

#include <vector>

#include "mt/error.h"

namespace mt::nn {

namespace {

int64_t integer_at(const Tensor& t, int64_t i) {
    switch (t.dtype()) {
        case DType::i64:
            return t.data<int64_t>()[i];
        case DType::i32:
            return t.data<int32_t>()[i];
        default:
            MT_FAIL("padding_mask must be i64 or i32, got ", t.describe());
    }
}

}  // namespace

Tensor key_lengths_from_padding_mask(const Tensor& padding_mask) {
    MT_CHECK(padding_mask.dim() == 2 && padding_mask.device().type == DeviceType::cpu,
             "padding_mask must be a (B, T) host tensor, got ", padding_mask.describe());
    const Tensor mask = padding_mask.contiguous();
    const int64_t B = mask.size(0), T = mask.size(1);
    Tensor lengths = Tensor::empty({B}, DType::i32);
    for (int64_t b = 0; b < B; ++b) {
        int64_t length = 0;
        while (length < T && integer_at(mask, b * T + length) == 1) ++length;
        for (int64_t t = length; t < T; ++t)
            MT_CHECK(integer_at(mask, b * T + t) == 0, "padding_mask row ", b, " has ",
                     integer_at(mask, b * T + t), " at position ", t,
                     " after padding: not supported yet: padding other than at the end of a row");
        lengths.data<int32_t>()[b] = int32_t(length);
    }
    return lengths;
}

}  // namespace mt::nn
