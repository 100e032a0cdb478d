// Megatron's distributed-optimizer files in the `torch` format. With --use-distributed-optimizer
// model_optim_rng.pt's "optimizer" is DistributedOptimizer.state_dict() (the param groups,
// without parameter ids, each carrying the step), and the Adam state of the rank's parameters
// goes to distrib_optim.pt beside it, gathered as get_parameter_state_dp_zero does:
//   {'buckets_coalesced': True,
//    0: {(torch.float32, torch.float32): {'param', 'exp_avg', 'exp_avg_sq': f32 [numel_unpadded],
//                                         'numel_unpadded': int}}}
// the tensors laid out as the gradient buffer (mt/parallel/buffer_layout.h) with each bucket's
// end padding cut out. The layout follows from the parameters (the model state dict's order is
// Megatron's registration order; the model's buffers, a router's expert_bias, are not in it) and
// the saving run's args (data_parallel_size, overlap_grad_reduce, ddp_bucket_size). Under expert
// parallelism Megatron chains two optimizers and the file holds a list of their dicts:
// [the dense parameters' (over the data-parallel ranks), the experts' (the file's own experts,
// over the expert-data-parallel ranks)], None where the saving rank was not the optimizer's
// data-parallel rank 0 (the dense state is in expert-parallel rank 0's file only).
#pragma once

#include <string>

#include "mt/checkpoint.h"
#include "mt/checkpoint/reshard.h"
#include "mt/io/py_value.h"

namespace mt::plugins::torch_ckpt {

inline constexpr const char* kDistribOptimName = "distrib_optim.pt";

// True when the args say the distributed optimizer saved the state.
bool saved_by_distributed_optimizer(const CheckpointArgs& args);

// distrib_optim.pt's dict (or chained list) for one rank's state (its model tensors and
// optimizer moments). dense_state false: None for the chained dense optimizer's (an
// expert-parallel rank other than 0).
io::PyValue parameter_state_to_py(const CheckpointState& state, bool dense_state);

// Fills state.optimizer's moments (read from model_optim_rng.pt's param groups, moments not yet
// set) from distrib_optim.pt's dict; `file` names it in errors. Each parameter's 'param' slice
// must equal its model tensor (fp32 runs keep no other master weights), which catches a layout
// that is not the saving run's.
void parameter_state_from_py(const io::PyValue& root, CheckpointState& state,
                             const std::string& file);

// One gradient buffer's state as get_parameter_state_dp_zero gathers it (of a buffer of the
// weights' dtype and f32 gradients): its buckets one after another, each without its end
// padding, f32 [numel_unpadded] each.
struct BufferWorld {
    Tensor param, exp_avg, exp_avg_sq;
};
struct BufferMoments {
    Tensor exp_avg, exp_avg_sq, main_param;
};
// Per parameter of `model` (Megatron's registration order, one dtype) of a run whose `args` say
// the bucket settings, sharded over `dp` ranks: its moments in `world` and, for bf16 / f16
// weights, its f32 master. An f32 model's weights must equal 'param', a half one's be it rounded
// (which catches a layout that is not the saving run's). `file` names the source in errors.
std::vector<BufferMoments> buffer_moments(const BufferWorld& world, const NamedTensors& model,
                                          const CheckpointArgs& args, int64_t dp,
                                          const std::string& file);

// The other way: the world tensors of `model`'s buffer (as buffer_moments reads them) from each
// parameter's state (f32 values: a half model's masters, an f32 model's weights), and each
// bucket's size, padded and not.
struct BufferBuckets {
    BufferWorld world;
    std::vector<int64_t> numel, numel_unpadded;
};
BufferBuckets buffer_world(const NamedTensors& model, const std::vector<BufferMoments>& state,
                           const CheckpointArgs& args, int64_t dp);

// Megatron keys a gradient buffer's state by (param dtype, grad dtype): grads are f32 here.
io::PyValue buffer_dtype_key(DType param_dtype);

}  // namespace mt::plugins::torch_ckpt
