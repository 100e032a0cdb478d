#include "mt/infer/continuous_batch.h"

#include <algorithm>

#include "mt/error.h"
#include "mt/nn/inference_state.h"
#include "next_token_scores.h"

namespace mt::infer {

struct ContinuousBatch::Sequence {
    SequenceRequest request;
    std::unique_ptr<nn::InferenceState> state;  // none for a score-only request
    int64_t state_bytes = 0;
    std::vector<int32_t> tokens;  // prompt + generated
    int64_t prompt_length = 0;
    int64_t read = 0;              // positions the state holds
    std::vector<float> log_probs;  // [i]: log p(tokens[i + 1])
    std::vector<std::vector<TopLogProb>> top;
    SamplingRng rng;
    bool ended = false;
    std::exception_ptr error;

    bool generating() const { return !ended && read >= prompt_length; }
    std::vector<TopLogProb>* top_at(int64_t i) {
        return request.top_n_log_probs > 0 ? &top[size_t(i)] : nullptr;
    }
};

namespace {

// ids as i64 [1, n].
Tensor token_row(std::span<const int32_t> ids) {
    return host_tensor(std::vector<int64_t>(ids.begin(), ids.end()), {1, int64_t(ids.size())});
}

}  // namespace

ContinuousBatch::ContinuousBatch(Model& model, const GenerationTokens& ids, size_t max_active,
                                 int64_t prefill_tokens, int64_t memory_limit)
    : model_(model),
      ids_(ids),
      max_active_(max_active),
      prefill_tokens_(prefill_tokens),
      memory_limit_(memory_limit) {
    MT_CHECK(model.can_decode_rows(), "not supported yet: continuous batching of this model");
    MT_CHECK(max_active > 0 && prefill_tokens > 0 && memory_limit >= 0,
             "continuous batching: max_active and prefill_tokens must be positive, memory_limit "
             "not negative");
}

ContinuousBatch::~ContinuousBatch() = default;

void ContinuousBatch::clear() {
    sequences_.clear();
    reserved_ = 0;
}

void ContinuousBatch::check(const SequenceRequest& r) const {
    check_prompts(model_, std::span(&r.prompt, 1), r.max_tokens);
    MT_CHECK(r.top_n_log_probs >= 0, "generation: top_n_log_probs (", r.top_n_log_probs,
             ") must be >= 0");
    if (r.max_tokens > 0) check_sampling(r.sampling, ids_.vocab_size);
}

bool ContinuousBatch::add(SequenceRequest& r) {
    if (!has_room()) return false;
    check(r);
    auto s = std::make_unique<Sequence>();
    s->prompt_length = int64_t(r.prompt.size());
    const int64_t length = s->prompt_length + r.max_tokens;
    if (r.max_tokens > 0) {
        if (memory_limit_ > 0) {
            // Measured before it is made: a request waiting for memory is tried at every step.
            const int64_t bytes = model_.inference_state_bytes(1, length);
            MT_CHECK(bytes <= memory_limit_, "the request's ", length, " positions need ",
                     double(bytes) / double(1 << 20),
                     " MiB of inference state (KV cache), more than the ",
                     double(memory_limit_) / double(1 << 20),
                     " MiB of --inference-dynamic-batching-buffer-size-gb: shorten the prompt or "
                     "max_tokens");
            if (reserved_ + bytes > memory_limit_) return false;
        }
        s->state = model_.make_inference_state(1, length);
        s->state_bytes = s->state->bytes();
    }
    s->tokens = r.prompt;
    s->tokens.reserve(size_t(length));
    s->log_probs.assign(size_t(length - 1), 0.0f);
    if (r.top_n_log_probs > 0) s->top.resize(size_t(length - 1));
    s->rng.reseed(r.seed);
    s->request = std::move(r);
    reserved_ += s->state_bytes;
    sequences_.push_back(std::move(s));
    return true;
}

void ContinuousBatch::step() {
    prefill();
    decode();
    finish_ended();
}

void ContinuousBatch::prefill() {
    // The oldest sequence still reading its prompt reads T = min(budget, what it has left)
    // tokens; those after it with at least T left read T too, in the same pass, while the
    // step's budget lasts (requests that arrive together are read together).
    std::vector<Sequence*> rows;
    int64_t T = 0;
    for (auto& s : sequences_) {
        if (s->ended || s->read >= s->prompt_length) continue;
        const int64_t left = s->prompt_length - s->read;
        if (rows.empty() && s->request.max_tokens == 0) {
            try {
                score(*s);
            } catch (...) {
                s->error = std::current_exception();
            }
            s->ended = true;
            return;
        }
        if (rows.empty())
            T = std::min(prefill_tokens_, left);
        else if (s->request.max_tokens == 0 || left < T ||
                 int64_t(rows.size() + 1) * T > prefill_tokens_)
            continue;
        rows.push_back(s.get());
    }
    if (rows.empty()) return;
    const auto B = int64_t(rows.size());
    std::vector<int64_t> ids;
    std::vector<nn::InferenceState*> states;
    bool all_positions = false;
    for (Sequence* s : rows) {
        ids.insert(ids.end(), s->tokens.begin() + s->read, s->tokens.begin() + s->read + T);
        states.push_back(s->state.get());
        all_positions = all_positions || s->request.prompt_log_probs;
    }
    try {
        const Tensor logits = checked_logits(
            model_.decode_rows(host_tensor(std::move(ids), {B, T}), states, all_positions ? 0 : 1));
        const int64_t n = logits.size(1);
        for (int64_t b = 0; b < B; ++b) {
            Sequence& s = *rows[size_t(b)];
            const SequenceRequest& r = s.request;
            const int64_t first = s.read + T - n;  // the position of the first row of logits
            if (r.prompt_log_probs)
                for (int64_t j = 0; j < n && first + j + 1 < s.prompt_length; ++j)
                    s.log_probs[size_t(first + j)] = next_token_log_prob(
                        logits_row(logits, b, j), ids_.vocab_size, s.tokens[size_t(first + j + 1)],
                        r.top_n_log_probs, ids_.vocab_size, s.top_at(first + j));
            s.read += T;
            if (s.read == s.prompt_length) take(s, logits_row(logits, b, n - 1));
        }
    } catch (...) {
        for (Sequence* s : rows) {
            s->error = std::current_exception();
            s->ended = true;
        }
    }
}

void ContinuousBatch::score(Sequence& s) {
    // One pass over the prompt without a state, as generate() scores.
    const int64_t P = s.prompt_length;
    if (P > 1) {
        const Tensor logits = checked_logits(
            model_.logits(token_row(std::span(s.tokens).first(size_t(P - 1))), nullptr, 0));
        for (int64_t j = 0; j + 1 < P; ++j)
            s.log_probs[size_t(j)] = next_token_log_prob(
                logits_row(logits, 0, j), ids_.vocab_size, s.tokens[size_t(j + 1)],
                s.request.top_n_log_probs, ids_.vocab_size, s.top_at(j));
    }
    s.read = P;
}

void ContinuousBatch::decode() {
    std::vector<Sequence*> rows;
    std::vector<nn::InferenceState*> states;
    std::vector<int64_t> next;
    for (auto& s : sequences_) {
        if (!s->generating()) continue;
        rows.push_back(s.get());
        states.push_back(s->state.get());
        next.push_back(s->tokens[size_t(s->read)]);
    }
    if (rows.empty()) return;
    try {
        const int64_t B = int64_t(rows.size());
        const Tensor logits =
            checked_logits(model_.decode_rows(host_tensor(std::move(next), {B, 1}), states, 1));
        for (int64_t b = 0; b < B; ++b) {
            ++rows[size_t(b)]->read;
            take(*rows[size_t(b)], logits_row(logits, b, 0));
        }
    } catch (...) {
        for (Sequence* s : rows) {
            s->error = std::current_exception();
            s->ended = true;
        }
    }
}

void ContinuousBatch::take(Sequence& s, std::span<float> x) {
    const SequenceRequest& r = s.request;
    const int64_t at = int64_t(s.tokens.size()) - 1;  // the position x follows
    const auto sample = int32_t(sample_token(x, r.sampling, ids_.vocab_size, s.rng));
    s.tokens.push_back(sample);
    s.log_probs[size_t(at)] = next_token_log_prob(x, ids_.vocab_size, sample, r.top_n_log_probs,
                                                  ids_.vocab_size, s.top_at(at));
    const bool go_on = !r.on_token || r.on_token(sample);
    if (!go_on || sample == ids_.eod || int64_t(s.tokens.size()) == s.prompt_length + r.max_tokens)
        s.ended = true;
}

void ContinuousBatch::finish_ended() {
    for (auto it = sequences_.begin(); it != sequences_.end();) {
        Sequence& s = **it;
        if (!s.ended) {
            ++it;
            continue;
        }
        if (s.error) {
            if (s.request.on_error) s.request.on_error(s.error);
        } else if (s.request.on_done) {
            GenerationResult result;
            s.log_probs.resize(s.tokens.size() - 1);
            result.log_probs.push_back(std::move(s.log_probs));
            if (s.request.top_n_log_probs > 0) {
                s.top.resize(s.tokens.size() - 1);
                result.top_log_probs.push_back(std::move(s.top));
            }
            result.tokens.push_back(std::move(s.tokens));
            s.request.on_done(std::move(result));
        }
        reserved_ -= s.state_bytes;
        it = sequences_.erase(it);
    }
}

}  // namespace mt::infer
