// PUT /api validation: each field is type-checked the way the Python server's isinstance tests
// do (an integer is not a float: "top_p": 1 is refused, "top_p": 1.0 is accepted), then ranged.
#include "api_request.h"

#include <optional>

#include "json_fields.h"
#include "mt/error.h"
#include "mt/io/json_writer.h"
#include "mt/text/utf8.h"

namespace mt::generate_tool {

namespace {

using namespace json;

// A boolean field: its value, or the error message.
std::optional<std::string> read_bool(const Fields& f, const char* key, bool& out) {
    if (auto e = f.get(key)) {
        if (!is_bool(*e)) return std::string(key) + " must be a boolean value";
        out = bool(*e);
    }
    return std::nullopt;
}

std::variant<ApiRequest, std::string> validate(const Fields& f) {
    ApiRequest api;
    TextRequest& r = api.request;
    if (!f.has("prompts")) return "prompts argument required";
    if (f.has("max_len")) return "max_len is no longer used.  Replace with tokens_to_generate";
    if (f.has("sentences")) return "sentences is no longer used.  Replace with prompts";
    element prompts = *f.get("prompts");
    if (prompts.type() != element_type::ARRAY) return "prompts is not a list of strings";
    for (element p : simdjson::dom::array(prompts)) {
        if (p.type() != element_type::STRING) return "prompts is not a list of strings";
        r.prompts.emplace_back(std::string_view(p));
    }
    if (r.prompts.empty()) return "prompts is empty";
    if (r.prompts.size() > 128) return "Maximum number of prompts is 128";

    r.tokens_to_generate = 64;
    if (auto e = f.get("tokens_to_generate")) {
        if (!is_int(*e)) return "tokens_to_generate must be an integer greater than 0";
        r.tokens_to_generate = integer(*e);
        if (r.tokens_to_generate < 0)
            return "tokens_to_generate must be an integer greater than or equal to 0";
    }
    if (auto err = read_bool(f, "logprobs", r.logprobs)) return *err;
    if (r.tokens_to_generate == 0 && !r.logprobs)
        return "tokens_to_generate=0 implies logprobs should be True";

    if (auto e = f.get("temperature")) {
        if (!is_int(*e) && !is_float(*e))
            return "temperature must be a positive number less than or equal to 1000.0";
        r.sampling.temperature = number(*e);
        if (!(r.sampling.temperature > 0.0 && r.sampling.temperature <= 100.0))
            return "temperature must be a positive number less than or equal to 100.0";
    }
    if (auto e = f.get("top_k")) {
        if (!is_int(*e))
            return "top_k must be an integer equal to or greater than 0 and less than or equal "
                   "to 1000";
        r.sampling.top_k = integer(*e);
        if (!(r.sampling.top_k >= 0 && r.sampling.top_k <= 1000))
            return "top_k must be equal to or greater than 0 and less than or equal to 1000";
    }
    if (auto e = f.get("top_p")) {
        if (!is_float(*e)) return "top_p must be a positive float less than or equal to 1.0";
        r.sampling.top_p = double(*e);
        if (r.sampling.top_p > 0.0 && r.sampling.top_k > 0)
            return "cannot set both top-k and top-p samplings.";
        if (!(r.sampling.top_p >= 0.0 && r.sampling.top_p <= 1.0))
            return "top_p must be less than or equal to 1.0";
    }
    if (auto e = f.get("top_p_decay")) {
        if (!is_float(*e)) return "top_p_decay must be a positive float less than or equal to 1.0";
        r.top_p_decay = double(*e);
        if (r.sampling.top_p == 0.0) return "top_p_decay cannot be set without top_p";
        if (!(r.top_p_decay >= 0.0 && r.top_p_decay <= 1.0))
            return "top_p_decay must be less than or equal to 1.0";
    }
    if (auto e = f.get("top_p_bound")) {
        if (!is_float(*e))
            return "top_p_bound must be a positive float less than or equal to top_p";
        r.top_p_bound = double(*e);
        if (r.sampling.top_p == 0.0) return "top_p_bound cannot be set without top_p";
        if (!(r.top_p_bound > 0.0 && r.top_p_bound <= r.sampling.top_p))
            return "top_p_bound must be greater than 0 and less than top_p";
    }
    if (auto err = read_bool(f, "add_BOS", r.add_bos)) return *err;
    for (const auto& p : r.prompts)
        if (p.empty() && !r.add_bos) return "Empty prompts require add_BOS=true";
    if (auto err = read_bool(f, "stop_on_double_eol", r.stop_on_double_eol)) return *err;
    if (auto err = read_bool(f, "stop_on_eol", r.stop_on_eol)) return *err;
    if (auto err = read_bool(f, "prevent_newline_after_colon", r.prevent_newline_after_colon))
        return *err;
    if (auto e = f.get("random_seed")) {
        if (!is_int(*e)) return "random_seed must be integer";
        if (integer(*e) < 0) return "random_seed must be a positive integer";
        r.random_seed = uint64_t(integer(*e));
    }
    if (auto err = read_bool(f, "no_log", api.no_log)) return *err;
    if (auto e = f.get("beam_width")) {
        if (!is_int(*e)) return "beam_width must be integer";
        if (integer(*e) < 1) return "beam_width must be an integer > 1";
        if (r.prompts.size() > 1) return "When doing beam_search, batch size must be 1";
    }
    if (auto e = f.get("stop_token"); e && !is_int(*e)) return "stop_token must be an integer";
    if (auto e = f.get("length_penalty"); e && !is_float(*e))
        return "length_penalty must be a float";
    if (f.has("beam_width")) return "not supported yet: beam search (beam_width)";
    return api;
}

}  // namespace

std::variant<ApiRequest, std::string> parse_api_request(std::string_view body) {
    return read_object(body, validate);
}

std::string api_response(const TextResult& result, bool logprobs) {
    io::JsonWriter w;
    w.begin_object().key("text").begin_array();
    for (const auto& t : result.text) w.value(t);
    w.end_array().key("tokens").begin_array();
    for (const auto& row : result.tokens) {
        w.begin_array();
        for (int32_t id : row) w.value(int64_t(id));
        w.end_array();
    }
    w.end_array();
    if (logprobs) {
        w.key("logprobs").begin_array();
        for (const auto& row : result.logprobs) {
            w.begin_array();
            for (float p : row) w.value(double(p));
            w.end_array();
        }
        w.end_array();
    }
    w.key("segments").begin_array();
    for (const auto& row : result.segments) {
        w.begin_array();
        for (const auto& s : row) w.value(s);
        w.end_array();
    }
    w.end_array().end_object();
    return w.str();
}

std::string request_log_entry(const std::string& remote, std::string_view body,
                              const std::string& when, size_t max_body) {
    const std::string shown =
        body.size() <= max_body
            ? std::string(body)
            : mt::str(text::utf8_prefix(body, max_body), "... (", body.size(), " bytes in all)");
    return "request IP: " + remote + "\n" + shown + "\nstart time:  " + when + "\n";
}

}  // namespace mt::generate_tool
