// The tensors of a Mamba-2 or Nemotron-H folder and of Megatron's MambaModel, one list for both
// directions: the Hugging Face name, the Megatron-core name and shape. Each
// layer is one block of the pattern: Mamba (its norm fused into mixer.in_proj as Megatron's
// TELayerNormColumnParallelLinear holds it), attention (q/k/v grouped into linear_qkv) or MLP.
#pragma once

#include <string>
#include <vector>

#include "hf_config.h"
#include "mt/tensor.h"

namespace mt::plugins::hf {

struct HybridTensor {
    std::string megatron;
    std::string hf;  // qkv: the attention's prefix ("...mixer."), its q_proj/k_proj/v_proj below
    Shape shape;     // Megatron-core's (the Hugging Face one too, but for qkv)
    enum class Kind { same, qkv, vocab } kind = Kind::same;  // vocab: rows cut to vocab_size
};

// In Megatron's order: embedding, layers, final norm, output layer (when untied). The model's
// tensors sit under `backbone` (*ForCausalLM's "backbone."; "" for a bare *Model), the output
// layer's lm_head outside it.
std::vector<HybridTensor> hybrid_tensors(const HfConfig& c,
                                         const std::string& backbone = "backbone.");

}  // namespace mt::plugins::hf
