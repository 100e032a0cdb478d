// Hugging Face .safetensors files (8-byte little-endian header length, JSON header, raw tensor
// bytes): a memory-mapped reader (float32 tensors are zero-copy views of the file) and a writer.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mt/io/mapped_file.h"
#include "mt/tensor.h"

namespace mt::plugins::hf {

struct SafetensorsEntry {
    std::string name;
    std::string dtype;  // "F32", "F16", "BF16" or "U8" (MXFP4's packed blocks and scales)
    Shape shape;
    uint64_t begin = 0, end = 0;  // byte range inside the data section
    DType type() const;           // dtype as ours
};

class SafetensorsFile {
  public:
    // Maps `path` and checks its header: every entry's dtype known, its byte range inside the
    // file and as long as its shape needs. Throws mt::Error naming the file otherwise.
    explicit SafetensorsFile(const std::filesystem::path& path);

    const std::filesystem::path& path() const { return file_->path(); }
    const std::vector<SafetensorsEntry>& entries() const { return entries_; }
    const SafetensorsEntry* find(std::string_view name) const;
    // The tensor as `as` (F32, F16 or BF16): in its own dtype it views the (read-only) map and
    // keeps it alive; another is converted into a new tensor. mt::Error naming the file for an
    // unknown name.
    Tensor read(std::string_view name, DType as = DType::f32) const;

  private:
    std::shared_ptr<io::MappedFile> file_;
    uint64_t data_begin_ = 0;
    std::vector<SafetensorsEntry> entries_;
};

using NamedTensor = std::pair<std::string, Tensor>;

// A tensor to write, made only when its bytes are written: a streamed save holds one at a time.
struct TensorToWrite {
    std::string name;
    Shape shape;
    DType dtype = DType::f32;
    std::function<Tensor()> make;  // its values, of that shape and dtype (any strides)
    uint64_t nbytes() const;
};
// A tensor that is already made, to write.
TensorToWrite to_write(NamedTensor tensor);

// Writes `tensors` (F32, F16 or BF16; names unique) as the safetensors library does: header
// {"__metadata__": {"format": "pt"}, name: {dtype, shape, data_offsets}, ...} padded with
// spaces to a multiple of 8 bytes, then the data in sorted-name order, each tensor made as its
// bytes are written and let go after. Through a temporary file renamed into place; mt::Error
// naming the file and tensor otherwise (a made tensor of another shape or dtype, too).
void write_safetensors(const std::filesystem::path& path, std::vector<TensorToWrite> tensors);
void write_safetensors(const std::filesystem::path& path, const std::vector<NamedTensor>& tensors);

}  // namespace mt::plugins::hf
