// ApiRoutes: each path's method, its body checked by its parser, and its job. A job's mt::Error
// (a request this model cannot run: too long, ...) is a 400 with its message; anything else a
// 500. PUT /api answers errors as Megatron does (a JSON string), the OpenAI-style paths as
// OpenAI does ({"error": {"message", "type"}}).
#include "api_routes.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <exception>

#include "api_request.h"
#include "chat_completion.h"
#include "completion.h"
#include "completion_stream.h"
#include "mt/error.h"
#include "mt/io/json_writer.h"
#include "tokenizer_endpoints.h"

namespace mt::generate_tool {

namespace {

constexpr unsigned kOk = 200, kBadRequest = 400, kNotFound = 404, kMethodNotAllowed = 405,
                   kInternalError = 500, kServiceUnavailable = 503;

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

// A failure as `shape` answers it: a full server 503, a request the model cannot run 400,
// anything else 500.
ApiAnswer error_answer(ErrorShape shape, std::exception_ptr error) {
    try {
        std::rethrow_exception(error);
    } catch (const ServerBusy& e) {
        return shape(kServiceUnavailable, e.what());
    } catch (const mt::Error& e) {
        return shape(kBadRequest, e.what());
    } catch (const std::exception& e) {
        return shape(kInternalError, std::string("internal error: ") + e.what());
    } catch (...) {
        return shape(kInternalError, "internal error");
    }
}

// `run` on the worker, its failures answered in `shape`.
template <class Run>
ApiJob job(ErrorShape shape, Run run) {
    return [shape, run = std::move(run)]() mutable -> ApiAnswer {
        try {
            return {kOk, run() + "\n"};
        } catch (...) {
            return error_answer(shape, std::current_exception());
        }
    };
}

// The events of one streamed answer (`chat`: chat.completion.chunk ones): each piece of the
// text, then the end (the finish reason, the usage if asked for, [DONE]), or a failure.
class StreamEvents {
  public:
    StreamEvents(std::string id, std::string model, bool chat, bool usage, ChunkSink send)
        : id_(std::move(id)),
          model_(std::move(model)),
          chat_(chat),
          usage_(usage),
          send_(std::move(send)),
          created_(int64_t(std::time(nullptr))) {}

    // false once the client has gone.
    bool piece(std::string_view text, const char* finish_reason = nullptr) {
        const std::string json =
            chat_ ? chat_chunk(id_, model_, created_, text, !sent_, finish_reason)
                  : completion_chunk(id_, model_, created_, text, finish_reason);
        sent_ = true;
        return send_(sse_event(json));
    }
    // After the last piece; nullopt (the stream is over).
    std::optional<ApiAnswer> end(const StreamedCompletion& done) {
        if (done.client_left || !piece("", done.finish_reason)) return std::nullopt;
        if (usage_ &&
            !send_(sse_event(usage_chunk(id_, chat_ ? "chat.completion.chunk" : "text_completion",
                                         model_, created_, done))))
            return std::nullopt;
        send_(std::string(kSseDone));
        return std::nullopt;
    }
    // The answer to give instead before the first event; after it the stream's last event.
    std::optional<ApiAnswer> fail(ApiAnswer answer) {
        if (!sent_) return answer;
        if (answer.body.ends_with('\n')) answer.body.pop_back();
        if (send_(sse_event(answer.body))) send_(std::string(kSseDone));
        return std::nullopt;
    }

  private:
    std::string id_, model_;
    bool chat_, usage_;
    ChunkSink send_;
    int64_t created_;
    bool sent_ = false;
};

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

ApiRoutes::ApiRoutes(TextGenerator& generator, std::string model_id, ChatPrompt chat,
                     const BatchLimits& batch, std::chrono::milliseconds queue_timeout)
    : generator_(generator),
      chat_(std::move(chat)),
      model_id_(std::move(model_id)),
      created_(int64_t(std::time(nullptr))) {
    if (CompletionEngine::supports(generator)) engine_.emplace(generator, batch, queue_timeout);
}

ApiStreamJob ApiRoutes::stream_job(CompletionRequest r, std::string id, bool chat) {
    return [this, r = std::move(r), id = std::move(id),
            chat](const ChunkSink& send) -> std::optional<ApiAnswer> {
        StreamEvents events(id, model_id_, chat, r.stream_usage, send);
        try {
            return events.end(stream_completion(
                generator_, r, [&](std::string_view piece) { return events.piece(piece); }));
        } catch (...) {
            return events.fail(error_answer(openai_error, std::current_exception()));
        }
    };
}

ApiBatchedJob ApiRoutes::batched_job(CompletionRequest r, std::string id, bool chat,
                                     ChatLogprobs logprobs) {
    return [this, r = std::move(r), id = std::move(id), chat, logprobs](
               const ChunkSink& send, const AnswerSink& done) -> WorkerJob {
        const Tokenizer& tokenizer = generator_.tokenizer();
        const int32_t eod = generator_.generation_tokens().eod;
        CompletionEngine::Handlers handlers;
        handlers.fail = [done](std::exception_ptr error) {
            done(error_answer(openai_error, error));
        };
        try {
            if (r.stream) {
                auto events =
                    std::make_shared<StreamEvents>(id, model_id_, chat, r.stream_usage, send);
                auto streamer = std::make_shared<CompletionStreamer>(
                    tokenizer, eod, r,
                    [events](std::string_view piece) { return events->piece(piece); });
                handlers.on_token = [streamer](int32_t token) { return streamer->add(token); };
                handlers.done = [events, streamer, done](infer::GenerationResult) {
                    done(events->end(streamer->finish()));
                };
                handlers.fail = [events, done](std::exception_ptr error) {
                    done(events->fail(error_answer(openai_error, error)));
                };
            } else {
                handlers.done = [this, &tokenizer, eod, r, id, chat, logprobs,
                                 done](infer::GenerationResult rows) {
                    try {
                        const CompletionResult result =
                            shape_completion(tokenizer, eod, r, std::move(rows));
                        const auto now = int64_t(std::time(nullptr));
                        done(ApiAnswer{kOk,
                                       (chat ? chat_response(result, logprobs, id, model_id_, now)
                                             : completion_response(result, r, id, model_id_, now)) +
                                           "\n"});
                    } catch (...) {
                        done(error_answer(openai_error, std::current_exception()));
                    }
                };
            }
            engine_->queue(r, std::move(handlers));
        } catch (...) {  // refused before anything was queued or sent
            done(error_answer(openai_error, std::current_exception()));
            return {};
        }
        return [this] { engine_->run(); };
    };
}

std::variant<ApiAnswer, ApiJob, ApiStreamJob, ApiBatchedJob> ApiRoutes::tokenizer_job(ApiJob job) {
    if (!engine_) return job;
    return ApiBatchedJob(
        [this, job = std::move(job)](const ChunkSink&, const AnswerSink& done) -> WorkerJob {
            engine_->between_steps([job, done] { done(job()); });
            return [this] { engine_->run(); };
        });
}

WorkerJob ApiRoutes::outside_batch(WorkerJob job) {
    if (!engine_) return job;
    engine_->hold();
    return [this, job = std::move(job)] {
        engine_->release();
        job();
        engine_->run();  // the requests that waited for it
    };
}

std::variant<ApiAnswer, ApiJob, ApiStreamJob, ApiBatchedJob> ApiRoutes::route(
    std::string_view method, std::string_view path, std::string body, const std::string& remote) {
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
        const std::string id = "cmpl-" + std::to_string(next_id_++);
        if (engine_) return batched_job(std::move(r), id, false, {});
        if (r.stream) return stream_job(std::move(r), id, false);
        auto ticket = batcher_.queue(std::move(r));
        return job(openai_error, [this, ticket, id] {
            return completion_response(batcher_.result(ticket), ticket->request(), id, model_id_,
                                       int64_t(std::time(nullptr)));
        });
    }
    if (is_one_of(path, {"/chat/completions", "/v1/chat/completions"})) {
        if (auto refused = expect("POST")) return *refused;
        auto parsed = parse_chat_request(body);
        if (auto* message = std::get_if<std::string>(&parsed))
            return openai_error(kBadRequest, *message);
        ChatRequest& c = std::get<ChatRequest>(parsed);
        try {  // rendered and tokenized here, as completions' prompts are
            std::vector<int32_t> ids = chat_.prompt_ids(c, generator_.tokenizer());
            const int64_t context =
                max_len > 0 ? std::min(max_len, kChatContextLength) : kChatContextLength;
            MT_CHECK(c.max_tokens || int64_t(ids.size()) < context,
                     "This model's maximum context length was exceeded. Your messages resulted in ",
                     ids.size(), " tokens. Please reduce the length of the messages.");
            c.completion.max_tokens = c.max_tokens.value_or(context - int64_t(ids.size()));
            c.completion.prompts = {std::move(ids)};
        } catch (const mt::Error& e) {
            return openai_error(kBadRequest, e.what());
        }
        const std::string id = "chatcmpl-" + std::to_string(next_id_++);
        const ChatLogprobs logprobs{c.logprobs, c.completion.logprobs};
        if (engine_) return batched_job(std::move(c.completion), id, true, logprobs);
        if (c.completion.stream) return stream_job(std::move(c.completion), id, true);
        auto ticket = batcher_.queue(std::move(c.completion));
        return job(openai_error, [this, ticket, id, logprobs] {
            return chat_response(batcher_.result(ticket), logprobs, id, model_id_,
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
        return tokenizer_job(job(openai_error, [this, max_len] {
            return tokenizer_info_response(generator_.tokenizer(),
                                           generator_.generation_tokens().eod, max_len);
        }));
    }
    if (path == "/tokenize") {
        if (auto refused = expect("POST")) return *refused;
        auto parsed = parse_tokenize_request(body);
        if (auto* message = std::get_if<std::string>(&parsed))
            return openai_error(kBadRequest, *message);
        return tokenizer_job(
            job(openai_error, [this, r = std::get<TokenizeRequest>(std::move(parsed)), max_len] {
                return tokenize_response(generator_.tokenizer(), r, max_len);
            }));
    }
    if (path == "/detokenize") {
        if (auto refused = expect("POST")) return *refused;
        auto parsed = parse_detokenize_request(body, vocab);
        if (auto* message = std::get_if<std::string>(&parsed))
            return openai_error(kBadRequest, *message);
        return tokenizer_job(
            job(openai_error, [this, ids = std::get<std::vector<int32_t>>(std::move(parsed))] {
                return detokenize_response(generator_.tokenizer(), ids);
            }));
    }
    return ApiAnswer{kNotFound, "Not Found\n", "text/plain"};
}

}  // namespace mt::generate_tool
