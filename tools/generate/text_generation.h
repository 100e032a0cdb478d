// TextGenerator: prompts as text in, Megatron's generation out (generate_and_post_process):
// tokenize (with add_BOS prepending the EOD id), run the generation loop, detokenize each row
// to the text, its ids, its per-token log-probs and its token strings ("segments"). For an
// encoder-decoder model (T5) a prompt is the encoder's input, each "<mask>" in it a sentinel,
// and the decoder starts from [BOS] (megatron-core's T5 inference wrapper).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mt/infer/generator.h"
#include "mt/infer/sampler.h"
#include "mt/model.h"
#include "mt/tokenizer.h"

namespace mt::generate_tool {

struct TextRequest {
    std::vector<std::string> prompts;
    int64_t tokens_to_generate = 64;
    infer::SamplingParams sampling;
    double top_p_decay = 0.0, top_p_bound = 0.0;
    bool logprobs = false;
    bool prompt_logprobs = true;  // false: log-probs of the generated tokens only
    int64_t top_n_logprobs = 0;   // also the this many most likely tokens at each position
    bool add_bos = false;
    bool stop_on_eol = false, stop_on_double_eol = false, prevent_newline_after_colon = false;
    std::optional<uint64_t> random_seed;    // reseeds the generator's stream for this request
    std::optional<int32_t> termination_id;  // ends a row instead of the EOD (-1: nothing does)
    // Megatron's SamplingParams.stop_words (one prompt only): generation ends when the generated
    // ids end with a stop word's ids (tokenized without BOS), which are then dropped.
    std::vector<std::string> stop_words;
};

struct TextResult {
    std::vector<std::string> text;             // prompt + generation, detokenized
    std::vector<std::vector<int32_t>> tokens;  // prompt + generated ids
    // Per row, of every token after the first (with prompt_logprobs false: of the generated
    // tokens only); empty unless the request asked for log-probs.
    std::vector<std::vector<float>> logprobs;
    // Per row, the request's top_n_logprobs most likely tokens at the positions log-probs are
    // given for (the same ones whether or not logprobs was asked for).
    std::vector<std::vector<std::vector<infer::TopLogProb>>> top_logprobs;
    std::vector<std::vector<std::string>> segments;  // per row, each token detokenized alone
    // Per row, the ids it starts with: the prompt's (with a BOS), or an encoder-decoder
    // model's decoder start; the generated ids follow them.
    std::vector<size_t> prompt_lengths;
};

// Not thread-safe: one request at a time (the server queues them).
class TextGenerator {
  public:
    TextGenerator(Model& model, const Tokenizer& tokenizer, uint64_t seed);

    // mt::Error (with Megatron's message where it has one) for requests it cannot run.
    TextResult run(const TextRequest& request);
    // infer::generate on prompts of token ids with this generator's stop ids and random stream
    // (reseeded first when `seed` is given): the OpenAI-style endpoints, which keep a client's
    // ids as they are.
    infer::GenerationResult run_ids(const infer::GenerationRequest& request,
                                    std::optional<uint64_t> seed);

    const Tokenizer& tokenizer() const { return tokenizer_; }
    Model& model() const { return model_; }
    uint64_t seed() const { return seed_; }  // the random stream's, as constructed
    const infer::GenerationTokens& generation_tokens() const { return ids_; }
    // The model's position limit (0: none).
    int64_t max_positions() const { return model_.max_positions(); }

  private:
    // The request's stop words as ids (none without stop words).
    std::vector<std::vector<int32_t>> stop_word_ids(const TextRequest& r) const;

    Model& model_;
    const Tokenizer& tokenizer_;
    infer::GenerationTokens ids_;
    infer::SamplingRng rng_;
    uint64_t seed_;
    // An encoder-decoder model's decoder start ([BOS]) and the sentinels "<mask>" becomes.
    int32_t decoder_start_ = 0;
    std::vector<int32_t> sentinels_;
};

}  // namespace mt::generate_tool
