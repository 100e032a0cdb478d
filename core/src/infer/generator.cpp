// Megatron's static-batch generation loop on a KV cache: one prefill of the shortest prompt's
// length, then one position per step for every row; rows still inside their prompt keep the
// prompt's token, the others take the sample.
#include "mt/infer/generator.h"

#include <algorithm>
#include <memory>
#include <span>

#include "mt/error.h"
#include "mt/nn/inference_state.h"
#include "next_token_scores.h"

namespace mt::infer {

namespace {

// The padded [B, S] token table with each row's prompt length.
struct TokenTable {
    int64_t B = 0, S = 0;
    std::vector<int32_t> ids;
    std::vector<int64_t> lengths;

    int32_t& at(int64_t b, int64_t t) { return ids[size_t(b * S + t)]; }
    // Columns [t0, t1) of every row as i64 [B, t1 - t0].
    Tensor columns(int64_t t0, int64_t t1) {
        Tensor out = Tensor::empty({B, t1 - t0}, DType::i64);
        for (int64_t b = 0; b < B; ++b)
            for (int64_t t = t0; t < t1; ++t)
                out.data<int64_t>()[b * (t1 - t0) + t - t0] = at(b, t);
        return out;
    }
};

TokenTable pad_prompts(const GenerationRequest& r, int32_t eod) {
    TokenTable table;
    table.B = int64_t(r.prompts.size());
    for (const auto& prompt : r.prompts) table.lengths.push_back(int64_t(prompt.size()));
    table.S = *std::max_element(table.lengths.begin(), table.lengths.end()) + r.tokens_to_generate;
    table.ids.assign(size_t(table.B * table.S), eod);
    for (int64_t b = 0; b < table.B; ++b)
        std::copy(r.prompts[size_t(b)].begin(), r.prompts[size_t(b)].end(), &table.at(b, 0));
    return table;
}

// Per row, the log-prob of each token after the first (and the top-n there, if asked).
class LogProbRecord {
  public:
    // `normalised_vocab`: the ids the softmax runs over (0: the whole padded row).
    LogProbRecord(int64_t B, int64_t S, int64_t top_n, int64_t vocab, int64_t normalised_vocab)
        : log_probs_(size_t(B), std::vector<float>(size_t(S - 1))),
          top_n_(top_n),
          vocab_(vocab),
          normalised_vocab_(normalised_vocab) {
        if (top_n_ > 0) top_.assign(size_t(B), std::vector<std::vector<TopLogProb>>(size_t(S - 1)));
    }

    // The tokens that follow positions [t0, t0 + n) of each row, n = logits.size(1).
    void record(const Tensor& logits, TokenTable& table, int64_t t0) {
        for (int64_t b = 0; b < table.B; ++b)
            for (int64_t j = 0; j < logits.size(1); ++j)
                log_probs_[size_t(b)][size_t(t0 + j)] = next_token_log_prob(
                    logits_row(logits, b, j), normalised_vocab_, table.at(b, t0 + j + 1), top_n_,
                    vocab_, top_n_ > 0 ? &top_[size_t(b)][size_t(t0 + j)] : nullptr);
    }

    // Row b's values, cut to a row of `length` tokens.
    void move_row(int64_t b, int64_t length, GenerationResult& out) {
        log_probs_[size_t(b)].resize(size_t(length - 1));
        out.log_probs.push_back(std::move(log_probs_[size_t(b)]));
        if (top_n_ == 0) return;
        top_[size_t(b)].resize(size_t(length - 1));
        out.top_log_probs.push_back(std::move(top_[size_t(b)]));
    }

  private:
    std::vector<std::vector<float>> log_probs_;
    std::vector<std::vector<std::vector<TopLogProb>>> top_;
    int64_t top_n_, vocab_, normalised_vocab_;
};

GenerationResult finish(TokenTable& table, const std::vector<int64_t>& lengths,
                        LogProbRecord* log_probs) {
    GenerationResult result;
    for (int64_t b = 0; b < table.B; ++b) {
        const int64_t len = lengths[size_t(b)];
        result.tokens.emplace_back(&table.at(b, 0), &table.at(b, 0) + len);
        if (log_probs) log_probs->move_row(b, len, result);
    }
    return result;
}

Tensor model_logits(Model& model, const Tensor& tokens, nn::InferenceState* cache,
                    int64_t keep_last) {
    return checked_logits(model.logits(tokens, cache, keep_last));
}

bool is(std::optional<int32_t> id, int32_t token) {
    return id && *id == token;
}

// An encoder-decoder model's state for `B` rows of up to `S` decoder positions, holding its
// encoder's output for the request's encoder prompts (padded with id 0, which no query sees).
std::unique_ptr<nn::InferenceState> encoded_state(Model& model, const GenerationRequest& r,
                                                  int64_t B, int64_t S) {
    MT_CHECK(int64_t(r.encoder_prompts.size()) == B, "generation: ", r.encoder_prompts.size(),
             " encoder inputs for ", B, " prompts of an encoder-decoder model");
    int64_t Te = 0;
    for (const auto& p : r.encoder_prompts) {
        MT_CHECK(!p.empty(), "generation: an encoder input has no tokens");
        Te = std::max(Te, int64_t(p.size()));
    }
    std::vector<int32_t> tokens(size_t(B * Te), 0), lengths;
    for (int64_t b = 0; b < B; ++b) {
        const auto& p = r.encoder_prompts[size_t(b)];
        std::copy(p.begin(), p.end(), tokens.begin() + b * Te);
        lengths.push_back(int32_t(p.size()));
    }
    auto state = model.make_inference_state(B, S);
    model.encode(host_tensor(std::move(tokens), {B, Te}), host_tensor(std::move(lengths), {B}),
                 *state);
    return state;
}

}  // namespace

void check_prompts(const Model& model, std::span<const std::vector<int32_t>> prompts,
                   int64_t tokens_to_generate) {
    MT_CHECK(tokens_to_generate >= 0, "generation: tokens_to_generate must be >= 0, got ",
             tokens_to_generate);
    int64_t longest = 0;
    for (size_t b = 0; b < prompts.size(); ++b) {
        MT_CHECK(!prompts[b].empty(), "generation: prompt ", b,
                 " has no tokens (empty prompts need add_BOS)");
        longest = std::max(longest, int64_t(prompts[b].size()));
    }
    // Checked before anything is allocated, and without adding the two, which a
    // tokens_to_generate near INT64_MAX would wrap. A model without a position limit still gets
    // one (2^24 positions) rather than an allocation of any size a request asks for.
    const int64_t limit = model.max_positions() > 0 ? model.max_positions() : int64_t(1) << 24;
    MT_CHECK(longest <= limit && tokens_to_generate <= limit - longest,
             "Length of prompt + tokens_to_generate longer than allowed (", longest, " + ",
             tokens_to_generate, " > ", limit, ")");
}

GenerationResult generate(Model& model, const GenerationRequest& r, const GenerationTokens& ids,
                          SamplingRng& rng) {
    MT_CHECK(!r.prompts.empty(), "generation: no prompts");
    check_prompts(model, r.prompts, r.tokens_to_generate);
    MT_CHECK(r.tokens_to_generate > 0 || r.return_log_probs,
             "tokens_to_generate=0 implies logprobs should be True");
    MT_CHECK(r.top_n_log_probs >= 0 && (r.top_n_log_probs == 0 || r.return_log_probs),
             "generation: top_n_log_probs (", r.top_n_log_probs,
             ") must be >= 0 and needs return_log_probs");
    TokenTable table = pad_prompts(r, ids.eod);
    const int64_t B = table.B, S = table.S;
    LogProbRecord log_probs(r.return_log_probs ? B : 0, S, r.top_n_log_probs, ids.vocab_size,
                            r.log_probs_over_vocab ? ids.vocab_size : 0);

    MT_CHECK(model.has_encoder() || r.encoder_prompts.empty(),
             "generation: encoder inputs for a model without an encoder");
    auto cache = model.has_encoder() ? encoded_state(model, r, B, S) : nullptr;
    if (r.tokens_to_generate == 0) {  // score only: one forward over the whole prompts
        log_probs.record(model_logits(model, table.columns(0, S - 1), cache.get(), 0), table, 0);
        return finish(table, table.lengths, &log_probs);
    }

    check_sampling(r.sampling, ids.vocab_size);
    SamplingParams sampling = r.sampling;
    const int64_t min_prompt = *std::min_element(table.lengths.begin(), table.lengths.end());
    if (!cache) cache = model.make_inference_state(B, S);
    std::vector<int64_t> lengths(size_t(B), S);
    std::vector<bool> done(size_t(B), false);
    std::vector<int32_t> step_ids;
    int64_t prev = 0, context = min_prompt;
    for (; context < S; ++context) {
        Tensor logits = model_logits(model, table.columns(prev, context), cache.get(),
                                     r.return_log_probs && r.prompt_log_probs ? 0 : 1);
        const int64_t last = logits.size(1) - 1;
        bool all_done = true;
        for (int64_t b = 0; b < B; ++b) {
            std::span<float> x = logits_row(logits, b, last);
            const int32_t previous = table.at(b, context - 1);
            if (r.prevent_newline_after_colon && ids.newline && is(ids.colon, previous))
                x[size_t(*ids.newline)] = -1e10f;
            const auto sample = int32_t(sample_token(x, sampling, ids.vocab_size, rng));
            const bool started = table.lengths[size_t(b)] <= context;
            if (started) table.at(b, context) = sample;
            bool stop;
            if (r.stop_on_double_eol)
                stop = is(ids.double_newline, sample) ||
                       (is(ids.newline, sample) && is(ids.newline, previous));
            else if (r.stop_on_eol)
                stop = is(ids.double_newline, sample) || is(ids.newline, sample);
            else
                stop = sample == r.termination_id.value_or(ids.eod);
            if (started && stop && !done[size_t(b)]) {
                lengths[size_t(b)] = context + 1;
                done[size_t(b)] = true;
            }
            all_done = all_done && done[size_t(b)];
        }
        if (r.return_log_probs) log_probs.record(logits, table, context - logits.size(1));
        if (sampling.top_p > 0.0 && r.top_p_decay > 0.0)
            sampling.top_p = std::max(sampling.top_p * r.top_p_decay, r.top_p_bound);
        prev = context;
        if (r.on_step) {
            step_ids.clear();
            for (int64_t b = 0; b < B; ++b) step_ids.push_back(table.at(b, context));
            if (!r.on_step(step_ids)) {
                for (int64_t b = 0; b < B; ++b)
                    if (!done[size_t(b)]) lengths[size_t(b)] = context + 1;
                break;
            }
        }
        if (r.stop_at_eod && all_done) break;
    }
    return finish(table, lengths, r.return_log_probs ? &log_probs : nullptr);
}

}  // namespace mt::infer
