// core_v0.19's default layout of the distributed optimizer's state in torch_dist, dp_reshardable
// (megatron/core/optimizer/distrib_optimizer.py sharded_param_state_dp_reshardable): the
// gradient buffers' state bucket by bucket, each a flat f32 tensor
//   optimizer.distributed.dp_group_idx_<g>.gbuf_idx_<b>.dtype_(torch.<param>, torch.<grad>).
//       bucket_idx_<k>.<param|exp_avg|exp_avg_sq>
// of the bucket's unpadded size, the parameters of model-parallel rank g in it as its buffer
// places them (mt/parallel/buffer_layout.h: Megatron's registration order backwards, the padding
// between parameters kept, the bucket's end padding cut), each data-parallel rank's range a
// chunk; "param" holds the f32 values (an f32 run's weights). g is the rank in the tensor x
// pipeline group (tp + TP pp); under expert parallelism Megatron chains a second optimizer for the
// experts, whose keys (and the dense part's) get "chained_<i>." in front and whose g is the rank
// in the expert-tensor x expert x pipeline group. Beside them ShardedObjects ".optimizer"
// (DistributedOptimizer.state_dict(): the param groups, each with the step), ".per_bucket_numel"
// and ".per_bucket_numel_unpadded"; common.pt's 'optimizer' keeps only
// {'param_state_sharding_type': 'dp_reshardable'}.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "dcp_metadata.h"
#include "mt/checkpoint.h"
#include "mt/checkpoint/reshard.h"
#include "mt/io/py_value.h"
#include "torch_dist_keys.h"

namespace mt::plugins::torch_dist {

inline constexpr const char* kBucketStatePrefix = "optimizer.distributed.";

struct BucketState {
    // DistributedOptimizer.state_dict() with the layout's name, where the other layouts keep
    // common.pt's 'optimizer': {'optimizer': {'param_groups'}, 'param_state_sharding_type'}.
    io::PyValue optimizer;
    // "<exp_avg|exp_avg_sq|fp32_param>.<core name>" per parameter, whole (masters only of
    // bf16 / f16 weights), as the other layouts' moments are read.
    NamedTensors moments;
};

// The state of the checkpoint in `iter` (its index `meta`) for `model` (its tensors whole,
// buffers included) of a run with `args`; each rank's pieces are cut as the model's stored chunks
// are. Layouts not read yet (virtual pipeline stages, layers other than GPT's) are mt::Errors
// saying "not supported yet: ..."; a bucket whose size or values do not match the model's layout
// is an mt::Error naming the rank.
BucketState read_bucket_state(const std::filesystem::path& iter, const DcpMetadata& meta,
                              const NamedTensors& model, const CheckpointArgs& args);

// Why the layout cannot be written for a run with `args` whose parameters are `names` (those
// read_bucket_state refuses), or empty.
std::string bucket_layout_refusal(const CheckpointArgs& args,
                                  const std::vector<std::string>& names);

// What one rank writes of the layout for `optimizer` (saved in it: OptimizerCheckpoint::buckets
// says where the rank stands) of a run with `args`: its range of each bucket's tensors (each
// part's data-parallel rank r the elements [r, r + 1) x numel / dp, the bucket's end padding
// cut), and from each part's data-parallel rank 0 the ShardedObjects beside them (key, value).
struct BucketWrite {
    std::vector<StoredTensor> tensors;
    std::vector<std::pair<std::string, io::PyValue>> objects;
};
BucketWrite bucket_state_to_write(const OptimizerCheckpoint& optimizer, const CheckpointArgs& args);

}  // namespace mt::plugins::torch_dist
