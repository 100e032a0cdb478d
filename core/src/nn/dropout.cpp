// The layers' dropout and jitter sites over the backend's dropout_forward/backward and
// uniform_scale.
#include "mt/nn/dropout.h"

namespace mt::nn {

DropoutDraw draw_dropout(DropoutContext& ctx, float p, int64_t n) {
    if (!ctx.training || p <= 0.0f) return {};
    return DropoutDraw{true, p, ctx.seed + ctx.stream, ctx.take(uint64_t(n))};
}

DropoutDraw draw_dropout(DropoutContext& ctx, float p, int64_t n, int shard, int shards) {
    DropoutDraw draw = draw_dropout(ctx, p, n * shards);
    draw.offset += uint64_t(shard) * uint64_t(n);
    return draw;
}

Tensor dropout_forward(Backend& backend, const Tensor& x, const DropoutDraw& draw) {
    if (!draw.applied) return x;
    Tensor y = backend.empty(x.shape(), x.dtype());
    backend.dropout_forward(backend.contiguous(x), draw.p, draw.seed, draw.offset, y);
    return y;
}

Tensor dropout_backward(Backend& backend, const Tensor& dy, const DropoutDraw& draw) {
    if (!draw.applied) return dy;
    Tensor dx = backend.empty(dy.shape(), dy.dtype());
    backend.dropout_backward(backend.contiguous(dy), draw.p, draw.seed, draw.offset, dx);
    return dx;
}

Tensor jitter(Backend& backend, const Tensor& x, const DropoutDraw& draw) {
    if (!draw.applied) return x;
    Tensor y = backend.empty(x.shape(), x.dtype());
    backend.uniform_scale(backend.contiguous(x), 1.0f - draw.p, 1.0f + draw.p, draw.seed,
                          draw.offset, y);
    return y;
}

}  // namespace mt::nn
