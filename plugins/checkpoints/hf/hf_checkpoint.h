// The `hf` CheckpointFormat: reads a Hugging Face GPT-2, Llama, Mistral or (Megatron-)BERT folder
// (config.json + model.safetensors, or shards listed by model.safetensors.index.json) into
// Megatron-core tensors (Transformer Engine names, Megatron layouts: QKV grouped per query group,
// [gate; up] fc1; BERT's encoder and heads as the bert family names them), and writes such a
// folder from a Megatron model's whole tensors and args.
#pragma once

#include <cstdint>

#include "hf_weights.h"
#include "mt/checkpoint.h"

namespace mt::plugins::hf {

class HfCheckpoint : public CheckpointFormat {
  public:
    // Saved weights go into shards of at most `max_shard_bytes` of tensor data.
    explicit HfCheckpoint(uint64_t max_shard_bytes = kDefaultMaxShardBytes)
        : max_shard_bytes_(max_shard_bytes) {}

    std::string_view name() const override { return "hf"; }
    bool detect(const std::filesystem::path& dir) const override;
    // Writes `dir` as a Hugging Face folder (whole tensors, one rank): config.json and (not for
    // BERT) generation_config.json for the model the args describe (hf_config_from_args: GPT-2,
    // Llama or Mistral; megatron-bert or bert for a BERT's tensors; else "not supported yet"), the
    // weights in the tensors' dtype
    // (hf_weights.h), the vocabulary cut to the true one (the args' vocab_size, else the
    // tokenizer's, else kept padded, saying so), and the tokenizer's files when the args name
    // them (hf_tokenizer_export.h). Written into a sibling temporary folder swapped into place;
    // an existing `dir` is replaced only when it holds nothing but such files.
    void save(const std::filesystem::path& dir, const CheckpointState& state) override;
    // save() with each tensor made (StreamedState::make) as it is written: one rank (layout 1x1).
    void save_streamed(const std::filesystem::path& dir, const CheckpointLayout& layout,
                       const StreamedStateFn& rank_state) override;
    // The model tensors in float32 (F16/BF16 converted), iteration 0, no optimizer, schedule or
    // RNG; args holds Megatron's names of the model's sizes (and the folder's tokenizer, when it
    // has tokenizer.json, vocab.json + merges.txt, or BERT's vocab.txt). Build the model with
    // hf_model_args(read_hf_config(dir)).
    CheckpointState load(const std::filesystem::path& dir) override;
    // load() with every tensor a placeholder made from the memory-mapped files only when asked
    // for (QKV grouped, [gate; up] joined), in the files' dtype (float32 for one made of tensors
    // of different dtypes): a tensor kept as it is views the map. Shapes are checked against
    // config.json here.
    StreamedState load_streamed(const std::filesystem::path& dir) override;

  private:
    uint64_t max_shard_bytes_;
};

}  // namespace mt::plugins::hf
