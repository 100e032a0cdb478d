// ApiRoutes: each path's method, its body checked by its parser, and its job. A job's mt::Error
// (a request this model cannot run: too long, ...) is a 400 with its message; anything else a
// 500. PUT /api answers errors as Megatron does (a JSON string), the OpenAI-style paths as
// OpenAI does ({"error": {"message", "type"}}).
#include "api_routes.h"

#include <cstdio>
#include <ctime>
#include <exception>

#include "api_request.h"
#include "completion.h"
#include "mt/error.h"
#include "mt/io/json_writer.h"
#include "tokenizer_endpoints.h"

namespace mt::generate_tool {

namespace {

constexpr unsigned kOk = 200, kBadRequest = 400, kNotFound = 404, kMethodNotAllowed = 405,
                   kInternalError = 500;

ApiAnswer megatron_error(unsigned status, const std::string& message) {
    return {status, io::json_quote(message) + "\n"};
}

ApiAnswer openai_error(unsigned status, const std::string& message) {
    io::JsonWriter w;
    w.begin_object().key("error").begin_object().key("message").value(message);
    w.key("type").value(status == kBadRequest ? "invalid_request_error" : "server_error");
    w.key("param").null().key("code").null().end_object().end_object();
    return {status, w.str() + "\n"};
}

using ErrorShape = ApiAnswer (*)(unsigned, const std::string&);

// `run` on the worker, its failures answered in `shape`.
template <class Run>
ApiJob job(ErrorShape shape, Run run) {
    return [shape, run = std::move(run)]() mutable -> ApiAnswer {
        try {
            return {kOk, run() + "\n"};
        } catch (const mt::Error& e) {
            return shape(kBadRequest, e.what());
        } catch (const std::exception& e) {
            return shape(kInternalError, std::string("internal error: ") + e.what());
        } catch (...) {
            return shape(kInternalError, "internal error");
        }
    };
}

void log_request(const std::string& remote, const std::string& body) {
    const std::time_t now = std::time(nullptr);
    char when[64];
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
    std::fputs(request_log_entry(remote, body, when).c_str(), stdout);
    std::fflush(stdout);
}

bool is_one_of(std::string_view path, std::initializer_list<std::string_view> paths) {
    for (std::string_view p : paths)
        if (path == p) return true;
    return false;
}

}  // namespace

ApiRoutes::ApiRoutes(TextGenerator& generator, std::string model_id)
    : generator_(generator),
      model_id_(std::move(model_id)),
      created_(int64_t(std::time(nullptr))) {}

std::variant<ApiAnswer, ApiJob> ApiRoutes::route(std::string_view method, std::string_view path,
                                                 std::string body, const std::string& remote) {
    const auto expect = [&](const char* allowed) -> std::optional<ApiAnswer> {
        if (method == allowed) return std::nullopt;
        return ApiAnswer{kMethodNotAllowed, "Method Not Allowed\n", "text/plain", allowed};
    };
    const int64_t vocab = generator_.tokenizer().vocab_size();
    const int64_t max_len = generator_.max_positions();

    if (path == "/api") {  // Megatron's run_text_generation_server.py
        if (auto refused = expect("PUT")) return *refused;
        auto parsed = parse_api_request(body);
        if (auto* message = std::get_if<std::string>(&parsed))
            return megatron_error(kBadRequest, *message);
        return job(megatron_error, [this, api = std::get<ApiRequest>(std::move(parsed)),
                                    body = std::move(body), remote] {
            if (!api.no_log) log_request(remote, body);
            return api_response(generator_.run(api.request), api.request.logprobs);
        });
    }
    if (is_one_of(path, {"/completions", "/v1/completions"})) {
        if (auto refused = expect("POST")) return *refused;
        auto parsed = parse_completion_request(body, vocab);
        if (auto* message = std::get_if<std::string>(&parsed))
            return openai_error(kBadRequest, *message);
        CompletionRequest& r = std::get<CompletionRequest>(parsed);
        try {
            tokenize_prompts(generator_.tokenizer(), r);  // thread-safe; lengths for batching
        } catch (const mt::Error& e) {
            return openai_error(kBadRequest, e.what());
        }
        auto ticket = batcher_.queue(std::move(r));
        const std::string id = "cmpl-" + std::to_string(next_id_++);
        return job(openai_error, [this, ticket, id] {
            return completion_response(batcher_.result(ticket), ticket->request(), id, model_id_,
                                       int64_t(std::time(nullptr)));
        });
    }
    if (is_one_of(path, {"/models", "/v1/models"})) {
        if (auto refused = expect("GET")) return *refused;
        io::JsonWriter w;
        w.begin_object().key("object").value("list").key("data").begin_array().begin_object();
        w.key("id").value(model_id_).key("object").value("model").key("created").value(created_);
        w.key("owned_by").value("megatron.cpp").key("max_model_len").value(max_len);
        w.end_object().end_array().end_object();
        return ApiAnswer{kOk, w.str() + "\n"};
    }
    if (path == "/tokenizer_info") {
        if (auto refused = expect("GET")) return *refused;
        return job(openai_error, [this, max_len] {
            return tokenizer_info_response(generator_.tokenizer(),
                                           generator_.generation_tokens().eod, max_len);
        });
    }
    if (path == "/tokenize") {
        if (auto refused = expect("POST")) return *refused;
        auto parsed = parse_tokenize_request(body);
        if (auto* message = std::get_if<std::string>(&parsed))
            return openai_error(kBadRequest, *message);
        return job(openai_error, [this, r = std::get<TokenizeRequest>(std::move(parsed)), max_len] {
            return tokenize_response(generator_.tokenizer(), r, max_len);
        });
    }
    if (path == "/detokenize") {
        if (auto refused = expect("POST")) return *refused;
        auto parsed = parse_detokenize_request(body, vocab);
        if (auto* message = std::get_if<std::string>(&parsed))
            return openai_error(kBadRequest, *message);
        return job(openai_error, [this, ids = std::get<std::vector<int32_t>>(std::move(parsed))] {
            return detokenize_response(generator_.tokenizer(), ids);
        });
    }
    return ApiAnswer{kNotFound, "Not Found\n", "text/plain"};
}

}  // namespace mt::generate_tool
