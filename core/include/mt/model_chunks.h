// ModelChunks: the model chunks one pipeline rank holds with virtual stages (Megatron's list of
// model modules under --num-layers-per-virtual-pipeline-stage): chunk c holds the layers of
// virtual stage c·pp + rank. The optimizer, the gradient buffer and checkpoints see their
// parameters together; the interleaved schedule runs each chunk's forward and backward.
#pragma once

#include <memory>
#include <vector>

#include "mt/api.h"
#include "mt/model.h"

namespace mt {

class MT_API ModelChunks final : public Model {
  public:
    explicit ModelChunks(std::vector<std::unique_ptr<Model>> chunks);

    std::vector<nn::Parameter*> parameters() override;  // chunk 0's, then chunk 1's, ...
    std::vector<nn::Parameter*> buffers() override;     // the same
    void initialize(uint64_t seed) override;
    // mt::Error: a chunk runs on its own (pipeline_chunks()).
    Losses forward(const Batch& batch, nn::DropoutContext& dropout,
                   std::unique_ptr<Activations>* saved) override;
    void backward(const std::vector<Tensor>& dlosses, const Activations& saved) override;
    void set_grad_ready_hook(GradReadyHook hook) override;  // every chunk's
    StageTensor stage_tensor(int64_t micro_batch_size, int64_t seq_length) const override;
    double training_flops(int64_t samples) const override;  // the whole model's, as each chunk's
    std::vector<Model*> pipeline_chunks() override;

  private:
    std::vector<std::unique_ptr<Model>> chunks_;
};

// The model of this rank's pipeline stage: `family`'s model built for `context`, or with
// virtual stages (context.parallel.config().virtual_stages > 1) one chunk per virtual stage.
MT_API std::unique_ptr<Model> build_stage_model(const ModelFamily& family, const ModelArgs& args,
                                                const BuildContext& context);

}  // namespace mt
