// POST /completions validation: OpenAI's field names and types, Megatron's mapping of them onto
// its sampling (temperature 0 is greedy) and its refusals (best_of, n, more than 10 log-probs,
// no echo when nothing is generated); OpenAI's other features are refused by name rather than
// ignored.
#include "completion_request.h"

#include "json_fields.h"
#include "mt/error.h"

namespace mt::generate_tool {

namespace {

using namespace json;

// One prompt of token ids, or the message.
std::variant<std::vector<int32_t>, std::string> read_ids(simdjson::dom::array items,
                                                         int64_t vocab_size, size_t prompt) {
    auto ids = read_token_ids(items, vocab_size, mt::str("prompt ", prompt));
    if (auto* list = std::get_if<std::vector<int32_t>>(&ids); list && list->empty())
        return mt::str("prompt ", prompt, " is empty");
    return ids;
}

// "prompt": a string, a list of strings, a list of token ids, or a list of lists of token ids.
std::optional<std::string> read_prompts(element prompt, int64_t vocab_size, CompletionRequest& r) {
    if (prompt.type() == element_type::STRING) {
        if (std::string_view(prompt).empty()) return "prompt 0 is empty";
        r.prompts.emplace_back(std::string(std::string_view(prompt)));
        return std::nullopt;
    }
    if (prompt.type() != element_type::ARRAY)
        return "prompt must be a string, a list of strings, a list of token ids or a list of lists "
               "of token ids";
    simdjson::dom::array items(prompt);
    if (items.size() == 0) return "prompt contains no items";
    element first = items.at(0);
    if (is_int(first)) {  // one prompt of ids
        auto ids = read_ids(items, vocab_size, 0);
        if (auto* message = std::get_if<std::string>(&ids)) return *message;
        r.prompts.emplace_back(std::get<std::vector<int32_t>>(std::move(ids)));
        return std::nullopt;
    }
    if (items.size() > kMaxCompletionPrompts)
        return mt::str("Maximum number of prompts is ", kMaxCompletionPrompts);
    for (element item : items) {
        const size_t index = r.prompts.size();
        if (item.type() == element_type::STRING && first.type() == element_type::STRING) {
            if (std::string_view(item).empty()) return mt::str("prompt ", index, " is empty");
            r.prompts.emplace_back(std::string(std::string_view(item)));
        } else if (item.type() == element_type::ARRAY && first.type() == element_type::ARRAY) {
            auto ids = read_ids(simdjson::dom::array(item), vocab_size, index);
            if (auto* message = std::get_if<std::string>(&ids)) return *message;
            r.prompts.emplace_back(std::get<std::vector<int32_t>>(std::move(ids)));
        } else {
            return "prompt must be a string, a list of strings, a list of token ids or a list of "
                   "lists of token ids, not a mix";
        }
    }
    return std::nullopt;
}

std::optional<std::string> read_stop(element stop, CompletionRequest& r) {
    std::vector<std::string> strings;
    if (stop.type() == element_type::STRING) {
        strings.emplace_back(std::string_view(stop));
    } else if (stop.type() == element_type::ARRAY) {
        for (element s : simdjson::dom::array(stop)) {
            if (s.type() != element_type::STRING)
                return "stop must be a string or a list of strings";
            strings.emplace_back(std::string_view(s));
        }
        if (strings.size() > 16) return "stop takes at most 16 strings";
    } else {
        return "stop must be a string or a list of strings";
    }
    r.stop = std::move(strings);
    return std::nullopt;
}

std::variant<CompletionRequest, std::string> validate(const Fields& f, int64_t vocab_size) {
    CompletionRequest r;
    auto prompt = f.given("prompt");
    if (!prompt) return "prompt argument required";
    if (auto message = read_prompts(*prompt, vocab_size, r)) return *message;

    if (auto e = f.given("max_tokens")) {
        if (!is_int(*e) || integer(*e) < 0) return "max_tokens must be an integer >= 0";
        r.max_tokens = integer(*e);
    }
    if (auto message = read_sampling_fields(f, r)) return *message;
    if (auto e = f.given("logprobs")) {
        if (!is_int(*e) || integer(*e) < 0) return "logprobs must be an integer >= 0";
        if (integer(*e) > kMaxTopLogprobs) return "return_topk_logprobs > 10 not supported";
        r.logprobs = integer(*e);
    }
    if (auto e = f.given("echo")) {
        if (!is_bool(*e)) return "echo must be a boolean value";
        r.echo = bool(*e);
    }
    if (!r.echo && r.max_tokens == 0) return "echo=False not supported when tokens_to_generate=0";
    if (auto e = f.given("best_of"); e && (!is_int(*e) || integer(*e) != 1))
        return "best_of > 1 not supported";
    if (r.stream && (r.prompts.size() > 1 || r.echo || r.logprobs > 0))
        return "not supported yet: stream with several prompts, echo or logprobs";
    if (auto e = f.given("suffix");
        e && (e->type() != element_type::STRING || !std::string_view(*e).empty()))
        return "not supported yet: suffix";
    return r;
}

}  // namespace

std::optional<std::string> read_sampling_fields(const json::Fields& f, CompletionRequest& r) {
    double temperature = 1.0, top_p = 1.0;
    if (auto e = f.given("temperature")) {
        if (!is_number(*e)) return "temperature must be a number";
        temperature = number(*e);
        if (!(temperature >= 0.0 && temperature <= 100.0))
            return "temperature must be between 0 and 100";
    }
    if (auto e = f.given("top_p")) {
        if (!is_number(*e)) return "top_p must be a number";
        top_p = number(*e);
        if (!(top_p > 0.0 && top_p <= 1.0)) return "top_p must be greater than 0 and at most 1";
    }
    if (auto e = f.given("top_k")) {
        if (!is_int(*e) || integer(*e) < 0 || integer(*e) > 1000)
            return "top_k must be an integer between 0 and 1000";
        r.sampling.top_k = integer(*e);
    }
    if (temperature == 0.0) {  // OpenAI's greedy
        r.sampling = {.top_k = 1, .top_p = 0.0, .temperature = 1.0};
    } else {
        r.sampling.temperature = temperature;
        r.sampling.top_p = top_p < 1.0 ? top_p : 0.0;  // 1 keeps every token: no nucleus
        if (r.sampling.top_k > 0 && r.sampling.top_p > 0.0)
            return "cannot set both top-k and top-p samplings.";
    }
    if (auto e = f.given("stop"))
        if (auto message = read_stop(*e, r)) return *message;
    if (auto e = f.given("seed")) {
        if (!is_int(*e) || integer(*e) < 0) return "seed must be an integer >= 0";
        r.seed = uint64_t(integer(*e));
    }
    if (auto e = f.given("n"); e && (!is_int(*e) || integer(*e) != 1))
        return "num_completions > 1 not supported";
    if (auto e = f.given("stream")) {
        if (!is_bool(*e)) return "stream must be a boolean value";
        r.stream = bool(*e);
    }
    if (auto e = f.given("stream_options")) {
        element usage;
        if (e->type() != element_type::OBJECT) return "stream_options must be an object";
        if (!simdjson::dom::object(*e).at_key("include_usage").get(usage)) {
            if (!is_bool(usage)) return "stream_options.include_usage must be a boolean value";
            r.stream_usage = bool(usage);
        }
    }
    for (const char* penalty : {"presence_penalty", "frequency_penalty"})
        if (auto e = f.given(penalty); e && (!is_number(*e) || number(*e) != 0.0))
            return mt::str("not supported yet: ", penalty);
    if (auto e = f.given("logit_bias");
        e && (e->type() != element_type::OBJECT || simdjson::dom::object(*e).size() != 0))
        return "not supported yet: logit_bias";
    return std::nullopt;
}

std::variant<CompletionRequest, std::string> parse_completion_request(std::string_view body,
                                                                      int64_t vocab_size) {
    return read_object(body, [&](const Fields& f) { return validate(f, vocab_size); });
}

}  // namespace mt::generate_tool
