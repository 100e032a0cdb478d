// Dropout (and the MoE router's input jitter) for the layers: DropoutContext says whether a
// forward pass trains and which Philox stream it draws from; each site takes a fresh counter
// range and keeps it in a DropoutDraw inside its Saved, so backward and recompute replay exactly
// the forward's mask.
#pragma once

#include <cstdint>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/tensor.h"

namespace mt::nn {

struct DropoutContext {
    bool training = true;  // false: every dropout is the identity (evaluation)
    uint64_t seed = 0;
    uint64_t offset = 0;  // next unused counter
    // Added to the seed in every draw: a pipeline stage's own stream (Megatron seeds each
    // pipeline rank with seed + 100 x its rank), so that stages draw different masks. Not part
    // of a checkpoint's RNG state: each rank derives it from its place.
    uint64_t stream = 0;

    // Reserves n counters and returns the first.
    uint64_t take(uint64_t n) {
        uint64_t first = offset;
        offset += n;
        return first;
    }
};

// The mask of one dropout site in one forward pass.
struct DropoutDraw {
    bool applied = false;  // training with p > 0
    float p = 0.0f;
    uint64_t seed = 0;
    uint64_t offset = 0;
};

// Reserves `n` counters of ctx when training with p > 0 (otherwise draws nothing).
MT_API DropoutDraw draw_dropout(DropoutContext& ctx, float p, int64_t n);
// The same for one of `shards` equal parts of a site split across ranks (sequence-parallel
// activations, tensor-parallel attention heads): every rank reserves the whole site's counters
// (so the streams stay in step) and draws from its own part of them.
MT_API DropoutDraw draw_dropout(DropoutContext& ctx, float p, int64_t n, int shard, int shards);
// y = dropout(x) under draw on `backend` (x itself when not applied).
MT_API Tensor dropout_forward(Backend& backend, const Tensor& x, const DropoutDraw& draw);
// dx = dropout'(dy) under the forward's draw (dy itself when not applied).
MT_API Tensor dropout_backward(Backend& backend, const Tensor& dy, const DropoutDraw& draw);

// Input jitter (the MoE router's --moe-input-jitter-eps) draws like dropout, its p being eps:
// y = x · U(1 - eps, 1 + eps) under the draw (x itself when not applied). Being a product by
// fixed factors, its backward is the same call on dy.
MT_API Tensor jitter(Backend& backend, const Tensor& x, const DropoutDraw& draw);

}  // namespace mt::nn
