// stream_completion(): one row through infer::generate's per-step hook, its text decoded whole at
// each step (a token's text may depend on its neighbours) and cut where the unstreamed answer
// cuts it (completion.cpp): after the prompt's text, before a stop string or the
// end-of-document token.
#include "completion_stream.h"

#include <algorithm>

#include "completion.h"
#include "mt/error.h"
#include "mt/io/json_writer.h"

namespace mt::generate_tool {

size_t settled_end(std::string_view text, const std::vector<std::string>& stops) {
    size_t end = text.size();
    for (size_t back = 1; back <= std::min<size_t>(4, end); ++back) {
        const auto byte = uint8_t(text[end - back]);
        if ((byte & 0xC0) == 0x80) continue;  // a continuation: look for its lead
        const size_t need = byte < 0x80 ? 1 : byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2;
        if (need > back) end -= back;
        break;
    }
    constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
    while (text.substr(0, end).ends_with(kReplacement)) end -= kReplacement.size();
    size_t held = 0;
    for (const std::string& stop : stops)
        for (size_t n = std::min(stop.empty() ? 0 : stop.size() - 1, end); n > held; --n)
            if (text.substr(end - n, n) == std::string_view(stop).substr(0, n)) {
                held = n;
                break;
            }
    return end - held;
}

std::string completion_chunk(std::string_view id, std::string_view model, int64_t created,
                             std::string_view text, const char* finish_reason) {
    io::JsonWriter w;
    w.begin_object().key("id").value(id).key("object").value("text_completion");
    w.key("created").value(created).key("model").value(model).key("choices").begin_array();
    w.begin_object().key("index").value(0).key("text").value(text).key("logprobs").null();
    w.key("finish_reason");
    finish_reason ? w.value(finish_reason) : w.null();
    w.end_object().end_array().end_object();
    return w.str();
}

std::string usage_chunk(std::string_view id, std::string_view object, std::string_view model,
                        int64_t created, const StreamedCompletion& done) {
    io::JsonWriter w;
    w.begin_object().key("id").value(id).key("object").value(object);
    w.key("created").value(created).key("model").value(model).key("choices").begin_array();
    w.end_array().key("usage").begin_object().key("prompt_tokens").value(done.prompt_tokens);
    w.key("completion_tokens").value(done.completion_tokens);
    w.key("total_tokens").value(done.prompt_tokens + done.completion_tokens);
    w.end_object().end_object();
    return w.str();
}

std::string sse_event(std::string_view json) {
    std::string event = "data: ";
    event.append(json);
    event.append("\n\n");
    return event;
}

CompletionStreamer::CompletionStreamer(const Tokenizer& tokenizer, int32_t eod,
                                       const CompletionRequest& r,
                                       std::function<bool(std::string_view piece)> send)
    : tokenizer_(tokenizer),
      eod_(eod),
      stops_(stop_strings(tokenizer, r, eod)),
      ids_(std::get<std::vector<int32_t>>(r.prompts.at(0))),
      prompt_length_(ids_.size()),
      send_(std::move(send)) {
    MT_CHECK(r.prompts.size() == 1 && !r.echo && r.logprobs == 0,
             "streaming: one prompt, without echo or log-probs");
    out_.prompt_tokens = int64_t(prompt_length_);
}

bool CompletionStreamer::add(int32_t id) {
    ids_.push_back(id);
    ++out_.completion_tokens;
    return pass_on(false);
}

StreamedCompletion CompletionStreamer::finish() {
    if (out_.completion_tokens > 0 && !out_.client_left &&
        out_.finish_reason != std::string_view("stop"))
        pass_on(true);
    return out_;
}

bool CompletionStreamer::pass_on(bool last) {
    const bool at_eod = ids_.back() == eod_ && ids_.size() > prompt_length_;
    const std::string text = tokenizer_.decode(std::span(ids_).first(ids_.size() - at_eod));
    if (!text_start_)  // where the unstreamed answer starts its text (completion.cpp)
        text_start_ = token_byte_offsets(tokenizer_, ids_, text, prompt_length_)[prompt_length_];
    std::string_view generated = std::string_view(text).substr(std::min(*text_start_, text.size()));
    size_t end = generated.size();
    bool stopped = at_eod;
    if (const size_t at = first_stop(generated, 0, stops_); at != std::string::npos) {
        end = at;
        stopped = true;
    } else if (!last && !stopped) {
        end = settled_end(generated, stops_);
    }
    if (stopped) out_.finish_reason = "stop";
    if (end > sent_) {
        if (!send_(generated.substr(sent_, end - sent_))) out_.client_left = true;
        sent_ = end;
    }
    return !stopped && !out_.client_left;
}

StreamedCompletion stream_completion(TextGenerator& generator, const CompletionRequest& r,
                                     const std::function<bool(std::string_view piece)>& send) {
    CompletionStreamer streamer(generator.tokenizer(), generator.generation_tokens().eod, r, send);
    infer::GenerationRequest g;
    g.prompts = {std::get<std::vector<int32_t>>(r.prompts[0])};
    g.sampling = r.sampling;
    g.tokens_to_generate = r.max_tokens;
    g.on_step = [&](std::span<const int32_t> step) { return streamer.add(step[0]); };
    generator.run_ids(g, r.seed);
    return streamer.finish();
}

}  // namespace mt::generate_tool
