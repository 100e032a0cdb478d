// Embedding forward: gather word rows, add the position rows (a gather over the position ids,
// 0..T-1 on every row by default), then dropout; backward reverses it with scatter-adds.
#include "mt/nn/embedding.h"

#include <vector>

namespace mt::nn {

namespace {

// (B, T) i64 positions 0..T-1 on every row, on `backend`.
Tensor position_ids(Backend& backend, int64_t batch, int64_t seq) {
    std::vector<int64_t> p(size_t(batch * seq));
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t t = 0; t < seq; ++t) p[size_t(b * seq + t)] = t;
    return backend.contiguous(host_tensor(std::move(p), {batch, seq}));
}

// transformers' Gemma3TextScaledWordEmbedding: the scale a float32 tensor cast to the weights'
// dtype (bf16 rounds sqrt(1152) to 34).
float scale_in(double scale, DType dtype) {
    const float f = float(scale);
    if (dtype == DType::bf16) return bfloat16_to_float(float_to_bfloat16(f));
    if (dtype == DType::f16) return half_to_float(float_to_half(f));
    return f;
}

}  // namespace

Embedding::Embedding(int64_t vocab, int64_t hidden, int64_t max_positions, float dropout,
                     DType dtype, Backend& backend, TensorParallel tp, int64_t num_tokentypes,
                     double scale)
    : hidden_(hidden),
      max_positions_(max_positions),
      num_tokentypes_(num_tokentypes),
      dropout_(dropout),
      scale_(scale_in(scale, dtype)),
      word_(make_parameter(backend, "embedding.word_embeddings.weight", {vocab, hidden}, dtype,
                           ShardSpec{ShardSpec::Kind::vocab, 0, 1}, true, tp)),
      backend_(&backend),
      tp_(tp) {
    if (max_positions > 0)
        position_ = make_parameter(backend, "embedding.position_embeddings.weight",
                                   {max_positions, hidden}, dtype, ShardSpec{}, true, tp);
    if (num_tokentypes > 0)
        tokentype_ = make_parameter(backend, "embedding.tokentype_embeddings.weight",
                                    {num_tokentypes, hidden}, dtype, ShardSpec{}, true, tp);
}

Tensor Embedding::forward(const Tensor& ids, DropoutContext& ctx, Saved* saved,
                          const Tensor& positions, const Tensor& tokentypes) const {
    MT_CHECK(ids.dim() == 2, "Embedding: ids must be (B, T), got ", ids.describe());
    const int64_t B = ids.size(0), T = ids.size(1);
    MT_CHECK(max_positions_ == 0 || T <= max_positions_, "Embedding: sequence length ", T,
             " exceeds the ", max_positions_, " learned positions");
    Tensor y = backend_->empty({B, T, hidden_}, word_.value.dtype());
    const Tensor rows = backend_->contiguous(ids);
    if (tp_.active()) {
        // Each rank looks up the ids of its vocabulary range; the sum over ranks is the table's.
        backend_->embedding_shard_forward(word_.value, rows, vocab_start(), y);
        tp_.group->all_reduce(y, ReduceOp::sum);
    } else {
        backend_->embedding_forward(word_.value, rows, y);
    }
    Tensor pos_ids;
    if (max_positions_ > 0) {
        if (positions.defined()) {
            MT_CHECK(positions.shape() == Shape({B, T}), "Embedding: positions must be (", B, ", ",
                     T, "), got ", positions.describe());
            pos_ids = backend_->contiguous(positions);
        } else {
            pos_ids = position_ids(*backend_, B, T);
        }
        Tensor pos = backend_->empty({B, T, hidden_}, word_.value.dtype());
        backend_->embedding_forward(position_.value, pos_ids, pos);  // checks the range
        backend_->add(y, pos, y);
    }
    Tensor type_ids;
    if (tokentypes.defined()) {
        MT_CHECK(num_tokentypes_ > 0,
                 "Embedding: token types given to a model without a "
                 "token-type embedding (--num-tokentypes 0)");
        MT_CHECK(tokentypes.shape() == Shape({B, T}), "Embedding: token types must be (", B, ", ",
                 T, "), got ", tokentypes.describe());
        type_ids = backend_->contiguous(tokentypes);
        Tensor types = backend_->empty({B, T, hidden_}, word_.value.dtype());
        backend_->embedding_forward(tokentype_.value, type_ids, types);  // checks the range
        backend_->add(y, types, y);
    }
    y = scatter_to_sequence_parallel(tp_, y);
    if (scale_ != 1.0f) backend_->scale(y, scale_, y);
    DropoutDraw draw =
        draw_dropout(ctx, dropout_, y.numel(), tp_.sequence_shard(), tp_.sequence_shards());
    if (saved) *saved = Saved{rows, pos_ids, type_ids, draw};
    return dropout_forward(*backend_, y, draw);
}

void Embedding::backward(const Tensor& dy, const Saved& saved) {
    const int64_t B = saved.ids.size(0), T = saved.ids.size(1);
    const int64_t local_T = tp_.sequence_split() ? T / tp_.size() : T;
    MT_CHECK(dy.shape() == Shape({B, local_T, hidden_}), "Embedding: dy must be (", B, ", ",
             local_T, ", ", hidden_, "), got ", dy.describe());
    Tensor g = dropout_backward(*backend_, backend_->contiguous(dy), saved.dropout);
    if (scale_ != 1.0f) backend_->scale(g, scale_, g);
    g = backend_->contiguous(scatter_to_sequence_parallel_backward(tp_, g));
    if (tp_.active())
        backend_->embedding_shard_backward(g, saved.ids, vocab_start(), word_.grad);
    else
        backend_->embedding_backward(g, saved.ids, word_.grad);
    if (max_positions_ > 0) backend_->embedding_backward(g, saved.positions, position_.grad);
    if (saved.tokentypes.defined())
        backend_->embedding_backward(g, saved.tokentypes, tokentype_.grad);
}

int64_t Embedding::vocab_start() const {
    return word_.value.size(0) * tp_.rank();
}

void Embedding::collect_parameters(std::vector<Parameter*>& out) {
    out.push_back(&word_);
    if (max_positions_ > 0) out.push_back(&position_);
    if (num_tokentypes_ > 0) out.push_back(&tokentype_);
}

}  // namespace mt::nn
