// OutputLoss: the output layer (logits = h W^T, W (V, H)) fused with per-token cross-entropy,
// computed over chunks of rows so that at most a chunk of the (B T, V) logits is live: the forward
// keeps each row's log-sum-exp and the backward recomputes each chunk's logits, unless the rows
// are few enough (LogitRows::kept): then the forward's logits are kept for the backward (as
// Megatron keeps them), which spares the output layer's largest GEMM. Over a tensor-parallel
// group each rank holds vocab/tp rows of the weight and the rows' log-sum-exps and target logits
// are merged across the ranks (Megatron's vocab-parallel cross-entropy).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/parameter.h"
#include "mt/nn/tensor_parallel.h"

namespace mt::nn {

class MT_API OutputLoss {
  public:
    // Rows of logits live at once: the backward recomputes the logits `chunk` rows at a time,
    // unless the forward's rows number at most `kept`; then it keeps all their logits.
    struct LogitRows {
        int64_t chunk, kept;
        LogitRows(int64_t rows) : chunk(rows), kept(rows) {}  // one bound for both
        LogitRows(int64_t chunk_rows, int64_t kept_rows) : chunk(chunk_rows), kept(kept_rows) {}
    };

    struct Saved {
        Tensor hidden;   // (N, H) the forward's input rows (sequence parallel: gathered)
        Tensor targets;  // (N) token ids
        Tensor lse;      // (N) log-sum-exp of each row's logits (over the whole vocabulary)
        // (N, V/tp) the forward's logits when all rows were one chunk, else undefined; the
        // backward turns them into their gradient in place, so a Saved serves one backward.
        Tensor logits;
    };

    // The weight is "output_layer.weight" (V, H, vocab-parallel), or, with tied embeddings
    // (Megatron's default), the word embedding `tied` (its grad receives the output's grad).
    // rows: rows of logits live at once.
    // vocab: the whole vocabulary; over `tp` this rank computes the logits of vocab/tp of it.
    // With `bias`, "output_layer.bias" (V, vocab-parallel, not decayed) is added to the logits
    // (BERT's output layer). `module` names the layer otherwise (T5: "lm_head.output_layer").
    OutputLoss(int64_t vocab, int64_t hidden, Parameter* tied, LogitRows rows, DType dtype,
               Backend& backend, TensorParallel tp = {}, bool bias = false,
               const std::string& module = "output_layer");

    // hidden (B, T, H), targets (B, T) i64/i32 -> losses (B, T) = lse - logit[target].
    // Sequence parallel: hidden is this rank's part of the sequence (B, T/tp, H); the losses
    // are every position's, on every rank.
    Tensor forward(const Tensor& hidden, const Tensor& targets, Saved* saved) const;
    // Inference: hidden (B, T, H) -> logits (B, T, V) = hidden W^T (one process only).
    Tensor logits(const Tensor& hidden) const;
    // dlosses (B, T) -> dhidden shaped like the forward's hidden; weight.grad += dlogits^T h,
    // chunk by chunk.
    Tensor backward(const Tensor& dlosses, const Saved& saved);

    // For `vocab` columns: chunks of about 16M logits (64 MiB in f32), and all the logits kept
    // up to 64M (256 MiB; GPT-2's 50K vocabulary: 1,334 rows, so B x T = 1024 are kept).
    static LogitRows default_rows(int64_t vocab) {
        return {std::max<int64_t>(1, (int64_t(1) << 24) / vocab),
                std::max<int64_t>(1, (int64_t(1) << 26) / vocab)};
    }

    // The logits times `scale` (core_v0.19's muP --mup-output-mult; not with the bias).
    void set_logit_scale(double scale) { logit_scale_ = float(scale); }

    // The owned weight (a tied weight belongs to the embedding), then the bias.
    void collect_parameters(std::vector<Parameter*>& out);
    Parameter& weight() { return tied_ ? *tied_ : weight_; }

  private:
    const Parameter& weight_param() const { return tied_ ? *tied_ : weight_; }
    // The whole rows' lse and losses from this rank's pieces (tensor parallel).
    void merge_vocab_pieces(Tensor& lse, Tensor& target_logit, Tensor& losses) const;

    int64_t vocab_, hidden_;  // vocab_: this rank's rows
    LogitRows rows_;
    Parameter* tied_;
    Parameter weight_;
    bool has_bias_;
    Parameter bias_;
    Backend* backend_;
    TensorParallel tp_;
    float logit_scale_ = 1.0f;
};

}  // namespace mt::nn
