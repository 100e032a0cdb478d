// ModelFamily interface (gpt, bert, t5, mamba, moe plugins): builds a model from Megatron's
// model flags and describes its parameters (Megatron-core names and shard specs), which
// checkpoints, the converter and tensor parallelism all read. Declared now; the training
// issue implements the first family.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mt/api.h"
#include "mt/dtype.h"
#include "mt/tensor.h"

namespace mt {

// How a parameter is split across tensor-parallel ranks.
struct ShardSpec {
    enum class Kind : uint8_t { replicated, column, row, vocab };
    Kind kind = Kind::replicated;
    int partition_dim = 0;   // dimension split across ranks (column: 0, row: 1)
    int64_t num_groups = 1;  // QKV query groups or gate/up halves split group-wise per rank
};

struct ParameterInfo {
    std::string
        name;     // Megatron-core key, e.g. "decoder.layers.3.self_attention.linear_qkv.weight"
    Shape shape;  // full (unsharded) shape
    DType dtype = DType::f32;
    ShardSpec shard;
    bool weight_decay = true;
};

// Model hyper-parameters as Megatron's flags give them: flag name without "--" -> value text
// (empty for a switch that is set).
using ModelArgs = std::map<std::string, std::string, std::less<>>;

// One command-line flag a model family understands, for the tools to offer and parse.
struct FlagInfo {
    std::string name;  // without "--", Megatron's spelling
    std::string help;
    std::optional<std::string> default_value;  // shown by --help; absent: no default
    bool is_switch = false;                    // takes no value
};

class MT_API ModelFamily {
  public:
    virtual ~ModelFamily() = default;
    virtual std::string_view name() const = 0;  // "gpt"
    // The model flags this family reads (--num-layers, --hidden-size, ...).
    virtual std::vector<FlagInfo> flags() const = 0;
    // Every parameter of the model these arguments describe, in Megatron's order.
    virtual std::vector<ParameterInfo> parameters(const ModelArgs& args) const = 0;
};

}  // namespace mt
