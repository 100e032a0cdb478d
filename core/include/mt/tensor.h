// Tensor: a typed, strided view of shared storage on a device. Views (slice, transpose, reshape
// of contiguous data) share storage and are cheap; copies are explicit (contiguous(), clone()).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/dtype.h"
#include "mt/error.h"

namespace mt {

enum class DeviceType : uint8_t { cpu, cuda };

struct Device {
    DeviceType type = DeviceType::cpu;
    int index = 0;
    bool operator==(const Device&) const = default;
    MT_API std::string str() const;  // "cpu", "cuda:1"
};

// A block of device memory. The deleter frees it the way it was allocated (CPU aligned
// allocation, a backend allocator, an mmap region, or nothing for borrowed memory).
struct Storage {
    void* data = nullptr;
    int64_t bytes = 0;
    Device device;
    std::function<void(void*)> deleter;
    Storage() = default;
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;
    ~Storage() {
        if (deleter) deleter(data);
    }
};

using Shape = std::vector<int64_t>;

class MT_API Tensor {
  public:
    Tensor() = default;

    // New contiguous CPU tensor; contents uninitialised / zero.
    static Tensor empty(const Shape& shape, DType dtype);
    static Tensor zeros(const Shape& shape, DType dtype);
    // Wraps memory owned elsewhere; `owner` keeps it alive (may be null for borrowed memory
    // that outlives the tensor).
    static Tensor from_blob(void* data, const Shape& shape, DType dtype,
                            std::shared_ptr<void> owner = nullptr, Device device = {});
    // Wraps an existing storage (e.g. one allocated by a backend).
    static Tensor from_storage(std::shared_ptr<Storage> storage, const Shape& shape, DType dtype,
                               int64_t offset_elements = 0);
    // A view with explicit non-negative strides (in elements), as torch's as_strided: rows may
    // overlap or repeat (stride 0); every element reached must lie inside the storage.
    static Tensor from_storage(std::shared_ptr<Storage> storage, const Shape& shape,
                               const Shape& strides, DType dtype, int64_t offset_elements);

    bool defined() const { return storage_ != nullptr; }
    DType dtype() const { return dtype_; }
    Device device() const { return storage_ ? storage_->device : Device{}; }
    const Shape& shape() const { return shape_; }
    const Shape& strides() const { return strides_; }  // in elements
    int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
    int64_t size(int64_t d) const;  // negative d counts from the back
    int64_t numel() const;
    int64_t nbytes() const { return numel() * dtype_size(dtype_); }
    bool is_contiguous() const;
    const std::shared_ptr<Storage>& storage() const { return storage_; }
    int64_t offset() const { return offset_; }

    void* raw_data() const;
    template <class T>
    T* data() const {
        MT_CHECK(dtype_of<T>() == dtype_, "tensor holds ", dtype_name(dtype_), ", not ",
                 dtype_name(dtype_of<T>()));
        return static_cast<T*>(raw_data());
    }

    // Views.
    Tensor view(const Shape& shape) const;  // contiguous only; one dim may be -1
    Tensor slice(int64_t d, int64_t start, int64_t end) const;
    Tensor select(int64_t d, int64_t index) const;  // drops dim d
    Tensor transpose(int64_t d0, int64_t d1) const;

    // Copies.
    Tensor contiguous() const;  // this if already contiguous
    Tensor clone() const;
    void copy_from(const Tensor& src);  // same shape and dtype, any strides (CPU)

    std::string describe() const;  // "f32[2, 3] cpu"

  private:
    std::shared_ptr<Storage> storage_;
    int64_t offset_ = 0;  // in elements
    DType dtype_ = DType::f32;
    Shape shape_, strides_;
};

// `t` as `to`, a new contiguous CPU tensor: between f32, f64, f16 and bf16 (narrowing rounds to
// nearest, ties to even, as torch does); the same dtype is a contiguous copy. Others: mt::Error.
MT_API Tensor cast_float(const Tensor& t, DType to);

MT_API Shape contiguous_strides(const Shape& shape);
// The number of elements of a tensor of `shape` (1 for a scalar).
MT_API int64_t shape_numel(const Shape& shape);
MT_API std::string shape_str(const Shape& shape);

// A CPU tensor that owns `values` (host inputs such as token or position ids), to hand to a
// backend's contiguous().
template <class T>
Tensor host_tensor(std::vector<T> values, const Shape& shape) {
    auto owner = std::make_shared<std::vector<T>>(std::move(values));
    MT_CHECK(int64_t(owner->size()) == shape_numel(shape), "host_tensor: ", owner->size(),
             " values for shape ", shape_str(shape));
    return Tensor::from_blob(owner->data(), shape, dtype_of<T>(), owner);
}

}  // namespace mt
