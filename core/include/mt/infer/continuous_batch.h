// Continuous batching, as Megatron core's dynamic inference engine does it on a CPU's scale:
// requests join a running batch between steps. A step reads a chunk of the prompts still being
// read, up to a budget of tokens (chunked prefill: a long prompt holds the others' decoding up
// for one chunk at a time; prompts that arrived together are read in one pass), then decodes
// one token of every generating request in one batch (Model::decode_rows). Each request keeps its
// own inference state (keys and values for its prompt + max_tokens positions, allocated on
// admission and touched as they fill: the memory follows the positions used, as a paged cache's
// does) and its own random stream, so it gets what infer::generate gives it alone: the same tokens,
// and log-probs up to the last bits (a batch's products sum in another order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "mt/api.h"
#include "mt/infer/generator.h"
#include "mt/infer/sampler.h"
#include "mt/model.h"

namespace mt::infer {

// One prompt to continue. Its log-probs are always recorded (over the tokenizer's ids, as
// GenerationRequest::log_probs_over_vocab): the OpenAI-style endpoints return them.
struct SequenceRequest {
    std::vector<int32_t> prompt;  // token ids, not empty
    int64_t max_tokens = 16;      // 0: score the prompt only (needs nothing generated)
    SamplingParams sampling;
    uint64_t seed = 0;              // the sequence's own random stream (unless greedy)
    bool prompt_log_probs = false;  // also the prompt's own (else 0 before its last token)
    int64_t top_n_log_probs = 0;    // the most likely tokens at each recorded position
    // Each generated id as it comes; false ends the sequence at it (a stop string, a client
    // that has left).
    std::function<bool(int32_t id)> on_token;
    // Called once at the end: a GenerationResult of one row (prompt + generated ids, ending
    // with the end-of-document id where that stopped it), or the step's error.
    std::function<void(GenerationResult)> on_done;
    std::function<void(std::exception_ptr)> on_error;
};

class MT_API ContinuousBatch {
  public:
    // model.can_decode_rows() must hold. At most `max_active` sequences run at once (Megatron's
    // --inference-max-requests); a step reads at most `prefill_tokens` prompt tokens; the running
    // sequences' states hold at most `memory_limit` bytes together (0: no bound; Megatron's
    // --inference-dynamic-batching-buffer-size-gb), each reserving its prompt + max_tokens
    // positions when it is admitted.
    ContinuousBatch(Model& model, const GenerationTokens& ids, size_t max_active,
                    int64_t prefill_tokens, int64_t memory_limit = 0);
    ~ContinuousBatch();

    // mt::Error for a request generate() refuses (an empty prompt, too long for the model's
    // positions, bad sampling values), before anything is queued.
    void check(const SequenceRequest& request) const;
    // Admits a request (moved from) when a place and the memory of its state are free; else
    // false, the request left as it was. mt::Error for a request check() refuses, or one whose
    // state alone holds more than memory_limit (it could never run).
    bool add(SequenceRequest& request);
    bool has_room() const { return sequences_.size() < max_active_; }
    // The bytes the running sequences' states hold.
    int64_t reserved_bytes() const { return reserved_; }
    bool idle() const { return sequences_.empty(); }
    size_t active() const { return sequences_.size(); }
    // Drops every sequence unanswered (a server that stops).
    void clear();

    // One prefill chunk and one decoding step; the sequences that end are answered
    // (on_done) and leave. An error answers the sequences it concerns (on_error) and removes
    // them; the others go on.
    void step();

  private:
    struct Sequence;

    // One pass over prompt chunks of the sequences still reading theirs (a score-only one alone).
    void prefill();
    void score(Sequence& s);
    void decode();
    // The row x's sample for s at its next position: recorded, announced, checked for the end.
    void take(Sequence& s, std::span<float> x);
    void finish_ended();

    Model& model_;
    GenerationTokens ids_;
    size_t max_active_;
    int64_t prefill_tokens_;
    int64_t memory_limit_;
    int64_t reserved_ = 0;
    std::deque<std::unique_ptr<Sequence>> sequences_;  // in arrival order
};

}  // namespace mt::infer
