// GradBuffer: Megatron's ParamAndGradBuffer for data parallelism. The gradients of a model's
// parameters live in one contiguous f32 buffer, in backward order, cut into buckets that are
// summed over the data-parallel group (all-reduce; with the distributed optimizer, reduce-
// scatter so each rank keeps its shard), as they fill during backward or all at the end (in
// bf16 with --grad-reduce-in-bf16: DataParallelConfig::reduce_dtype). The
// caller scales each rank's gradients by 1/dp (the trainer does it in the loss's seed, as
// Megatron's gradient_scaling_factor), so the sum is the average without a pass over the buffer.
// With several distributed-optimizer instances the reduce-scatter runs within an instance (a
// block of consecutive ranks of the group) and each shard is then all-reduced across them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "mt/api.h"
#include "mt/communicator.h"
#include "mt/parallel/buffer_layout.h"
#include "mt/tensor.h"

namespace mt::nn {
struct Parameter;
}

namespace mt::parallel {

class ParallelState;

class MT_API GradBuffer {
  public:
    // One piece of a parameter inside this rank's shard of the buffer: elements
    // [param_begin, param_end) of the flattened parameter.
    struct ShardPiece {
        nn::Parameter* param = nullptr;
        int64_t param_begin = 0, param_end = 0;
        int64_t buffer_begin = 0;  // where param_begin lies in the buffer
    };

    // Re-points every parameter's grad (and, with the distributed optimizer, its value, whose
    // contents are kept) at a view of the buffers. Parameters must be contiguous f32 and
    // outlive the buffer. Collective over dp (splits it into instances when the config has
    // several).
    GradBuffer(const std::vector<nn::Parameter*>& params, Communicator& dp,
               const DataParallelConfig& config);
    ~GradBuffer();
    GradBuffer(const GradBuffer&) = delete;
    GradBuffer& operator=(const GradBuffer&) = delete;

    void zero_grads();
    // With --overlap-grad-reduce, during the backward of the last micro-batch: `param`'s grad is
    // final; a bucket whose parameters are all final starts its reduction. Otherwise nothing.
    void grad_ready(const nn::Parameter& param);
    // Every bucket reduced (started now, or waited for): the grads summed over the group, or
    // with the distributed optimizer this rank's shard of them (the rest is stale).
    void finish_grad_sync();
    // The distributed optimizer: every rank's updated shard of the values gathered into all.
    void gather_params();
    // Called with each bucket's index and this rank's grads in it (f32) as its reduction starts
    // (with one rank, when it would): the re-run engine's local gradient checks.
    void set_before_reduce(std::function<void(int64_t bucket, const Tensor& grads)> hook) {
        before_reduce_ = std::move(hook);
    }

    bool distributed_optimizer() const { return config_.distributed_optimizer; }
    // What the optimizer updates on this rank: the parameters given, or with the distributed
    // optimizer one parameter per piece of shard(), named after its parameter (with its shard
    // spec, TP rank and decay flag), its value and grad 1-D views of the buffers; an
    // optim::Optimizer over them keeps state for this rank's shard only.
    const std::vector<nn::Parameter*>& optimizer_parameters() const { return optimized_; }
    // This rank's shard with the distributed optimizer (every bucket's part), else empty;
    // optimizer_parameters()[i] is shard()[i].
    const std::vector<ShardPiece>& shard() const { return shard_; }
    // The buffers ([numel]: grads f32, values in the parameters' dtype); values only with the
    // distributed optimizer.
    const Tensor& grads() const { return grads_; }
    const Tensor& values() const { return values_; }
    int64_t num_buckets() const { return int64_t(buckets_.size()); }
    // Where `param`'s elements start in the buffers.
    int64_t offset_of(const nn::Parameter& param) const;
    // The elements of `param` (shaped like it), or of a shard piece (1-D), in a tensor laid out
    // as the buffers (the buffers themselves, or a buffer-shaped optimizer state).
    Tensor view(const Tensor& buffer_shaped, const nn::Parameter& param) const;
    Tensor view(const Tensor& buffer_shaped, const ShardPiece& piece) const;
    // The ranks the buffer is sharded over: the whole group, or this rank's instance.
    Communicator& group() const { return *dp_; }
    // This rank's distributed-optimizer instance (0 with one): the shards of instance 0 are the
    // ones a checkpoint writes.
    int instance() const { return across_ ? across_->rank() : 0; }

    // `whole` ([numel], laid out as the buffer, any dtype) holds this rank's shard; fills in every
    // other rank's (all-gather per bucket). gather_params() does this to the values; saving the
    // distributed optimizer's state does it to its moments.
    void all_gather_shards(Tensor& whole) const;

  private:
    struct Bucket {
        int64_t begin = 0, end = 0;  // buffer elements, end padded to divide among the ranks
        std::vector<const nn::Parameter*> params;
        int64_t pending = 0;  // params not yet final in this backward
        std::unique_ptr<CommRequest> request;
        Tensor scratch;  // distributed optimizer: the reduce-scatter's output
        Tensor wire;     // the bucket in config.reduce_dtype while it is reduced (not f32)
    };
    void start(Bucket& bucket);
    // Elements [begin, end) of this rank's shard of bucket b.
    std::pair<int64_t, int64_t> rank_range(const Bucket& b) const;

    Communicator* whole_;  // the data-parallel group given
    // With several instances: this rank's instance, and the ranks of the other instances that
    // hold the same shard.
    std::unique_ptr<Communicator> within_, across_;
    Communicator* dp_;  // what the buffer is sharded over: *whole_ or *within_
    DataParallelConfig config_;
    Tensor grads_, values_;
    std::vector<Bucket> buckets_;
    std::vector<std::pair<const nn::Parameter*, size_t>> bucket_of_;  // sorted by pointer
    std::vector<ShardPiece> shard_;
    std::vector<nn::Parameter> shard_params_;  // the distributed optimizer's, one per piece
    std::vector<nn::Parameter*> optimized_;
    std::function<void(int64_t, const Tensor&)> before_reduce_;
};

// A model's gradient buffers on this rank and what its optimizer updates.
struct GradBuffers {
    // The dense parameters' over the data- and context-parallel ranks together (Megatron's
    // data-parallel group with context parallelism), with data or context parallelism or the
    // distributed optimizer; else null.
    std::unique_ptr<GradBuffer> dense;
    // The MoE experts' with the distributed optimizer, over the ranks that hold the same
    // experts (Megatron's expert-parallel buffers over the expert-data-parallel group); else
    // null, and the trainer all-reduces the experts' grads over that group itself.
    std::unique_ptr<GradBuffer> experts;
    // The distributed optimizer's shard pieces (dense, then experts'), or the parameters given.
    std::vector<nn::Parameter*> optimized;
};

// The buffers of `params` (a model's, in its order) for this rank of `state`.
MT_API GradBuffers make_grad_buffers(const std::vector<nn::Parameter*>& params,
                                     const ParallelState& state, const DataParallelConfig& config);

}  // namespace mt::parallel
