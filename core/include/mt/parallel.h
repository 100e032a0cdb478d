// ParallelStrategy: the pipeline schedules (Megatron's forward_backward_func): how one training
// iteration runs the forward and backward passes of its micro-batches on this rank's stage.
// No pipelining runs each micro-batch's forward then backward; 1F1B (PipeDream-Flush) fills the
// pipeline with warm-up forwards, alternates one forward and one backward in the steady state
// and drains with cool-down backwards, the hidden states and their gradients passed between
// neighbouring stages.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "mt/api.h"
#include "mt/model.h"
#include "mt/nn/dropout.h"

namespace mt {

class Communicator;
namespace train {
class ScheduleTrace;
class Timers;
}  // namespace train

// One iteration's work for a schedule.
struct ForwardBackward {
    Model& model;  // built for this rank's pipeline stage
    nn::DropoutContext& dropout;
    int64_t micro_batches = 1;
    int64_t micro_batch_size = 1;
    // The next micro-batch (every stage reads the same ones, in order).
    std::function<Batch()> next_batch;
    // The last stage's loss terms of a micro-batch -> the gradients backward starts from (the
    // trainer also accumulates the losses here); ignored in forward_only.
    std::function<std::vector<Tensor>(const Losses&)> loss_grads;
    // Called just before the iteration's last backward on this stage (the trainer sets its
    // grad-ready hook there: data parallelism may start reducing then).
    std::function<void()> before_last_backward;
    Communicator* pipeline = nullptr;       // the pipeline-parallel group; null: one stage
    bool forward_only = false;              // evaluation: forwards only, nothing kept
    train::ScheduleTrace* trace = nullptr;  // records each step's times when set
    train::Timers* timers = nullptr;        // --timing-log-level's level-2 timers when set
};

class MT_API ParallelStrategy {
  public:
    virtual ~ParallelStrategy() = default;
    virtual std::string_view name() const = 0;  // "no-pipelining", "1f1b"
    virtual void forward_backward(const ForwardBackward& work) const = 0;
};

// The schedule Megatron's get_forward_backward_func picks for `pipeline_stages`.
MT_API std::unique_ptr<ParallelStrategy> make_schedule(int pipeline_stages);

}  // namespace mt
