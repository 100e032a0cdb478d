// The tensors of a Hugging Face model folder by name: model.safetensors, or the shards that
// model.safetensors.index.json lists, each file memory-mapped once and read when asked for.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mt/tensor.h"
#include "safetensors.h"

namespace mt::plugins::hf {

class HfTensors {
  public:
    // Maps the folder's weight files and reads their headers; mt::Error naming the folder or
    // file when there are none or they are malformed.
    explicit HfTensors(const std::filesystem::path& dir);

    // The tensor as `as` (a view of the map when it has that dtype there).
    Tensor get(const std::string& name, DType as = DType::f32) const;
    // Its dtype in the file (nothing read).
    DType dtype(const std::string& name) const;
    // Its shape as the file's header gives it (nothing read).
    const Shape& shape(const std::string& name) const;
    bool has(const std::string& name) const { return where_.count(name) != 0; }

  private:
    size_t file_of(const std::string& name) const;
    void open(const std::filesystem::path& path);

    std::filesystem::path dir_;
    std::vector<std::unique_ptr<SafetensorsFile>> files_;
    std::map<std::string, size_t> where_;
};

}  // namespace mt::plugins::hf
