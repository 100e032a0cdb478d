// Megatron's activation recompute (--recompute-granularity, --recompute-method,
// --recompute-num-layers, --recompute-modules): which transformer layers keep only their input in
// the forward and run again in the backward. The replay draws the same dropout masks (the
// counter-based stream restarts at the segment's offset), so the gradients are bit-identical to
// those of a run that keeps every activation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mt/api.h"

namespace mt::nn {

struct RecomputeConfig {
    std::string granularity;  // "", "full" or "selective"
    std::string method;       // "", "uniform" or "block" (full only)
    int64_t num_layers = 0;   // --recompute-num-layers (0: not given)
    // --recompute-modules for selective (default core_attn): core_attn is what our attention
    // does anyway (q, k, v and the row log-sum-exps kept, the probabilities recomputed); mlp
    // keeps the MLP's input only; layernorm drops the norms' outputs (Megatron's
    // output-discarding checkpoint).
    std::vector<std::string> modules;
};

// Layers [begin, end) recomputed as one unit: the forward keeps the input of `begin` only.
struct RecomputeSegment {
    int64_t begin = 0, end = 0;
};

// Whether selective recompute covers `module` ("core_attn", "mlp", "layernorm").
MT_API bool recompute_module(const RecomputeConfig& config, const std::string& module);

// Megatron's checks (TransformerConfig.__post_init__) with its messages, then the segments of
// `layers` layers: uniform cuts every layer into chunks of num_layers (the last may be shorter),
// block recomputes each of the first num_layers layers on its own; none without full
// granularity. Throws mt::Error for what Megatron refuses and for the modules we cannot
// recompute yet.
MT_API std::vector<RecomputeSegment> recompute_segments(const RecomputeConfig& config,
                                                        int64_t layers);

}  // namespace mt::nn
