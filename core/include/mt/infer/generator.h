// Batched text generation with Megatron's semantics
// (generate_tokens_probs_and_return_on_first_stage): prompts padded with EOD to the longest +
// tokens_to_generate, decoding from the shortest prompt so each row keeps its prompt tokens until
// it starts sampling, early stop at EOD (or at end-of-line tokens), per-token log-probs of the
// untempered logits, and score-only requests.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "mt/api.h"
#include "mt/infer/sampler.h"
#include "mt/model.h"

namespace mt::infer {

// The tokenizer's ids the generation rules name.
struct GenerationTokens {
    int32_t eod = 0;                        // padding, BOS with add_BOS, and the stop token
    int64_t vocab_size = 0;                 // samples are clamped below it
    std::optional<int32_t> newline;         // tokenize("\n")[0]: stop_on_eol, colon rule
    std::optional<int32_t> double_newline;  // tokenize("\n\n")[0] when one token (GPT-2: 628)
    std::optional<int32_t> colon;           // tokenize(":")[0]: prevent_newline_after_colon
};

struct TopLogProb {
    int32_t id = 0;
    float log_prob = 0;
};

struct GenerationRequest {
    std::vector<std::vector<int32_t>> prompts;  // token ids (add_BOS already applied)
    // An encoder-decoder model's (Model::has_encoder) encoder inputs, one per prompt, which it
    // encodes once; the prompts are then its decoder's (T5: [BOS]).
    std::vector<std::vector<int32_t>> encoder_prompts;
    int64_t tokens_to_generate = 64;  // 0: score the prompts only (needs log_probs)
    SamplingParams sampling;
    double top_p_decay = 0.0, top_p_bound = 0.0;  // top_p *= decay each step, not below bound
    bool return_log_probs = false;
    // With return_log_probs while generating: also the prompts' own log-probs (Megatron's way);
    // false leaves those before the shortest prompt's last token at 0 and spares the prefill
    // the output layer at every prompt position.
    bool prompt_log_probs = true;
    // With return_log_probs: also the this many most likely tokens at each position (ids below
    // vocab_size; 0: none).
    int64_t top_n_log_probs = 0;
    // Log-probs normalised over the tokenizer's ids only (what a Hugging Face export of the model
    // computes, its padding rows dropped) rather than Megatron's padded vocabulary.
    bool log_probs_over_vocab = false;
    bool stop_at_eod = true;  // Megatron's use_eod_token_for_early_termination
    // The id that ends a row, instead of the EOD (Megatron's SamplingParams.termination_id; one
    // no sample can be, such as -1, never ends it).
    std::optional<int32_t> termination_id;
    bool stop_on_eol = false, stop_on_double_eol = false;
    bool prevent_newline_after_colon = false;
    // Called after each decoding step with the id at the new position of every row (a row still
    // in its prompt shows its prompt's token); returning false ends the generation there, each
    // row at that position (a streaming client that has left, or whose stop string came).
    std::function<bool(std::span<const int32_t> ids)> on_step;
};

struct GenerationResult {
    // Each row's prompt + generated ids, cut to its length (a row that stopped includes the
    // stop token; shorter prompts run on to the longest's length + tokens_to_generate).
    std::vector<std::vector<int32_t>> tokens;
    // Per row, log p(token i+1 | tokens 0..i) for i < length - 1, if requested.
    std::vector<std::vector<float>> log_probs;
    // Per row and the same positions, the top_n_log_probs most likely next tokens, most likely
    // first (ties: the lower id), if requested.
    std::vector<std::vector<std::vector<TopLogProb>>> top_log_probs;
};

// mt::Error for prompts generate() cannot continue by tokens_to_generate: a negative count, an
// empty prompt, or (Megatron's message) the longest + tokens_to_generate past
// model.max_positions() (2^24 for a model without a limit).
MT_API void check_prompts(const Model& model, std::span<const std::vector<int32_t>> prompts,
                          int64_t tokens_to_generate);

// Runs the request on `model` (one batch, one KV cache). mt::Error for an empty request, an
// empty prompt, prompt + generation longer than model.max_positions(), or bad sampling values.
MT_API GenerationResult generate(Model& model, const GenerationRequest& request,
                                 const GenerationTokens& ids, SamplingRng& rng);

}  // namespace mt::infer
