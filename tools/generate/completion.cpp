// complete_batch(): the requests' prompts as token ids through infer::generate (log-probs always,
// as Megatron's endpoint asks for them; the top-n when requested), then each row cut and shaped.
#include "completion.h"

#include <algorithm>

#include "mt/error.h"
#include "mt/io/json_writer.h"
#include "mt/text/utf8.h"

namespace mt::generate_tool {

namespace {

// code_points[i]: the characters in text[0, i).
std::vector<int64_t> code_point_counts(const std::string& text) {
    std::vector<int64_t> counts(text.size() + 1, 0);
    for (size_t i = 0; i < text.size(); ++i)
        counts[i + 1] = counts[i] + !text::is_utf8_continuation(text[i]);
    return counts;
}

// One row of the batch as a choice: `ids` (prompt and generation, cut to the prompt's length +
// max_tokens), log_probs[i] predicting ids[i + 1].
CompletionChoice shape_choice(const Tokenizer& tokenizer, const CompletionRequest& r,
                              const std::vector<std::string>& stops, std::vector<int32_t> ids,
                              size_t prompt_length, const std::vector<float>& log_probs,
                              const std::vector<std::vector<infer::TopLogProb>>* top,
                              bool ended_at_eod, int64_t& completion_tokens) {
    const std::string text = tokenizer.decode(ids);
    const size_t first = r.echo ? 0 : prompt_length;
    const std::vector<size_t> offsets = token_byte_offsets(tokenizer, ids, text, first);
    const auto start_of = [&](size_t i) { return i < ids.size() ? offsets[i] : text.size(); };

    CompletionChoice choice;
    size_t end_token = ids.size(), end_byte = text.size();
    if (ended_at_eod) {  // the end-of-document token ends the list; its text is not output
        end_byte = start_of(ids.size() - 1);
        choice.finish_reason = "stop";
    }
    // The first stop string in the generation: the text ends before it, the tokens with the one
    // that reaches into it (the token where generation stopped).
    if (const size_t at = first_stop(text, start_of(prompt_length), stops);
        at != std::string::npos && at < end_byte) {
        end_byte = at;
        for (size_t i = prompt_length; i < ids.size(); ++i)
            if (start_of(i + 1) > at) {
                end_token = i + 1;
                break;
            }
        choice.finish_reason = "stop";
    }
    const size_t text_start = r.echo ? 0 : start_of(prompt_length);
    choice.text = text.substr(text_start, std::max(end_byte, text_start) - text_start);

    const std::vector<int64_t> code_points = code_point_counts(text);
    for (size_t i = first; i < end_token; ++i) {
        choice.tokens.push_back(tokenizer.decode(std::span(&ids[i], 1)));
        choice.text_offset.push_back(code_points[offsets[i]]);
        choice.token_logprobs.push_back(i == 0 ? std::nullopt
                                               : std::optional<float>(log_probs[i - 1]));
        if (!top) continue;
        if (i == 0) {
            choice.top_logprobs.emplace_back();
            continue;
        }
        std::vector<std::pair<std::string, float>> entries;
        const auto& candidates = (*top)[i - 1];  // the batch's n: this request's first
        for (size_t k = 0; k < std::min(candidates.size(), size_t(r.logprobs)); ++k) {
            const infer::TopLogProb& t = candidates[k];
            std::string piece = tokenizer.decode(std::span(&t.id, 1));
            const bool seen = std::any_of(entries.begin(), entries.end(),
                                          [&](const auto& e) { return e.first == piece; });
            if (!seen) entries.emplace_back(std::move(piece), t.log_prob);
        }
        choice.top_logprobs.emplace_back(std::move(entries));
    }
    completion_tokens += int64_t(end_token > prompt_length ? end_token - prompt_length : 0);
    return choice;
}

}  // namespace

size_t first_stop(std::string_view text, size_t from, const std::vector<std::string>& stops) {
    size_t at = std::string::npos;
    for (const auto& s : stops)
        if (!s.empty()) at = std::min(at, text.find(s, from));
    return at;
}

std::vector<std::string> stop_strings(const Tokenizer& tokenizer, const CompletionRequest& r,
                                      int32_t eod) {
    return r.stop ? *r.stop : std::vector<std::string>{tokenizer.decode(std::span(&eod, 1))};
}

std::vector<size_t> token_byte_offsets(const Tokenizer& tokenizer, std::span<const int32_t> ids,
                                       const std::string& text, size_t from) {
    std::vector<size_t> offsets(ids.size(), 0);
    size_t previous = 0;
    for (size_t i = std::max<size_t>(from, 1); i < ids.size(); ++i) {
        const std::string before = tokenizer.decode(ids.first(i));
        const size_t agreed =
            std::mismatch(before.begin(), before.end(), text.begin(), text.end()).first -
            before.begin();
        previous = offsets[i] = std::max(text::utf8_prefix(text, agreed).size(), previous);
    }
    return offsets;
}

void tokenize_prompts(const Tokenizer& tokenizer, CompletionRequest& r) {
    for (size_t i = 0; i < r.prompts.size(); ++i) {
        auto& prompt = r.prompts[i];
        if (const auto* text = std::get_if<std::string>(&prompt)) {
            std::vector<int32_t> ids = tokenizer.encode(*text);
            MT_CHECK(!ids.empty(), "prompt ", i, " has no tokens");
            prompt = std::move(ids);
        }
    }
}

bool can_join_a_batch(const CompletionRequest& r) {
    return r.sampling.top_k == 1;
}

std::vector<CompletionResult> complete_batch(TextGenerator& generator,
                                             std::span<const CompletionRequest* const> requests) {
    MT_CHECK(!requests.empty(), "completion: no requests");
    const Tokenizer& tokenizer = generator.tokenizer();
    const int32_t eod = generator.generation_tokens().eod;
    const CompletionRequest& first = *requests.front();
    infer::GenerationRequest g;
    g.sampling = first.sampling;
    g.tokens_to_generate = 0;
    g.return_log_probs = true;
    g.prompt_log_probs = false;
    g.log_probs_over_vocab = true;  // as the Hugging Face export's; clients compare with those
    for (const CompletionRequest* r : requests) {
        MT_CHECK(requests.size() == 1 || can_join_a_batch(*r),
                 "completion: only greedy requests share a batch");
        for (const auto& prompt : r->prompts)
            g.prompts.push_back(std::get<std::vector<int32_t>>(prompt));
        g.tokens_to_generate = std::max(g.tokens_to_generate, r->max_tokens);
        g.prompt_log_probs = g.prompt_log_probs || r->echo;  // else only generated tokens' show
        g.top_n_log_probs = std::max(g.top_n_log_probs, r->logprobs);
    }
    infer::GenerationResult out = generator.run_ids(g, first.seed);

    std::vector<CompletionResult> results;
    size_t row = 0;
    for (const CompletionRequest* r : requests) {
        infer::GenerationResult rows;  // this request's rows of the batch
        for (size_t p = 0; p < r->prompts.size(); ++p, ++row) {
            rows.tokens.push_back(std::move(out.tokens[row]));
            rows.log_probs.push_back(std::move(out.log_probs[row]));
            if (!out.top_log_probs.empty())
                rows.top_log_probs.push_back(std::move(out.top_log_probs[row]));
        }
        results.push_back(shape_completion(tokenizer, eod, *r, std::move(rows)));
    }
    return results;
}

CompletionResult shape_completion(const Tokenizer& tokenizer, int32_t eod,
                                  const CompletionRequest& r, infer::GenerationResult rows) {
    const std::vector<std::string> stops = stop_strings(tokenizer, r, eod);
    CompletionResult result;
    for (size_t p = 0; p < r.prompts.size(); ++p) {
        const size_t prompt_length = std::get<std::vector<int32_t>>(r.prompts[p]).size();
        std::vector<int32_t>& ids = rows.tokens[p];
        // A row of a batch runs on to the batch's longest prompt + largest max_tokens: its own.
        ids.resize(std::min(ids.size(), prompt_length + size_t(r.max_tokens)));
        const bool ended_at_eod = ids.size() > prompt_length && ids.back() == eod;
        result.prompt_tokens += int64_t(prompt_length);
        result.choices.push_back(shape_choice(tokenizer, r, stops, std::move(ids), prompt_length,
                                              rows.log_probs[p],
                                              r.logprobs > 0 ? &rows.top_log_probs[p] : nullptr,
                                              ended_at_eod, result.completion_tokens));
    }
    return result;
}

std::string completion_response(const CompletionResult& result, const CompletionRequest& request,
                                const std::string& id, const std::string& model, int64_t created) {
    io::JsonWriter w;
    w.begin_object().key("id").value(id).key("object").value("text_completion");
    w.key("created").value(created).key("model").value(model).key("choices").begin_array();
    for (size_t i = 0; i < result.choices.size(); ++i) {
        const CompletionChoice& c = result.choices[i];
        w.begin_object().key("index").value(int64_t(i)).key("text").value(c.text);
        w.key("logprobs").begin_object().key("tokens").begin_array();
        for (const auto& t : c.tokens) w.value(t);
        w.end_array().key("token_logprobs").begin_array();
        for (const auto& p : c.token_logprobs) p ? w.value(double(*p)) : w.null();
        w.end_array().key("top_logprobs");
        if (request.logprobs > 0) {
            w.begin_array();
            for (const auto& top : c.top_logprobs) {
                if (!top) {
                    w.null();
                    continue;
                }
                w.begin_object();
                for (const auto& [piece, p] : *top) w.key(piece).value(double(p));
                w.end_object();
            }
            w.end_array();
        } else {
            w.null();
        }
        w.key("text_offset").begin_array();
        for (int64_t o : c.text_offset) w.value(o);
        w.end_array().end_object();
        w.key("finish_reason").value(c.finish_reason).end_object();
    }
    w.end_array().key("usage").begin_object();
    w.key("prompt_tokens").value(result.prompt_tokens);
    w.key("completion_tokens").value(result.completion_tokens);
    w.key("total_tokens").value(result.prompt_tokens + result.completion_tokens);
    w.end_object().end_object();
    return w.str();
}

}  // namespace mt::generate_tool
