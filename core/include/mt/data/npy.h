// NPY v1.0 arrays of the integer types Megatron's dataset index caches use, written byte for
// byte like numpy.save and read back through a read-only memory map (numpy.load(mmap_mode='r')).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "mt/api.h"

namespace mt::data {

// The element types of the index arrays (numpy descr '<i2', '<i4', '<i8', '<u4').
enum class NpyType : uint8_t { i16, i32, i64, u32 };

MT_API int64_t npy_type_size(NpyType type);
MT_API const char* npy_type_descr(NpyType type);

// A C-ordered little-endian array, either owned (built in memory) or mapped from a .npy file.
// Copies share the storage.
class MT_API NpyArray {
  public:
    NpyArray() = default;
    // A zero-filled owned array.
    static NpyArray zeros(NpyType type, std::vector<int64_t> shape);
    // Maps `path`; throws mt::Error naming the file when it is not an NPY v1/v2 C-order array of
    // one of the types above.
    static NpyArray load(const std::filesystem::path& path);
    // Writes what numpy.save writes (v1.0 header padded to 64 bytes with numpy's growth spaces)
    // to a temporary name and renames it into place.
    void save(const std::filesystem::path& path) const;

    NpyType type() const { return type_; }
    const std::vector<int64_t>& shape() const { return shape_; }
    int64_t numel() const { return numel_; }
    // Element at flat (C-order) position i, widened.
    int64_t at(int64_t i) const;

    template <class T>
    T* data() {
        return reinterpret_cast<T*>(mutable_data_);
    }
    template <class T>
    const T* data() const {
        return reinterpret_cast<const T*>(data_);
    }
    const uint8_t* bytes() const { return data_; }
    int64_t nbytes() const { return numel_ * npy_type_size(type_); }

  private:
    NpyType type_ = NpyType::i32;
    std::vector<int64_t> shape_;
    int64_t numel_ = 0;
    std::shared_ptr<void> storage_;
    const uint8_t* data_ = nullptr;
    uint8_t* mutable_data_ = nullptr;
};

// The header numpy.save writes for an array of this type and shape (magic to final newline).
MT_API std::string npy_header(NpyType type, const std::vector<int64_t>& shape);

}  // namespace mt::data
