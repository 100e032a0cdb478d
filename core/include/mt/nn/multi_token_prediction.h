// MultiTokenPrediction: Megatron-core's MultiTokenPredictionBlock (--mtp-num-layers, DeepSeek-V3's
// multi-token prediction). Depth k (1-based) predicts the token k + 1 places ahead: the inputs,
// labels and loss mask move k places left (the vacated places 0, as Megatron's roll_tensor
// leaves them), and
//   h_k = final_layernorm(layer(eh_proj([enorm(embedding(tokens << k)) | hnorm(h_{k-1})])))
// with h_0 the decoder's output after its final norm; the model's output layer gives each depth's
// per-token losses over labels << k. The embedding and the output layer are the model's own
// (shared); the depths' parameters sit under "mtp.layers.<k-1>." ("enorm", "hnorm", "eh_proj",
// "transformer_layer", "final_layernorm").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/model.h"
#include "mt/nn/attention_mask.h"
#include "mt/nn/dropout.h"
#include "mt/nn/embedding.h"
#include "mt/nn/layer_spec.h"
#include "mt/nn/linear.h"
#include "mt/nn/norm.h"
#include "mt/nn/output_loss.h"
#include "mt/nn/transformer_config.h"
#include "mt/nn/transformer_layer.h"

namespace mt::nn {

// The reported name of depth k's loss (Megatron's MTPLossLoggingHelper): "mtp_<k> loss".
MT_API std::string mtp_loss_name(int64_t depth);

class MT_API MultiTokenPrediction {
  public:
    struct DepthSaved {
        Embedding::Saved embedding;
        Norm::Saved enorm, hnorm, final_norm;
        Linear::Saved eh_proj;
        TransformerLayer::Saved layer;
        OutputLoss::Saved output;
    };
    struct Saved {
        std::vector<DepthSaved> depths;
    };

    // `depths` layers, each a transformer layer as `spec` says (Megatron takes the decoder's last
    // layer's spec) with `layer`'s settings. loss_scaling_factor: --mtp-loss-scaling-factor, the
    // weight of the depths' mean loss in the loss backpropagated.
    MultiTokenPrediction(int64_t depths, double loss_scaling_factor, const TransformerConfig& layer,
                         const LayerSpec& spec, Backend& backend);
    MultiTokenPrediction(const MultiTokenPrediction&) = delete;
    MultiTokenPrediction& operator=(const MultiTokenPrediction&) = delete;

    // hidden: the decoder's output (B, T, H) (sequence parallel: this rank's part); tokens and
    // labels (B, T) integers; loss_mask (B, T) f32 on the backend. Returns one loss term per
    // depth ("mtp_1 loss", ...): the per-token losses over the moved labels, the moved loss mask,
    // reported as the mean of the micro-batches' means among the auxiliary losses, and weighted
    // by loss_scaling_factor / depths in the loss backpropagated (Megatron's MTPLossAutoScaler).
    Losses forward(const Tensor& hidden, const Tensor& tokens, const Tensor& labels,
                   const Tensor& loss_mask, const Embedding& embedding, const OutputLoss& output,
                   DropoutContext& ctx, Saved* saved, const AttentionMask& mask) const;
    // dlosses: one per depth, shaped like its losses. Returns the gradient of the decoder's
    // output; the embedding's and output layer's grads and every depth parameter's +=.
    Tensor backward(const std::vector<Tensor>& dlosses, const Saved& saved, Embedding& embedding,
                    OutputLoss& output);

    // In Megatron-core's state-dict order, depth after depth.
    void collect_parameters(std::vector<Parameter*>& out);
    void collect_buffers(std::vector<Parameter*>& out);
    int64_t depths() const { return int64_t(depths_.size()); }

  private:
    struct Depth {
        Norm enorm, hnorm;
        Linear eh_proj;
        std::unique_ptr<TransformerLayer> layer;
        Norm final_norm;
    };
    std::vector<std::unique_ptr<Depth>> depths_;
    double loss_scaling_factor_;
    int64_t hidden_;
    Backend* backend_;
    TensorParallel tp_;
};

}  // namespace mt::nn
