// Megatron-core tensors -> Hugging Face tensors: the inverse of what HfCheckpoint::load reads
// (QKV rows split per query group into q/k/v, fc1's [gate; up] halves, GPT-2's Conv1D
// transposes, the vocabulary table cut to the true vocabulary), in the weights' own dtype. A
// family's export_tensors (hf_architecture.h) states the folder's tensors through HfExport.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "hf_config.h"
#include "mt/checkpoint.h"
#include "safetensors.h"

namespace mt::plugins::hf {

// A tensor of the folder before it is made: its shape, and how to make it from the Megatron
// tensors it is drawn from when it is written.
struct Lazy {
    Shape shape;
    std::function<Tensor()> make;

    // f(this tensor), of shape `to`.
    Lazy map(Shape to, std::function<Tensor(const Tensor&)> f) const;
    // Rows [from, to) (a view).
    Lazy rows(int64_t from, int64_t to) const;
    Lazy transpose() const;
};

// ungroup_qkv's parts of a linear_qkv weight or bias (nq query heads in ng groups of hd), each
// made on its own.
struct LazyQkv {
    Lazy q, k, v;
};
LazyQkv ungroup(const Lazy& qkv, int64_t nq, int64_t ng, int64_t hd);

class HfExport {
  public:
    HfExport(const CheckpointState& state, std::function<Tensor(size_t)> make, const HfConfig& c,
             DType dtype);

    const HfConfig& config() const { return c_; }
    DType dtype() const { return dtype_; }
    bool has(const std::string& name) const { return by_name_.count(name) > 0; }

    // The whole tensor `name` (or its other --transformer-impl norm spelling) in the output
    // dtype, of `shape`; checked now, made when written.
    Lazy get(const std::string& name, const Shape& shape) const;
    // The vocabulary table ([rows, hidden], or BERT's output-layer bias [rows]) cut to the
    // config's vocabulary (any padded rows dropped).
    Lazy vocab_table(const std::string& name) const;
    // Expert j's linear_fc<fc> weight in a MoE layer's `mlp` ("decoder.layers.<i>.mlp."), under
    // SequentialMLP's names or TEGroupedMLP's.
    std::string expert_fc(const std::string& mlp, int fc, int64_t j) const;

    void put(std::string name, Lazy t);
    // A SwiGLU fc1 ([gate; up] rows, `f` each) as its two halves.
    void put_gate_up(const std::string& gate, const std::string& up, const Lazy& fc1, int64_t f);

    std::vector<TensorToWrite> take() { return std::move(out_); }

  private:
    struct Source {
        const ShardedTensor* tensor;  // its shape (a placeholder in a streamed save)
        size_t index;                 // its values: make(index)
    };

    const HfConfig& c_;
    DType dtype_;
    std::shared_ptr<const std::function<Tensor(size_t)>> make_;  // shared by the lazy tensors
    std::map<std::string, Source> by_name_;
    std::vector<TensorToWrite> out_;
};

// The model tensors of `state` (whole tensors, either --transformer-impl's norm names) under
// Hugging Face names, in the model's order, for `config` (config.vocab_size rows of the
// vocabulary tables are kept; a tied model has no lm_head.weight, as transformers saves it),
// each made when it is written from the values make(i) gives of state.model[i] (a streamed
// save's placeholders: nothing is read here). Every tensor has `dtype`: one of another dtype is
// cast. mt::Error naming the tensor, now, for a missing one, a piece of a tensor, or a shape
// the config does not imply.
std::vector<TensorToWrite> hf_tensors(const CheckpointState& state,
                                      std::function<Tensor(size_t)> make, const HfConfig& config,
                                      DType dtype);

}  // namespace mt::plugins::hf
