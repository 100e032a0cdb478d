// ParallelStrategy: the pipeline schedules (Megatron's forward_backward_func): how one training
// iteration runs the forward and backward passes of its micro-batches on this rank's stage.
// No pipelining runs each micro-batch's forward then backward; 1F1B (PipeDream-Flush) fills the
// pipeline with warm-up forwards, alternates one forward and one backward in the steady state
// and drains with cool-down backwards, the hidden states and their gradients passed between
// neighbouring stages; interleaved 1F1B does the same over several model chunks per stage
// (virtual stages), which shrinks the bubble by their number.
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
    Model& model;  // built for this rank's pipeline stage (its model chunks, with virtual stages)
    nn::DropoutContext& dropout;
    int64_t micro_batches = 1;
    int64_t micro_batch_size = 1;
    // Tokens per sequence (0: the model's --seq-length; DeepSpeed's seqlen curriculum trains on
    // fewer): the hidden states the pipeline stages exchange.
    int64_t seq_length = 0;
    // The next micro-batch (every stage reads the same ones, in order).
    std::function<Batch()> next_batch;
    // The last stage's loss terms of a micro-batch -> the gradients backward starts from (the
    // trainer also accumulates the losses here); ignored in forward_only.
    std::function<std::vector<Tensor>(const Losses&)> loss_grads;
    // Called just before the iteration's last backward of each model chunk on this stage (the
    // trainer sets the chunk's grad-ready hook there: data parallelism may start reducing then).
    std::function<void(Model& chunk)> before_last_backward;
    // Called after each backward of a model chunk (the trainer rounds the grads accumulated so
    // far to Megatron's main_grad dtype there: --grad-reduce-in-bf16).
    std::function<void(Model& chunk)> after_backward;
    Communicator* pipeline = nullptr;       // the pipeline-parallel group; null: one stage
    bool forward_only = false;              // evaluation: forwards only, nothing kept
    train::ScheduleTrace* trace = nullptr;  // records each step's times when set
    train::Timers* timers = nullptr;        // --timing-log-level's level-2 timers when set
};

class MT_API ParallelStrategy {
  public:
    virtual ~ParallelStrategy() = default;
    virtual std::string_view name() const = 0;  // "no-pipelining", "1f1b", "interleaved-1f1b"
    virtual void forward_backward(const ForwardBackward& work) const = 0;
};

// The schedule Megatron's get_forward_backward_func picks for `pipeline_stages` with
// `virtual_stages` model chunks each, each chunk running `microbatch_group_size` micro-batches
// in a row (0: the pipeline size; --microbatch-group-size-per-virtual-pipeline-stage).
MT_API std::unique_ptr<ParallelStrategy> make_schedule(int pipeline_stages, int virtual_stages = 1,
                                                       int64_t microbatch_group_size = 0);

// One forward or backward of a pipelined schedule: a micro-batch on one model chunk.
struct PipelineSlot {
    int64_t micro_batch = 0;
    int chunk = 0;
    bool forward = true;
    bool operator==(const PipelineSlot&) const = default;
};

// The order in which `stage` of `stages` runs the forwards and backwards of `micro_batches`
// over `chunks` model chunks (Megatron's schedule table and warm-up count, as its
// convert_schedule_table_to_order writes it): the warm-up forwards, then one forward and one
// backward in turn, then the cool-down backwards; forward_only: the forwards alone. mt::Error
// for a micro-batch count the interleaved schedule refuses.
MT_API std::vector<PipelineSlot> pipeline_order(int64_t micro_batches, int chunks, int64_t group,
                                                int stages, int stage, bool forward_only);

}  // namespace mt
