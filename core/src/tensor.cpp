#include "mt/tensor.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "cpu_block_cache.h"

namespace mt {

std::string Device::str() const {
    return type == DeviceType::cpu ? std::string("cpu") : mt::str("cuda:", index);
}

Shape contiguous_strides(const Shape& shape) {
    Shape strides(shape.size());
    int64_t s = 1;
    for (size_t i = shape.size(); i-- > 0;) {
        strides[i] = s;
        s *= shape[i];
    }
    return strides;
}

std::string shape_str(const Shape& shape) {
    std::string out = "[";
    for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + "]";
}

int64_t shape_numel(const Shape& shape) {
    int64_t n = 1;
    for (int64_t d : shape) {
        MT_CHECK(d >= 0, "negative dimension in shape ", shape_str(shape));
        n *= d;
    }
    return n;
}

namespace {

std::shared_ptr<Storage> cpu_storage(int64_t bytes) {
    auto st = std::make_shared<Storage>();
    if (bytes >= detail::kCachedBlockMin) {
        int64_t capacity = 0;
        st->data = detail::take_block(bytes, capacity);
        MT_CHECK(st->data, "out of memory allocating ", bytes, " bytes");
        st->bytes = bytes;
        st->deleter = [capacity](void* p) { detail::give_block(p, capacity); };
        return st;
    }
    // 64-byte alignment for AVX-512 loads; aligned_alloc needs a multiple of the alignment.
    int64_t rounded = (bytes + 63) / 64 * 64;
    st->data = rounded ? std::aligned_alloc(64, rounded) : nullptr;
    if (rounded && !st->data) {  // the cached large blocks go, then once more
        detail::release_cached_blocks();
        st->data = std::aligned_alloc(64, rounded);
    }
    MT_CHECK(!rounded || st->data, "out of memory allocating ", bytes, " bytes");
    st->bytes = bytes;
    st->deleter = [](void* p) { std::free(p); };
    return st;
}
// Zero-filled storage straight from the kernel for large tensors: its pages cost nothing until
// written (a model's parameters and gradients, when a checkpoint then replaces them or
// inference never touches them, never take memory); small ones are cleared by memset.
std::shared_ptr<Storage> zeroed_cpu_storage(int64_t bytes) {
    constexpr int64_t kMapped = int64_t(1) << 20;
    if (bytes < kMapped) {
        auto st = cpu_storage(bytes);
        if (bytes) std::memset(st->data, 0, size_t(bytes));
        return st;
    }
    void* p = detail::map_zeroed_pages(bytes);
    MT_CHECK(p, "out of memory allocating ", bytes, " bytes");
    auto st = std::make_shared<Storage>();
    st->data = p;
    st->bytes = bytes;
    st->deleter = [bytes](void* q) { ::munmap(q, size_t(bytes)); };
    return st;
}
}  // namespace

Tensor Tensor::from_storage(std::shared_ptr<Storage> storage, const Shape& shape, DType dtype,
                            int64_t offset_elements) {
    MT_CHECK(storage, "null storage");
    MT_CHECK((offset_elements + shape_numel(shape)) * dtype_size(dtype) <= storage->bytes,
             "tensor ", shape_str(shape), " at offset ", offset_elements,
             " does not fit its storage of ", storage->bytes, " bytes");
    Tensor t;
    t.storage_ = std::move(storage);
    t.offset_ = offset_elements;
    t.dtype_ = dtype;
    t.shape_ = shape;
    t.strides_ = contiguous_strides(shape);
    return t;
}

Tensor Tensor::from_storage(std::shared_ptr<Storage> storage, const Shape& shape,
                            const Shape& strides, DType dtype, int64_t offset_elements) {
    MT_CHECK(storage, "null storage");
    MT_CHECK(strides.size() == shape.size(), "shape ", shape_str(shape), " and strides ",
             shape_str(strides), " differ in rank");
    MT_CHECK(offset_elements >= 0, "negative storage offset ", offset_elements);
    const int64_t capacity = storage->bytes / dtype_size(dtype);
    int64_t last = offset_elements;  // the farthest element the view reaches
    bool empty = false;
    for (size_t d = 0; d < shape.size(); ++d) {
        MT_CHECK(shape[d] >= 0 && strides[d] >= 0, "negative size or stride in ", shape_str(shape),
                 " / ", shape_str(strides));
        empty = empty || shape[d] == 0;
        int64_t reach = 0;
        MT_CHECK(!__builtin_mul_overflow(shape[d] ? shape[d] - 1 : 0, strides[d], &reach) &&
                     !__builtin_add_overflow(last, reach, &last),
                 "shape ", shape_str(shape), " with strides ", shape_str(strides), " overflows");
    }
    MT_CHECK(empty ? offset_elements <= capacity : last < capacity, "a view ", shape_str(shape),
             " with strides ", shape_str(strides), " at offset ", offset_elements,
             " reaches element ", last, " of a storage of ", capacity);
    Tensor t;
    t.storage_ = std::move(storage);
    t.offset_ = offset_elements;
    t.dtype_ = dtype;
    t.shape_ = shape;
    t.strides_ = strides;
    return t;
}

Tensor Tensor::empty(const Shape& shape, DType dtype) {
    return from_storage(cpu_storage(shape_numel(shape) * dtype_size(dtype)), shape, dtype);
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) {
    return from_storage(zeroed_cpu_storage(shape_numel(shape) * dtype_size(dtype)), shape, dtype);
}

Tensor Tensor::from_blob(void* data, const Shape& shape, DType dtype, std::shared_ptr<void> owner,
                         Device device) {
    auto st = std::make_shared<Storage>();
    st->data = data;
    st->bytes = shape_numel(shape) * dtype_size(dtype);
    st->device = device;
    if (owner) st->deleter = [owner](void*) mutable { owner.reset(); };
    return from_storage(std::move(st), shape, dtype);
}

int64_t Tensor::size(int64_t d) const {
    if (d < 0) d += dim();
    MT_CHECK(d >= 0 && d < dim(), "dimension ", d, " out of range for ", describe());
    return shape_[d];
}

int64_t Tensor::numel() const {
    return shape_numel(shape_);
}

bool Tensor::is_contiguous() const {
    int64_t expected = 1;
    for (size_t i = shape_.size(); i-- > 0;) {
        if (shape_[i] != 1 && strides_[i] != expected) return false;
        expected *= shape_[i];
    }
    return true;
}

void* Tensor::raw_data() const {
    MT_CHECK(defined(), "use of an undefined tensor");
    return static_cast<char*>(storage_->data) + offset_ * dtype_size(dtype_);
}

Tensor Tensor::view(const Shape& shape) const {
    MT_CHECK(is_contiguous(), "view() of a non-contiguous tensor ", describe());
    Shape out = shape;
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < out.size(); ++i) {
        if (out[i] == -1) {
            MT_CHECK(infer < 0, "view(): more than one -1 in ", shape_str(shape));
            infer = static_cast<int64_t>(i);
        } else {
            known *= out[i];
        }
    }
    if (infer >= 0) {
        MT_CHECK(known > 0 && numel() % known == 0, "view(): cannot infer ", shape_str(shape),
                 " for ", describe());
        out[infer] = numel() / known;
    }
    MT_CHECK(shape_numel(out) == numel(), "view(): ", shape_str(shape), " does not match ",
             describe());
    Tensor t = *this;
    t.shape_ = out;
    t.strides_ = contiguous_strides(out);
    return t;
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end) const {
    if (d < 0) d += dim();
    MT_CHECK(d >= 0 && d < dim(), "slice(): dimension ", d, " out of range for ", describe());
    MT_CHECK(0 <= start && start <= end && end <= shape_[d], "slice(): [", start, ", ", end,
             ") out of range for dimension ", d, " of ", describe());
    Tensor t = *this;
    t.offset_ += start * strides_[d];
    t.shape_[d] = end - start;
    return t;
}

Tensor Tensor::select(int64_t d, int64_t index) const {
    if (d < 0) d += dim();
    Tensor t = slice(d, index, index + 1);
    t.shape_.erase(t.shape_.begin() + d);
    t.strides_.erase(t.strides_.begin() + d);
    return t;
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
    if (d0 < 0) d0 += dim();
    if (d1 < 0) d1 += dim();
    MT_CHECK(d0 >= 0 && d0 < dim() && d1 >= 0 && d1 < dim(), "transpose(): dimensions ", d0, ", ",
             d1, " out of range for ", describe());
    Tensor t = *this;
    std::swap(t.shape_[d0], t.shape_[d1]);
    std::swap(t.strides_[d0], t.strides_[d1]);
    return t;
}

void Tensor::copy_from(const Tensor& src) {
    MT_CHECK(shape_ == src.shape_ && dtype_ == src.dtype_, "copy_from(): ", src.describe(),
             " into ", describe());
    MT_CHECK(device().type == DeviceType::cpu && src.device().type == DeviceType::cpu,
             "copy_from() copies CPU tensors; use Backend::copy across devices");
    const int64_t n = numel(), es = dtype_size(dtype_);
    if (n == 0) return;
    if (is_contiguous() && src.is_contiguous()) {
        std::memmove(raw_data(), src.raw_data(), n * es);
        return;
    }
    // Odometer walk over the index space; both sides use their own strides. Where the innermost
    // dimension is contiguous on both sides (a slice of columns: a row-parallel piece), each of
    // its rows is one memcpy.
    const size_t dims = shape_.size();
    const bool rows = dims > 0 && strides_[dims - 1] == 1 && src.strides_[dims - 1] == 1;
    const size_t outer = rows ? dims - 1 : dims;
    const int64_t run = rows ? shape_[dims - 1] : 1;
    const auto* s = static_cast<const char*>(src.raw_data());
    auto* d = static_cast<char*>(raw_data());
    Shape idx(outer, 0);
    for (int64_t i = 0; i < n / run; ++i) {
        int64_t so = 0, dof = 0;
        for (size_t k = 0; k < outer; ++k) {
            so += idx[k] * src.strides_[k];
            dof += idx[k] * strides_[k];
        }
        std::memcpy(d + dof * es, s + so * es, size_t(run * es));
        for (size_t k = outer; k-- > 0;) {
            if (++idx[k] < shape_[k]) break;
            idx[k] = 0;
        }
    }
}

Tensor Tensor::clone() const {
    Tensor t = empty(shape_, dtype_);
    t.copy_from(*this);
    return t;
}

Tensor Tensor::contiguous() const {
    return is_contiguous() ? *this : clone();
}

std::string Tensor::describe() const {
    if (!defined()) return "undefined tensor";
    return str(dtype_name(dtype_), shape_str(shape_), " ", device().str());
}

}  // namespace mt
