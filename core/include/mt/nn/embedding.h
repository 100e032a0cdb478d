// Megatron's LanguageModelEmbedding: word embedding (V, H) plus an optional learned absolute
// position embedding (P, H) and an optional token-type embedding (BERT's segments A/B), summed,
// then embedding dropout (Megatron uses hidden_dropout for it). Over a tensor-parallel group the
// word table is split by vocabulary rows (VocabParallelEmbedding).
#pragma once

#include <cstdint>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/dropout.h"
#include "mt/nn/parameter.h"
#include "mt/nn/tensor_parallel.h"

namespace mt::nn {

class MT_API Embedding {
  public:
    struct Saved {
        Tensor ids;           // (B, T) token ids on the backend
        Tensor positions;     // (B, T) i64 the learned positions looked up (none without them)
        Tensor tokentypes;    // (B, T) the token types looked up (none without them)
        DropoutDraw dropout;  // the embedding dropout's mask
    };

    // "embedding.word_embeddings.weight" (V, H, vocab-parallel) and, when max_positions > 0,
    // "embedding.position_embeddings.weight" (max_positions, H, replicated); both decayed as
    // Megatron does. dropout: the embedding dropout probability (hidden_dropout). Over `tp`
    // each rank holds vocab/tp rows of the word table.
    // With num_tokentypes > 0, "embedding.tokentype_embeddings.weight" (num_tokentypes, H,
    // replicated) too. The sum is multiplied by `scale` (Gemma's sqrt(hidden), --scale-embeddings)
    // rounded to `dtype` as transformers rounds it.
    Embedding(int64_t vocab, int64_t hidden, int64_t max_positions, float dropout, DType dtype,
              Backend& backend, TensorParallel tp = {}, int64_t num_tokentypes = 0,
              double scale = 1.0);

    // ids (B, T) i64/i32 -> (B, T, H) = dropout(word[ids] + pos[position]); positions (B, T)
    // i64/i32 default to 0..T-1 on every row (--reset-position-ids gives others); each must be
    // < max_positions. Sequence parallel: this rank's part of the sequence (B, T/tp, H).
    // tokentypes (B, T), optional (needs the token-type table): each < num_tokentypes, their
    // rows added as Megatron adds them.
    Tensor forward(const Tensor& ids, DropoutContext& ctx, Saved* saved,
                   const Tensor& positions = Tensor(), const Tensor& tokentypes = Tensor()) const;
    // dy (B, T, H): word.grad[ids] += dropout'(dy); pos.grad[t] += the same. Returns nothing:
    // the ids have no gradient.
    void backward(const Tensor& dy, const Saved& saved);

    void collect_parameters(std::vector<Parameter*>& out);
    Parameter& word() { return word_; }
    Parameter* position() { return max_positions_ > 0 ? &position_ : nullptr; }
    Parameter* tokentype() { return num_tokentypes_ > 0 ? &tokentype_ : nullptr; }

  private:
    // The first vocabulary id of this rank's rows of the word table.
    int64_t vocab_start() const;

    int64_t hidden_, max_positions_, num_tokentypes_;
    float dropout_;
    float scale_;
    Parameter word_, position_, tokentype_;
    Backend* backend_;
    TensorParallel tp_;
};

}  // namespace mt::nn
