#include "hf_layout.h"

#include <algorithm>
#include <cstring>

#include "mt/error.h"

namespace mt::plugins::hf {

namespace {

// In 32 x 32 tiles so both sides stay in cache.
template <class T>
void transpose_tiles(const T* src, T* dst, int64_t rows, int64_t cols) {
    const int64_t tile = 32;
    for (int64_t i0 = 0; i0 < rows; i0 += tile)
        for (int64_t j0 = 0; j0 < cols; j0 += tile)
            for (int64_t i = i0; i < std::min(rows, i0 + tile); ++i)
                for (int64_t j = j0; j < std::min(cols, j0 + tile); ++j)
                    dst[j * rows + i] = src[i * cols + j];
}

// Bytes of one row (dim 0 step) of a contiguous tensor.
int64_t row_bytes(const Tensor& t) {
    return t.shape()[0] == 0 ? 0 : t.nbytes() / t.shape()[0];
}

}  // namespace

Tensor transposed(const Tensor& t) {
    MT_CHECK(t.dim() == 2, "transposed(): a 2-D tensor, got ", t.describe());
    const Tensor c = t.contiguous();
    const int64_t rows = c.shape()[0], cols = c.shape()[1];
    Tensor out = Tensor::empty({cols, rows}, c.dtype());
    switch (dtype_size(c.dtype())) {
        case 4:
            transpose_tiles(static_cast<const uint32_t*>(c.raw_data()),
                            static_cast<uint32_t*>(out.raw_data()), rows, cols);
            break;
        case 2:
            transpose_tiles(static_cast<const uint16_t*>(c.raw_data()),
                            static_cast<uint16_t*>(out.raw_data()), rows, cols);
            break;
        default:
            MT_FAIL("transposed(): floating-point tensors only, got ", c.describe());
    }
    return out;
}

Tensor group_qkv(const Tensor& q, const Tensor& k, const Tensor& v, int64_t nq, int64_t ng,
                 int64_t hd) {
    const Tensor cq = q.contiguous(), ck = k.contiguous(), cv = v.contiguous();
    Shape shape = cq.shape();
    shape[0] = (nq + 2 * ng) * hd;
    Tensor out = Tensor::empty(shape, cq.dtype());
    const int64_t head = row_bytes(cq) * hd;  // bytes of one head's rows
    const int64_t q_group = nq / ng * head;
    auto* dst = static_cast<char*>(out.raw_data());
    const auto* sq = static_cast<const char*>(cq.raw_data());
    const auto* sk = static_cast<const char*>(ck.raw_data());
    const auto* sv = static_cast<const char*>(cv.raw_data());
    for (int64_t g = 0; g < ng; ++g) {
        dst = std::copy_n(sq + g * q_group, q_group, dst);
        dst = std::copy_n(sk + g * head, head, dst);
        dst = std::copy_n(sv + g * head, head, dst);
    }
    return out;
}

Qkv ungroup_qkv(const Tensor& qkv, int64_t nq, int64_t ng, int64_t hd) {
    const Tensor c = qkv.contiguous();
    MT_CHECK(c.dim() >= 1 && c.shape()[0] == (nq + 2 * ng) * hd, "linear_qkv of shape ",
             shape_str(c.shape()), " does not hold ", nq, " query and 2 x ", ng,
             " key/value heads of ", hd);
    auto rows = [&](int64_t n) {
        Shape shape = c.shape();
        shape[0] = n;
        return Tensor::empty(shape, c.dtype());
    };
    Qkv out{rows(nq * hd), rows(ng * hd), rows(ng * hd)};
    const int64_t head = row_bytes(c) * hd;
    const int64_t q_group = nq / ng * head;
    const auto* src = static_cast<const char*>(c.raw_data());
    auto* dq = static_cast<char*>(out.q.raw_data());
    auto* dk = static_cast<char*>(out.k.raw_data());
    auto* dv = static_cast<char*>(out.v.raw_data());
    for (int64_t g = 0; g < ng; ++g) {
        dq = std::copy_n(src, q_group, dq);
        dk = std::copy_n(src + q_group, head, dk);
        dv = std::copy_n(src + q_group + head, head, dv);
        src += q_group + 2 * head;
    }
    return out;
}

Tensor concat_rows(const Tensor& a, const Tensor& b) {
    const Tensor ca = a.contiguous(), cb = b.contiguous();
    MT_CHECK(ca.dtype() == cb.dtype(), "concat_rows(): ", ca.describe(), " and ", cb.describe());
    Shape shape = ca.shape();
    shape[0] += cb.shape()[0];
    Tensor out = Tensor::empty(shape, ca.dtype());
    auto* dst = static_cast<char*>(out.raw_data());
    std::memcpy(dst, ca.raw_data(), size_t(ca.nbytes()));
    std::memcpy(dst + ca.nbytes(), cb.raw_data(), size_t(cb.nbytes()));
    return out;
}

Tensor interleaved_rope_rows(const Tensor& t, int64_t block, int64_t offset, int64_t rope) {
    const Tensor c = t.contiguous();
    MT_CHECK(block > 0 && rope % 2 == 0 && offset + rope <= block && c.shape()[0] % block == 0,
             "rope rows: ", rope, " rows at ", offset, " of blocks of ", block, " do not fit ",
             c.describe());
    // Row j of each rotary part: the first half's row j / 2 (even j), the second half's (odd j).
    Tensor out = c.clone();
    const int64_t row = row_bytes(c), half = rope / 2;
    const auto* src = static_cast<const char*>(c.raw_data());
    auto* dst = static_cast<char*>(out.raw_data());
    for (int64_t b = 0; b < c.shape()[0] / block; ++b)
        for (int64_t j = 0; j < rope; ++j)
            std::copy_n(src + (b * block + offset + (j % 2 ? half : 0) + j / 2) * row, row,
                        dst + (b * block + offset + j) * row);
    return out;
}

}  // namespace mt::plugins::hf
