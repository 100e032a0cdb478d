// GptModel: Megatron-core's GPTModel (and MambaModel: its hybrid stack) on the CPU backend:
// embedding (word + learned positions, embedding dropout) -> num_layers pre-norm layers -> final
// norm -> output layer fused with per-token cross-entropy over the padded vocabulary.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "hybrid_args.h"
#include "mt/backend.h"
#include "mt/model.h"
#include "mt/model_stage.h"
#include "mt/nn/embedding.h"
#include "mt/nn/moe/tracker.h"
#include "mt/nn/multi_token_prediction.h"
#include "mt/nn/norm.h"
#include "mt/nn/output_loss.h"
#include "mt/nn/tensor_parallel.h"
#include "mt/nn/transformer_args.h"
#include "mt/nn/transformer_block.h"
#include "mt/parallel/pipeline_layers.h"

namespace mt::plugins::gpt {

// What GptModel::forward keeps for its backward.
struct GptActivations final : Activations {
    nn::Embedding::Saved embedding;
    nn::TransformerBlock::Saved decoder;
    nn::OutputLoss::Saved output;
    nn::MultiTokenPrediction::Saved mtp;
};

// Not thread-safe: forward/backward of one instance run one at a time (backward writes grads).
// The model must not move after construction (the tied output layer points at the embedding),
// hence no copy or move.
class GptModel final : public Model {
  public:
    // This rank's parameters (context.parallel.tp() splits them) allocated (zero) in `dtype`:
    // f32 for training; f64 lets tests check gradients with finite differences. Throws
    // mt::Error for another dtype, or for sizes that do not split over the tensor-parallel
    // ranks (query groups, vocabulary, FFN, sequence with --sequence-parallel). With `hybrid`,
    // Megatron's MambaModel: the layers it allocates (Mamba, attention-only or MLP-only) and
    // the final norm "decoder.final_norm".
    GptModel(const nn::TransformerArgs& config, const BuildContext& context,
             DType dtype = DType::f32, std::optional<HybridArgs> hybrid = {});
    // The whole model in one CPU process.
    explicit GptModel(const nn::TransformerArgs& config, DType dtype = DType::f32)
        : GptModel(config, single_process_context(), dtype) {}
    GptModel(const GptModel&) = delete;
    GptModel& operator=(const GptModel&) = delete;

    // In Megatron-core's state-dict order: the model's one parameter description (the
    // family's parameters() lists these, whole).
    std::vector<nn::Parameter*> parameters() override;
    std::vector<nn::Parameter*> buffers() override;
    // Megatron's scheme (nn::initialize_megatron); a last pipeline stage's copy of tied word
    // embeddings then takes the first stage's values.
    void initialize(uint64_t seed) override;
    StageTensor stage_tensor(int64_t micro_batch_size, int64_t seq_length) const override;
    // batch: "tokens", "labels" (i64 [B, T]), "position_ids" (i64 [B, T], optional),
    // "document_start" (optional), "loss_mask" (f32 [B, T], optional). With context parallelism
    // the batch holds whole sequences and this rank computes its two chunks of each.
    // Returns "lm loss": the unmasked per-token losses [B, T] in the model's dtype (f32 for a
    // half model) and the batch's "loss_mask" (all ones without one); with --mtp-num-layers then
    // the multi-token prediction depths' terms ("mtp_1 loss", ...).
    Losses forward(const Batch& batch, nn::DropoutContext& dropout,
                   std::unique_ptr<Activations>* saved) override;
    // dlosses: one [B, T] tensor per loss term, in the losses' dtype; saved from this model's
    // forward.
    void backward(const std::vector<Tensor>& dlosses, const Activations& saved) override;
    void set_grad_ready_hook(GradReadyHook hook) override { grad_ready_ = std::move(hook); }
    double training_flops(int64_t samples) const override;
    // Over a state, a prompt longer than kPrefillPiece positions goes through in pieces of that
    // many (llama.cpp's micro-batches): a long context costs the activations of one piece beyond
    // its state, not those of the whole prompt.
    Tensor logits(const Tensor& tokens, nn::InferenceState* state, int64_t keep_last) override;
    static constexpr int64_t kPrefillPiece = 1024;
    // Without context parallelism and with layers that decode rows (all but MoE layers with an
    // expert capacity, whose dropped tokens depend on the batch); a pipeline stage passes the
    // rows on as logits() passes a batch.
    bool can_decode_rows() const override;
    Tensor decode_rows(const Tensor& tokens, std::span<nn::InferenceState* const> states,
                       int64_t keep_last) override;
    std::unique_ptr<nn::InferenceState> make_inference_state(int64_t batch,
                                                             int64_t capacity) const override;
    int64_t max_positions() const override { return config_.max_position_embeddings; }
    nn::MoeTracker* moe_tracker() override { return moe_tracker_.get(); }
    void set_is_first_microbatch() override {
        if (fp8_scaling_) fp8_scaling_->start_pass();
    }

    const nn::TransformerArgs& config() const { return config_; }

  private:
    bool delayed_fp8() const {
        return fp8_scaling_ && config_.fp8.config.recipe == nn::Fp8Recipe::delayed;
    }
    // logits() of one piece.
    Tensor piece_logits(const Tensor& tokens, nn::InferenceState* state, int64_t keep_last);
    // The learned absolute positions of T tokens in each row from pasts[b] on (undefined for
    // other position embeddings, which take none).
    Tensor learned_positions(std::span<const int64_t> pasts, int64_t T) const;
    // This stage's input: the first embeds the tokens (at `positions`, when defined), the
    // others receive the hidden states (B, T, H) from the stage before.
    Tensor stage_input(const Tensor& tokens, const Tensor& positions);
    // After this stage's layers: hidden states on to the next stage, or the last keep_last
    // positions' logits (0: all) back to the first; the first stage's rank returns them.
    Tensor stage_logits(Tensor h, int64_t keep_last);

    nn::TransformerArgs config_;
    std::optional<HybridArgs> hybrid_;
    DType dtype_;
    Backend* backend_;
    nn::TensorParallel tp_;
    nn::ContextParallel cp_;
    Communicator* pp_;               // the pipeline-parallel group
    Communicator* embedding_group_;  // first and last stage (null on the others)
    // The pipeline stage built (the whole model without pipelining): the first embeds, the last
    // computes the final norm, output layer and loss.
    ModelStage stage_;
    std::shared_ptr<nn::MoeTracker> moe_tracker_;  // a MoE model's; null for a dense one
    std::shared_ptr<nn::Fp8Scaling> fp8_scaling_;  // with --fp8-format: its passes and meters
    // The first stage's, and with multi-token prediction the last stage's (its copy of the
    // first stage's word embeddings when pipelined).
    std::optional<nn::Embedding> embedding_;
    nn::TransformerBlock decoder_;
    std::optional<nn::MultiTokenPrediction> mtp_;  // last stage, with --mtp-num-layers
    std::optional<nn::OutputLoss> output_;         // last stage
    GradReadyHook grad_ready_;
};

}  // namespace mt::plugins::gpt
