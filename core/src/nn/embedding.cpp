// Embedding forward: gather word rows, add the position rows (a gather over the position ids,
// 0..T-1 on every row by default), then dropout; backward reverses it with scatter-adds.
#include "mt/nn/embedding.h"

#include "mt/ops/elementwise.h"
#include "mt/ops/embedding.h"

namespace mt::nn {

namespace {

// (B, T) i64 tensor of positions 0..T-1 on every row.
Tensor position_ids(int64_t batch, int64_t seq) {
    Tensor p = Tensor::empty({batch, seq}, DType::i64);
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t t = 0; t < seq; ++t) p.data<int64_t>()[b * seq + t] = t;
    return p;
}

}  // namespace

Embedding::Embedding(int64_t vocab, int64_t hidden, int64_t max_positions, float dropout,
                     DType dtype)
    : hidden_(hidden),
      max_positions_(max_positions),
      dropout_(dropout),
      word_(make_parameter("embedding.word_embeddings.weight", {vocab, hidden}, dtype,
                           ShardSpec{ShardSpec::Kind::vocab, 0, 1}, true)) {
    if (max_positions > 0)
        position_ = make_parameter("embedding.position_embeddings.weight", {max_positions, hidden},
                                   dtype, ShardSpec{}, true);
}

Tensor Embedding::forward(const Tensor& ids, DropoutContext& ctx, Saved* saved,
                          const Tensor& positions) const {
    MT_CHECK(ids.dim() == 2, "Embedding: ids must be (B, T), got ", ids.describe());
    const int64_t B = ids.size(0), T = ids.size(1);
    MT_CHECK(max_positions_ == 0 || T <= max_positions_, "Embedding: sequence length ", T,
             " exceeds the ", max_positions_, " learned positions");
    Tensor y = Tensor::empty({B, T, hidden_}, word_.value.dtype());
    ops::embedding_forward(word_.value, ids, y);
    Tensor pos_ids;
    if (max_positions_ > 0) {
        if (positions.defined()) {
            MT_CHECK(positions.shape() == Shape({B, T}), "Embedding: positions must be (", B, ", ",
                     T, "), got ", positions.describe());
            pos_ids = positions;
        } else {
            pos_ids = position_ids(B, T);
        }
        Tensor pos = Tensor::empty({B, T, hidden_}, word_.value.dtype());
        ops::embedding_forward(position_.value, pos_ids, pos);  // checks the range
        ops::add(y, pos, y);
    }
    DropoutDraw draw = draw_dropout(ctx, dropout_, y.numel());
    if (saved) *saved = Saved{ids, pos_ids, draw};
    return dropout_forward(y, draw);
}

void Embedding::backward(const Tensor& dy, const Saved& saved) {
    const int64_t B = saved.ids.size(0), T = saved.ids.size(1);
    MT_CHECK(dy.shape() == Shape({B, T, hidden_}), "Embedding: dy must be (", B, ", ", T, ", ",
             hidden_, "), got ", dy.describe());
    Tensor g = dropout_backward(dy.contiguous(), saved.dropout);
    ops::embedding_backward(g, saved.ids, word_.grad);
    if (max_positions_ > 0) ops::embedding_backward(g, saved.positions, position_.grad);
}

void Embedding::collect_parameters(std::vector<Parameter*>& out) {
    out.push_back(&word_);
    if (max_positions_ > 0) out.push_back(&position_);
}

}  // namespace mt::nn
