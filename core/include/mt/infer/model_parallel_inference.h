// Inference on a model split over ranks (tensor and pipeline parallelism, as Megatron's text
// generation server runs under torchrun): rank 0 leads: its tool (the REST server, the
// prompts, the evaluation) calls a ModelParallelLeader like any model, and each call is
// broadcast to the other ranks, which run follow_leader(): the same call on their own part of
// the model, in step, until the leader goes. Each inference state the leader makes has a twin on
// every follower (named by a number), dropped when the leader's goes, so a continuous batch's
// requests keep theirs side by side.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>

#include "mt/api.h"
#include "mt/model.h"

namespace mt {
class Communicator;
}
namespace mt::parallel {
class ParallelState;
}

namespace mt::infer {

class MT_API ModelParallelLeader final : public Model {
  public:
    // `local`: rank 0's part of the model; `group`: every rank holding a part (rank 0 of it
    // leads).
    ModelParallelLeader(Model& local, Communicator& group);
    // Tells the followers to stop (states it made that outlive it then release nothing).
    ~ModelParallelLeader() override;

    Tensor logits(const Tensor& tokens, nn::InferenceState* cache, int64_t keep_last) override;
    bool can_decode_rows() const override { return local_.can_decode_rows(); }
    Tensor decode_rows(const Tensor& tokens, std::span<nn::InferenceState* const> states,
                       int64_t keep_last) override;
    std::unique_ptr<nn::InferenceState> make_inference_state(int64_t batch,
                                                             int64_t capacity) const override;
    // This rank's part, made and measured here alone (no twin is made on the followers).
    int64_t inference_state_bytes(int64_t batch, int64_t capacity) const override {
        return local_.inference_state_bytes(batch, capacity);
    }
    int64_t max_positions() const override { return local_.max_positions(); }
    bool has_encoder() const override { return local_.has_encoder(); }
    // Encodes into `state` (the followers' twin of it too).
    void encode(const Tensor& tokens, const Tensor& lengths, nn::InferenceState& state) override;

    // Training is not led: mt::Error.
    std::vector<nn::Parameter*> parameters() override;
    void initialize(uint64_t seed) override;
    Losses forward(const Batch& batch, nn::DropoutContext& dropout,
                   std::unique_ptr<Activations>* saved) override;
    void backward(const std::vector<Tensor>& dlosses, const Activations& saved) override;
    double training_flops(int64_t samples) const override;

  private:
    // The number the followers know `state` by (one this leader made and still holds).
    int64_t twin(const nn::InferenceState* state) const;

    Model& local_;
    Communicator& group_;
    mutable std::unordered_map<nn::InferenceState*, int64_t> twins_;
    mutable int64_t next_twin_ = 0;
};

// A follower's loop: runs each call the leader broadcasts on `local` until the leader stops.
MT_API void follow_leader(Model& local, Communicator& group);

// The ranks of an inference job, all of them split into `tensor_parallel` x
// `pipeline_parallel` x `expert_parallel` (a MoE model's experts spread over the last, its dense
// weights the same on each of those; inference has no data parallelism otherwise: mt::Error
// naming the flags when the job's size differs); started alone with all 1, a group of one.
MT_API std::unique_ptr<parallel::ParallelState> inference_ranks(int tensor_parallel,
                                                                int pipeline_parallel,
                                                                int expert_parallel = 1);

// Runs `lead` with the model: in one process with `local` itself; else on rank 0 of `world`
// with a ModelParallelLeader over it while the other ranks follow.
MT_API void lead_or_follow(Communicator& world, Model& local,
                           const std::function<void(Model&)>& lead);

}  // namespace mt::infer
