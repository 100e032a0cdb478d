// The layers' dropout sites over ops::dropout_forward/backward.
#include "mt/nn/dropout.h"

#include "mt/ops/dropout.h"

namespace mt::nn {

DropoutDraw draw_dropout(DropoutContext& ctx, float p, int64_t n) {
    if (!ctx.training || p <= 0.0f) return {};
    return DropoutDraw{true, p, ctx.seed, ctx.take(uint64_t(n))};
}

DropoutDraw draw_dropout(DropoutContext& ctx, float p, int64_t n, int shard, int shards) {
    DropoutDraw draw = draw_dropout(ctx, p, n * shards);
    draw.offset += uint64_t(shard) * uint64_t(n);
    return draw;
}

Tensor dropout_forward(const Tensor& x, const DropoutDraw& draw) {
    if (!draw.applied) return x;
    Tensor y = Tensor::empty(x.shape(), x.dtype());
    ops::dropout_forward(x.contiguous(), draw.p, draw.seed, draw.offset, y);
    return y;
}

Tensor dropout_backward(const Tensor& dy, const DropoutDraw& draw) {
    if (!draw.applied) return dy;
    Tensor dx = Tensor::empty(dy.shape(), dy.dtype());
    ops::dropout_backward(dy.contiguous(), draw.p, draw.seed, draw.offset, dx);
    return dx;
}

}  // namespace mt::nn
