// T5Model: Megatron-core's T5Model with the local or Transformer Engine layer specs: one
// embedding (words + learned absolute positions, dropout) for both stacks; the encoder
// (bidirectional self-attention over its tokens, the MLP; "encoder.final_layernorm"); the
// decoder (causal self-attention, pre_cross_attn_layernorm + cross-attention over the encoder's
// output, the MLP; "decoder.final_layernorm"); the LM head: the word embeddings as output weight
// with "lm_head.output_layer.bias" (untied: "lm_head.output_layer.weight", no bias, as
// T5LMHead builds it). With relative position embeddings each stack's self-attentions add the
// bias of its own table ("encoder_relative_pos_emb", bidirectional; "decoder_relative_pos_emb",
// causal) instead of the learned absolute positions.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "mt/backend.h"
#include "mt/model.h"
#include "mt/nn/embedding.h"
#include "mt/nn/output_loss.h"
#include "mt/nn/relative_position_bias.h"
#include "mt/nn/tensor_parallel.h"
#include "mt/nn/transformer_block.h"
#include "t5_config.h"

namespace mt::plugins::t5 {

struct T5Activations final : Activations {
    nn::Embedding::Saved encoder_embedding, decoder_embedding;
    nn::TransformerBlock::Saved encoder, decoder;
    nn::OutputLoss::Saved output;
    // The encoder output's gradient, which the decoder's cross-attentions add up in the backward.
    mutable Tensor encoder_grad;
    // Relative position embeddings: each stack's attention bias gradient, its layers' sum.
    Tensor encoder_bias_grad, decoder_bias_grad;
};

// Not thread-safe, not movable (the tied output layer points at the embedding).
class T5Model final : public Model {
  public:
    // This rank's parameters allocated (zero) in `dtype` (f32, bf16, f16; f64 for gradient
    // checks). Throws mt::Error for layouts T5 does not take (pipeline or context parallelism)
    // and sizes that do not split.
    T5Model(const T5Config& config, const BuildContext& context, DType dtype = DType::f32);
    T5Model(const T5Model&) = delete;
    T5Model& operator=(const T5Model&) = delete;

    // Megatron-core's order: embedding, encoder, decoder, lm_head.
    std::vector<nn::Parameter*> parameters() override;
    void initialize(uint64_t seed) override;
    // pretrain_t5.py's batch (get_batch): "text_enc" [B, Te], "text_dec", "labels" (-1 past the
    // target), "loss_mask", "dec_mask" [B, Td] and "enc_mask" [B, Te], i64 (the masks 1 on the
    // tokens, a prefix of each row); returns "lm loss" per decoder position over loss_mask,
    // token-weighted (pretrain_gpt.py's loss_func, which pretrain_t5.py uses).
    Losses forward(const Batch& batch, nn::DropoutContext& dropout,
                   std::unique_ptr<Activations>* saved) override;
    void backward(const std::vector<Tensor>& dlosses, const Activations& saved) override;
    void set_grad_ready_hook(GradReadyHook hook) override { grad_ready_ = std::move(hook); }
    double training_flops(int64_t samples) const override;
    int64_t max_positions() const override { return config_.transformer.max_position_embeddings; }

    // Inference (megatron-core's T5 inference wrapper): encode() runs the encoder once per
    // request into the state; logits() then runs decoder tokens at positions state->length() ..
    // over it (keys and values of the self-attention cached, the cross-attention's projected at
    // the first step).
    bool has_encoder() const override { return true; }
    void encode(const Tensor& tokens, const Tensor& lengths, nn::InferenceState& state) override;
    Tensor logits(const Tensor& tokens, nn::InferenceState* state, int64_t keep_last = 0) override;
    std::unique_ptr<nn::InferenceState> make_inference_state(int64_t batch,
                                                             int64_t capacity) const override;

    const T5Config& config() const { return config_; }

  private:
    T5Config config_;
    Backend* backend_;
    nn::TensorParallel tp_;
    nn::TransformerConfig layer_;
    nn::Embedding embedding_;
    std::optional<nn::RelativePositionBias> encoder_bias_, decoder_bias_;  // relative positions
    nn::TransformerBlock encoder_, decoder_;
    nn::OutputLoss output_;
    GradReadyHook grad_ready_;
};

}  // namespace mt::plugins::t5
