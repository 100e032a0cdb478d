// Parameter construction and name composition.
#include "mt/nn/parameter.h"

#include "mt/checkpoint/reshard.h"

namespace mt::nn {

DType upcast_dtype(DType value_dtype) {
    return value_dtype == DType::f16 || value_dtype == DType::bf16 ? DType::f32 : value_dtype;
}

Parameter make_parameter(Backend& backend, std::string name, const Shape& whole_shape, DType dtype,
                         ShardSpec shard, bool weight_decay, const TensorParallel& tp) {
    const Shape local = shard_shape(whole_shape, shard, tp.size(), "parameter '" + name + "'");
    Parameter p;
    p.name = std::move(name);
    p.value = backend.zeros(local, dtype);
    p.grad = backend.zeros(local, upcast_dtype(dtype));
    p.shard = shard;
    p.weight_decay = weight_decay;
    p.whole_shape = whole_shape;
    p.mup_hidden = whole_shape.size() >= 2;
    p.tp_rank = tp.rank();
    p.tp_size = tp.size();
    return p;
}

Tensor piece_of_whole(const Parameter& p, const Tensor& t) {
    if (p.value.shape() == p.whole_shape || t.shape() != p.whole_shape) return t;
    return shard_tensor(t, p.shard, p.tp_size, p.tp_rank);
}

ParameterInfo describe(const Parameter& p) {
    return {p.name, p.whole_shape, p.value.dtype(), p.shard, p.weight_decay, p.aliases};
}

std::string join_name(const std::string& prefix, const std::string& name) {
    return prefix.empty() ? name : prefix + "." + name;
}

}  // namespace mt::nn
