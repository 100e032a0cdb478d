// Embedding forward: gather word rows, add the position rows (a gather over the position ids,
// 0..T-1 on every row by default), then dropout; backward reverses it with scatter-adds.
#include "mt/nn/embedding.h"

#include <algorithm>

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

// The rows of a vocab-parallel table the ids fall on: local[i] = ids[i] - first where it is
// in [first, first + rows), else 0 with foreign[i] = 1.
void local_rows(const Tensor& ids, int64_t first, int64_t rows, Tensor& local, Tensor& foreign) {
    const Tensor c = ids.contiguous();
    local = Tensor::empty(c.shape(), DType::i64);
    foreign = Tensor::empty(c.shape(), DType::u8);
    int64_t* l = local.data<int64_t>();
    uint8_t* f = foreign.data<uint8_t>();
    for (int64_t i = 0; i < c.numel(); ++i) {
        const int64_t id =
            c.dtype() == DType::i64 ? c.data<int64_t>()[i] : int64_t(c.data<int32_t>()[i]);
        const bool mine = id >= first && id < first + rows;
        l[i] = mine ? id - first : 0;
        f[i] = mine ? 0 : 1;
    }
}

// Zeroes the rows (..., H) of y where foreign is set.
void zero_foreign_rows(Tensor& y, const Tensor& foreign) {
    const int64_t hidden = y.size(-1);
    const uint8_t* f = foreign.data<uint8_t>();
    for (int64_t i = 0; i < foreign.numel(); ++i) {
        if (!f[i]) continue;
        if (y.dtype() == DType::f64)
            std::fill_n(y.data<double>() + i * hidden, hidden, 0.0);
        else
            std::fill_n(y.data<float>() + i * hidden, hidden, 0.0f);
    }
}

}  // namespace

Embedding::Embedding(int64_t vocab, int64_t hidden, int64_t max_positions, float dropout,
                     DType dtype, TensorParallel tp)
    : hidden_(hidden),
      max_positions_(max_positions),
      dropout_(dropout),
      word_(make_parameter("embedding.word_embeddings.weight", {vocab, hidden}, dtype,
                           ShardSpec{ShardSpec::Kind::vocab, 0, 1}, true, tp)),
      tp_(tp) {
    if (max_positions > 0)
        position_ = make_parameter("embedding.position_embeddings.weight", {max_positions, hidden},
                                   dtype, ShardSpec{}, true, tp);
}

Tensor Embedding::forward(const Tensor& ids, DropoutContext& ctx, Saved* saved,
                          const Tensor& positions) const {
    MT_CHECK(ids.dim() == 2, "Embedding: ids must be (B, T), got ", ids.describe());
    const int64_t B = ids.size(0), T = ids.size(1);
    MT_CHECK(max_positions_ == 0 || T <= max_positions_, "Embedding: sequence length ", T,
             " exceeds the ", max_positions_, " learned positions");
    Tensor y = Tensor::empty({B, T, hidden_}, word_.value.dtype());
    Tensor rows = ids, foreign;
    if (tp_.active()) {
        // Each rank looks up the ids of its vocabulary range; the sum over ranks is the table's.
        const int64_t part = word_.value.size(0);
        local_rows(ids, part * tp_.rank(), part, rows, foreign);
        ops::embedding_forward(word_.value, rows, y);
        zero_foreign_rows(y, foreign);
        tp_.group->all_reduce(y, ReduceOp::sum);
    } else {
        ops::embedding_forward(word_.value, ids, y);
    }
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
    y = scatter_to_sequence_parallel(tp_, y);
    DropoutDraw draw =
        draw_dropout(ctx, dropout_, y.numel(), tp_.sequence_shard(), tp_.sequence_shards());
    if (saved) *saved = Saved{rows, foreign, pos_ids, draw};
    return dropout_forward(y, draw);
}

void Embedding::backward(const Tensor& dy, const Saved& saved) {
    const int64_t B = saved.ids.size(0), T = saved.ids.size(1);
    const int64_t local_T = tp_.sequence_split() ? T / tp_.size() : T;
    MT_CHECK(dy.shape() == Shape({B, local_T, hidden_}), "Embedding: dy must be (", B, ", ",
             local_T, ", ", hidden_, "), got ", dy.describe());
    Tensor g = scatter_to_sequence_parallel_backward(
        tp_, dropout_backward(dy.contiguous(), saved.dropout));
    if (saved.foreign.defined()) {
        Tensor mine = g.clone();
        zero_foreign_rows(mine, saved.foreign);
        ops::embedding_backward(mine, saved.ids, word_.grad);
    } else {
        ops::embedding_backward(g, saved.ids, word_.grad);
    }
    if (max_positions_ > 0) ops::embedding_backward(g, saved.positions, position_.grad);
}

void Embedding::collect_parameters(std::vector<Parameter*>& out) {
    out.push_back(&word_);
    if (max_positions_ > 0) out.push_back(&position_);
}

}  // namespace mt::nn
