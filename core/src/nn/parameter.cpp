// Parameter construction and name composition.
#include "mt/nn/parameter.h"

namespace mt::nn {

Parameter make_parameter(std::string name, const Shape& shape, DType dtype, ShardSpec shard,
                         bool weight_decay) {
    return Parameter{std::move(name), Tensor::zeros(shape, dtype), Tensor::zeros(shape, dtype),
                     shard, weight_decay};
}

std::string join_name(const std::string& prefix, const std::string& name) {
    return prefix.empty() ? name : prefix + "." + name;
}

}  // namespace mt::nn
