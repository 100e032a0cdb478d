// The chat API's shapes over a completion's choice: the message, its log-probs as logprobs.content
// entries (each token with its UTF-8 bytes), and the streamed chunks' deltas.
#include "chat_completion.h"

#include "mt/io/json_writer.h"

namespace mt::generate_tool {

namespace {

// The chat API's token entry: its text, log-prob and UTF-8 bytes.
void token_entry(io::JsonWriter& w, const std::string& token, double logprob) {
    w.key("token").value(token).key("logprob").value(logprob).key("bytes").begin_array();
    for (unsigned char byte : token) w.value(int64_t(byte));
    w.end_array();
}

}  // namespace

std::string chat_response(const CompletionResult& result, ChatLogprobs logprobs,
                          const std::string& id, const std::string& model, int64_t created) {
    const CompletionChoice& c = result.choices.at(0);
    io::JsonWriter w;
    w.begin_object().key("id").value(id).key("object").value("chat.completion");
    w.key("created").value(created).key("model").value(model).key("choices").begin_array();
    w.begin_object().key("index").value(0).key("message").begin_object();
    w.key("role").value("assistant").key("content").value(c.text).end_object();
    w.key("logprobs");
    if (logprobs.chosen) {
        w.begin_object().key("content").begin_array();
        for (size_t i = 0; i < c.tokens.size(); ++i) {
            w.begin_object();
            token_entry(w, c.tokens[i], c.token_logprobs[i].value_or(0.0f));
            w.key("top_logprobs").begin_array();
            if (logprobs.top > 0 && c.top_logprobs[i])
                for (const auto& [piece, p] : *c.top_logprobs[i]) {
                    w.begin_object();
                    token_entry(w, piece, p);
                    w.end_object();
                }
            w.end_array().end_object();
        }
        w.end_array().end_object();
    } else {
        w.null();
    }
    w.key("finish_reason").value(c.finish_reason).end_object().end_array();
    w.key("usage").begin_object().key("prompt_tokens").value(result.prompt_tokens);
    w.key("completion_tokens").value(result.completion_tokens);
    w.key("total_tokens").value(result.prompt_tokens + result.completion_tokens);
    w.end_object().end_object();
    return w.str();
}

std::string chat_chunk(std::string_view id, std::string_view model, int64_t created,
                       std::string_view content, bool first, const char* finish_reason) {
    io::JsonWriter w;
    w.begin_object().key("id").value(id).key("object").value("chat.completion.chunk");
    w.key("created").value(created).key("model").value(model).key("choices").begin_array();
    w.begin_object().key("index").value(0).key("delta").begin_object();
    if (first) w.key("role").value("assistant");
    if (!finish_reason || !content.empty() || first) w.key("content").value(content);
    w.end_object().key("logprobs").null().key("finish_reason");
    finish_reason ? w.value(finish_reason) : w.null();
    w.end_object().end_array().end_object();
    return w.str();
}

}  // namespace mt::generate_tool
