// A Hugging Face folder's tensors as Megatron-core's: the recipes a family's import_tensors
// states (hf_architecture.h), each checked against config.json's shapes from the files' headers
// before any tensor is read, and made when asked for.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hf_config.h"
#include "hf_tensors.h"
#include "mt/tensor.h"

namespace mt::plugins::hf {

// The Hugging Face tensors a recipe reads, each as the recipe's dtype.
struct HfRead {
    const HfTensors& tensors;
    DType as;
    Tensor get(const std::string& name) const { return tensors.get(name, as); }
};

// One Megatron-core tensor of the folder: its name, shape, dtype (the file's for the tensors it
// is made of, float32 where they differ) and how to make it from the Hugging Face tensors (a
// rearrangement: any dtype).
struct Recipe {
    std::string name;
    Shape shape;
    DType dtype = DType::f32;
    std::function<Tensor(const HfRead&)> make;
};

// The names of a SwiGLU MLP's projections in a folder.
struct SwigluNames {
    std::string gate = "gate_proj", up = "up_proj", down = "down_proj";
};

class HfImport {
  public:
    using Make = std::function<Tensor(const HfRead&)>;

    HfImport(const HfTensors& tensors, const HfConfig& c) : tensors_(tensors), c_(c) {}

    const HfConfig& config() const { return c_; }
    bool has(const std::string& name) const { return tensors_.has(name); }
    const Shape& shape(const std::string& name) const { return tensors_.shape(name); }
    DType dtype(const std::string& name) const { return tensors_.dtype(name); }

    // The HF tensor `name`, checked to have `shape`; returns the name.
    std::string hf(const std::string& name, const Shape& shape) const;
    // A recipe made of the HF tensors `sources`, in their dtype (float32 where they differ) unless
    // `dtype` says.
    void put(const std::string& name, Shape shape, const std::vector<std::string>& sources,
             Make make, std::optional<DType> dtype = std::nullopt);
    // A tensor taken as it is (a view of the file).
    void put(const std::string& name, const std::string& src);
    // A GPT-2 Conv1D weight ([in, out]) as a Linear one ([out, in]).
    void put_transposed(const std::string& name, const std::string& src);
    // A SwiGLU MLP of `ffn` (`src`'s gate, up and down projections) as Megatron's under `dst`:
    // linear_fc1 = [gate; up], linear_fc2 = down.
    void put_swiglu(const std::string& dst, const std::string& src, int64_t ffn,
                    const SwigluNames& names = {});
    // Attention's q, k and v projections (weights or biases of nq and ng heads of hd) grouped
    // per query group as linear_qkv holds them.
    void put_qkv(const std::string& name, const std::string& q, const std::string& k,
                 const std::string& v, int64_t nq, int64_t ng, int64_t hd);

    std::vector<Recipe> take() { return std::move(recipes_); }

  private:
    const HfTensors& tensors_;
    const HfConfig& c_;
    std::vector<Recipe> recipes_;
};

}  // namespace mt::plugins::hf
