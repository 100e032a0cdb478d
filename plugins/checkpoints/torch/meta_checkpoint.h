// The `llama_meta` CheckpointFormat: Meta's original Llama release layout (params.json and
// consolidated.NN.pth, one torch.save state dict per model-parallel shard), read into Megatron-
// core tensors the way Megatron's loader_llama_mistral --checkpoint-type meta goes through
// Hugging Face's conversion: shards joined, wq/wk permuted from interleaved rotary pairs to
// half-split, QKV grouped per query group, fc1 = [w1; w3].
#pragma once

#include "mt/checkpoint.h"

namespace mt::plugins::torch_ckpt {

class MetaCheckpoint : public CheckpointFormat {
  public:
    std::string_view name() const override { return "llama_meta"; }
    bool detect(const std::filesystem::path& dir) const override;
    // Not supported yet: throws mt::Error.
    void save(const std::filesystem::path& dir, const CheckpointState& state) override;
    // The model tensors (Transformer Engine names, the files' dtype), iteration 0, no optimizer;
    // args in Megatron's names (RMSNorm, SwiGLU, RoPE with rope_theta, no biases, untied
    // output, grouped-query attention when n_kv_heads < n_heads, seq_length 4096).
    CheckpointState load(const std::filesystem::path& dir) override;
    // load() with every tensor a placeholder made only when asked for (shards joined, wq/wk
    // permuted, QKV grouped, [w1; w3] joined then) from the shards' memory-mapped files.
    StreamedState load_streamed(const std::filesystem::path& dir) override;
};

}  // namespace mt::plugins::torch_ckpt
