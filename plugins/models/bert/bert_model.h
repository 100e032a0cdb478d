// BertModel: Megatron-core's BertModel on the CPU backend: embedding (word + learned positions +
// token types, dropout) -> bidirectional encoder over the padding mask (TransformerBlock
// "encoder") -> for pretraining, the lm_head and the output layer tied to the word embeddings
// with its own bias (masked-LM loss) and the pooler with the binary sentence-order head; for
// finetuning (Megatron's legacy Classification / MultipleChoice), the pooler with a task head.
// Pretraining pipelines: the first stage embeds, the last holds the heads (with its own copy of
// tied word embeddings), each stage its share of the encoder's layers.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "bert_config.h"
#include "bert_heads.h"
#include "mt/backend.h"
#include "mt/model.h"
#include "mt/model_stage.h"
#include "mt/nn/embedding.h"
#include "mt/nn/output_loss.h"
#include "mt/nn/tensor_parallel.h"
#include "mt/nn/transformer_block.h"

namespace mt::plugins::bert {

struct BertActivations final : Activations {
    nn::Embedding::Saved embedding;
    nn::TransformerBlock::Saved encoder;
    LmHead::Saved lm_head;
    nn::OutputLoss::Saved output;
    Pooler::Saved pooler;
    PooledHead::Saved head;  // the binary head, or the task head
    int64_t choices = 0;     // multiple choice: choices per question
};

// Not thread-safe, not movable (the tied output layer points at the embedding).
class BertModel final : public Model {
  public:
    // This rank's parameters allocated (zero) in `dtype` (f32, bf16, f16; f64 for gradient
    // checks). Throws mt::Error for sizes that do not split over the tensor-parallel ranks (the
    // sequence too with --sequence-parallel), and for a task head under pipeline parallelism.
    BertModel(const BertConfig& config, const BuildContext& context, DType dtype = DType::f32);
    BertModel(const BertModel&) = delete;
    BertModel& operator=(const BertModel&) = delete;

    // Megatron-core's state-dict order: embedding, encoder, lm_head, output_layer, binary_head,
    // pooler (a task model: embedding, encoder, pooler, its head).
    std::vector<nn::Parameter*> parameters() override;
    void initialize(uint64_t seed) override;
    // Pretraining batch (pretrain_bert.py's get_batch): "text", "types", "labels" (-1 where not
    // masked), "padding_mask", "loss_mask" (i64 [B, T]), "is_random" (i64 [B]); returns "lm loss"
    // (per-token, over loss_mask) and, with the binary head, "sop loss" (per sample), each the
    // micro-batch's mean as Megatron reports it. Task batch: "text", "types", "padding_mask"
    // (i64 [B, T], or [B, C, T] for multiple choice) and "label" (i64 [B]); returns "lm loss",
    // the cross-entropy per sample (Megatron's finetuning reports it so).
    Losses forward(const Batch& batch, nn::DropoutContext& dropout,
                   std::unique_ptr<Activations>* saved) override;
    void backward(const std::vector<Tensor>& dlosses, const Activations& saved) override;
    void set_grad_ready_hook(GradReadyHook hook) override { grad_ready_ = std::move(hook); }
    StageTensor stage_tensor(int64_t micro_batch_size, int64_t seq_length) const override;
    double training_flops(int64_t samples) const override;
    // Task models: the head's logits f32 [B, classes] or [B, choices].
    Tensor predict(const Batch& batch) override;
    int64_t max_positions() const override { return config_.transformer.max_position_embeddings; }

    const BertConfig& config() const { return config_; }

  private:
    // The encoder's output (B', T, H) for the batch's text, token types and padding (multiple
    // choice flattened to B' = B C rows).
    Tensor encode(const Batch& batch, nn::DropoutContext& dropout, BertActivations* acts) const;
    // The heads' losses over the encoder's output h (the last stage).
    Losses heads_forward(const Tensor& h, const Batch& batch, nn::DropoutContext& dropout,
                         BertActivations& acts, bool keep) const;
    // Their backward: the gradient of h.
    Tensor heads_backward(const std::vector<Tensor>& dterms, const BertActivations& acts);

    BertConfig config_;
    DType dtype_;
    Backend* backend_;
    nn::TensorParallel tp_;
    nn::TransformerConfig layer_;
    Communicator* embedding_group_;  // first and last pipeline stage (null on the others)
    ModelStage stage_;
    std::optional<nn::Embedding> embedding_;  // first stage
    nn::TransformerBlock encoder_;
    std::optional<LmHead> lm_head_;  // these on the last stage
    std::optional<nn::OutputLoss> output_;
    std::optional<Pooler> pooler_;
    std::optional<PooledHead> head_;  // binary, classification or multiple-choice
    GradReadyHook grad_ready_;
};

}  // namespace mt::plugins::bert
