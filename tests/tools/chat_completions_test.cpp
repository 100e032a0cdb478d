// POST /v1/chat/completions and streamed answers: request validation, the prompt a chat template
// makes (transformers' apply_chat_template ids over a real tokenizer with Mistral-Nemo's template,
// Megatron's BOS handling: tests/fixtures/chat_prompt), Megatron's fallback without a template,
// streaming that hands on text as each token comes and adds up to the unstreamed answer, and the
// server on the tiny Hugging Face Llama of tests/fixtures/hf with a NullTokenizer (text = ids)
// and a template of our own: a chat request gets the completion of the ids its template renders.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>

#include "api_test_support.h"
#include "chat_completion.h"
#include "chat_prompt.h"
#include "chat_request.h"
#include "completion.h"
#include "completion_stream.h"
#include "mt/infer/model_loader.h"
#include "mt/io/json_writer.h"
#include "mt/model.h"
#include "mt/registry.h"
#include "test_support.h"
#include "tiny_llama_generator.h"

namespace mt::generate_tool {
namespace {

namespace fs = std::filesystem;
using boost::beast::http::verb;
using mt::test::shell_quote;

std::string chat_error_for(const std::string& body) {
    auto parsed = parse_chat_request(body);
    auto* message = std::get_if<std::string>(&parsed);
    return message ? *message : "(accepted)";
}

ChatRequest chat_accepted(const std::string& body) {
    auto parsed = parse_chat_request(body);
    if (auto* message = std::get_if<std::string>(&parsed))
        ADD_FAILURE() << body << ": " << *message;
    return std::get<ChatRequest>(parsed);
}

void write(const fs::path& file, const std::string& text) {
    std::ofstream(file, std::ios::binary) << text;
}

TEST(ChatRequest, RefusesWithMessages) {
    const std::pair<const char*, const char*> cases[] = {
        {R"({"max_tokens": 3})", "Missing 'messages' field"},
        {R"({"messages": []})", "Missing 'messages' field"},
        {R"({"messages": "hi"})", "'messages' must be a list"},
        {R"({"messages": [{"content": "hi"}]})",
         "messages[0] must be an object with a string 'role'"},
        {R"({"messages": [{"role": "user"}], "max_tokens": 0})",
         "max_tokens must be an integer >= 1"},
        {R"({"messages": [{"role": "user"}], "max_completion_tokens": "3"})",
         "max_completion_tokens must be an integer >= 1"},
        {R"({"messages": [{"role": "user"}], "temperature": -1})",
         "temperature must be between 0 and 100"},
        {R"({"messages": [{"role": "user"}], "n": 2})", "num_completions > 1 not supported"},
        {R"({"messages": [{"role": "user"}], "logprobs": 1})", "logprobs must be a boolean value"},
        {R"({"messages": [{"role": "user"}], "top_logprobs": 2})",
         "top_logprobs needs logprobs: true"},
        {R"({"messages": [{"role": "user"}], "logprobs": true, "top_logprobs": 11})",
         "return_topk_logprobs > 10 not supported"},
        {R"({"messages": [{"role": "user"}], "logprobs": true, "stream": true})",
         "not supported yet: stream with logprobs"},
        {R"({"messages": [{"role": "user"}], "stream": "yes"})", "stream must be a boolean value"},
        {R"({"messages": [{"role": "user"}], "tool_choice": "required"})",
         "not supported yet: tool_choice other than \"auto\" or \"none\" (tool calls are not "
         "parsed from the generated text)"},
        {R"({"messages": [{"role": "user"}], "response_format": {"type": "json_object"}})",
         "not supported yet: response_format other than {\"type\": \"text\"}"},
        {R"({"messages": [{"role": "user"}], "chat_template_kwargs": []})",
         "chat_template_kwargs must be an object"},
        {R"({"messages": [{"role": "user"}], "frequency_penalty": 1})",
         "not supported yet: frequency_penalty"},
    };
    for (const auto& [body, message] : cases) EXPECT_EQ(chat_error_for(body), message) << body;
    ChatRequest r = chat_accepted(
        R"({"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 7,)"
        R"( "temperature": 0, "stop": "x", "stream": true, "stream_options": {"include_usage": true},)"
        R"( "tools": [{"type": "function"}], "chat_template_kwargs": {"enable_thinking": false},)"
        R"( "add_BOS": true, "tool_choice": "auto"})");
    EXPECT_EQ(r.max_tokens, 7);
    EXPECT_EQ(r.completion.sampling.top_k, 1);
    EXPECT_TRUE(r.completion.stream && r.completion.stream_usage && r.add_bos);
    EXPECT_EQ(r.messages_json, R"([{"role":"user","content":"hi"}])");
    EXPECT_EQ(r.tools_json, R"([{"type":"function"}])");
    EXPECT_EQ(r.template_kwargs_json, R"({"enable_thinking":false})");
}

// transformers' ids for the fixture's conversations: the template from tokenizer_config.json,
// its bos_token, the null tool_calls dropped, the leading BOS dropped and add_BOS's put back.
TEST(ChatPrompt, GivesTransformersIdsWithMegatronsBos) {
    const auto tokenizer_json = mt::test::test_data("tokenizers/hf/mistral-v3/tokenizer.json");
    if (!tokenizer_json) GTEST_SKIP() << "MEGATRON_TEST_DATA has no tokenizers/hf/mistral-v3";
    mt::test::TempDir dir;
    fs::copy_file(*tokenizer_json, dir / "tokenizer.json");
    std::string config_text =
        mt::test::read_file(tokenizer_json->parent_path() / "tokenizer_config.json");
    config_text.resize(config_text.find_last_of('}'));  // the chat template added at the end
    config_text +=
        ",\"chat_template\":" +
        io::json_quote(mt::test::read_file(mt::test::fixtures_dir() / "chat_templates" /
                                           "mistralai-Mistral-Nemo-Instruct-2407.jinja")) +
        "}";
    write(dir / "tokenizer_config.json", config_text);
    TokenizerOptions o;
    o.tokenizer_model = dir.path().string();
    auto tokenizer = Registry::global().create_tokenizer("HuggingFaceTokenizer", o);
    const ChatPrompt chat = ChatPrompt::find({dir.path()});
    EXPECT_EQ(chat.source(), (dir / "tokenizer_config.json").string() + " (chat_template)");

    simdjson::dom::parser expected_parser;
    simdjson::dom::element expected =
        expected_parser.load((mt::test::fixtures_dir() / "chat_prompt" / "expected.json").string());
    size_t n = 0;
    for (simdjson::dom::element c : simdjson::dom::array(expected["cases"])) {
        std::string body = R"({"messages": )" + simdjson::minify(c["messages"]);
        bool add_bos = false;
        if (!c["add_BOS"].get(add_bos) && add_bos) body += R"(, "add_BOS": true)";
        const ChatRequest r = chat_accepted(body + "}");
        EXPECT_EQ(chat.render(r), std::string_view(c["text"])) << n;
        std::vector<int64_t> ids;
        for (int64_t id : simdjson::dom::array(c["ids"])) ids.push_back(id);
        const std::vector<int32_t> got = chat.prompt_ids(r, *tokenizer);
        EXPECT_EQ(std::vector<int64_t>(got.begin(), got.end()), ids) << n;
        ++n;
    }
    EXPECT_EQ(n, 2u);
}

TEST(ChatPrompt, WithoutATemplateJoinsTheContentsAsMegatronDoes) {
    mt::test::TempDir dir;
    const ChatPrompt chat = ChatPrompt::find({dir.path(), fs::path()});
    EXPECT_EQ(chat.source(), "no chat template: messages joined by newlines");
    EXPECT_EQ(
        chat.render(chat_accepted(
            R"({"messages": [{"role": "system", "content": "a b"}, {"role": "user", "content": "c"}]})")),
        "a b\nc");
    EXPECT_NE(mt::test::error_of([&] {
                  chat.render(chat_accepted(R"({"messages": [{"role": "user", "content": [1]}]})"));
              }).find("messages[0] needs a string 'content'"),
              std::string::npos);
}

TEST(ChatPrompt, ReadsTheFoldersTemplatesAndNamesTheFileOfOneThatDoesNotParse) {
    mt::test::TempDir a, b;
    write(
        a / "tokenizer_config.json",
        R"({"bos_token": {"content": "<s>"}, "chat_template": [)"
        R"({"name": "tool_use", "template": "T"},)"
        R"({"name": "default", "template": "{{ bos_token }}{{ messages[0].content }}{{ extra }}"}]})");
    const ChatPrompt chat = ChatPrompt::find({fs::path("/nonexistent"), a.path(), b.path()});
    EXPECT_EQ(chat.render(chat_accepted(R"({"messages": [{"role": "user", "content": "x"}],)"
                                        R"( "chat_template_kwargs": {"extra": "!"}})")),
              "<s>x!");
    // --chat-template's text, with the special tokens of the first folder that has a config.
    const ChatRequest one = chat_accepted(R"({"messages": [{"role": "user", "content": "x"}]})");
    const ChatPrompt given =
        ChatPrompt::find({b.path(), a.path()}, "{{ bos_token }}+{{ messages|length }}");
    EXPECT_EQ(given.source(), "--chat-template");
    EXPECT_EQ(given.render(one), "<s>+1");
    EXPECT_EQ(ChatPrompt::find({b.path()}, "{{ bos_token }}+").render(one), "+");
    // chat_template.jinja beside the config wins (transformers 4.43+ saves it so).
    write(b / "chat_template.jinja", "{% for m in messages %}[{{ m.role }}]{% endfor %}");
    EXPECT_EQ(ChatPrompt::find({b.path(), a.path()})
                  .render(chat_accepted(R"({"messages": [{"role": "user"}]})")),
              "[user]");
    write(b / "chat_template.jinja", "{% for m in messages %}");
    const std::string error = mt::test::error_of([&] { ChatPrompt::find({b.path()}); });
    EXPECT_NE(error.find((b / "chat_template.jinja").string()), std::string::npos) << error;
    EXPECT_NE(mt::test::error_of([&] {
                  chat.render(chat_accepted(R"({"messages": [{"role": "user"}],)"
                                            R"( "chat_template_kwargs": {"messages": 1}})"));
              }).find("chat_template_kwargs may not set 'messages'"),
              std::string::npos);
}

// core_v0.19's order: --tokenizer-metadata's template, then --chat-template's, then the folders'.
TEST(ChatPrompt, TheTokenizerMetadatasTemplateComesFirst) {
    mt::test::TempDir folder;
    write(folder / "tokenizer_config.json",
          R"({"bos_token": "<s>", "chat_template": "folder {{ messages|length }}"})");
    mt::TokenizerOptions tokenizer;
    tokenizer.tokenizer_model = folder.path().string();
    const ChatRequest one = chat_accepted(R"({"messages": [{"role": "user", "content": "x"}]})");
    EXPECT_EQ(ChatPrompt::of_tokenizer(tokenizer, "", std::nullopt).render(one), "folder 1");
    EXPECT_EQ(ChatPrompt::of_tokenizer(tokenizer, "", "given {{ bos_token }}").render(one),
              "given <s>");
    tokenizer.metadata_path = "meta.json";
    tokenizer.metadata_chat_template = "metadata {{ bos_token }}";
    const ChatPrompt chat = ChatPrompt::of_tokenizer(tokenizer, "", "given");
    EXPECT_EQ(chat.source(), "--tokenizer-metadata meta.json");
    EXPECT_EQ(chat.render(one), "metadata <s>");
}

TEST(CompletionStream, HoldsBackWhatALaterTokenMayChange) {
    const std::vector<std::string> none, stops{"\n\nUser:", "END"};
    EXPECT_EQ(settled_end("abc", none), 3u);
    EXPECT_EQ(settled_end("ab\xC3", none), 2u);          // a 2-byte character's lead
    EXPECT_EQ(settled_end("ab\xE2\x82", none), 2u);      // 2 of 3 bytes
    EXPECT_EQ(settled_end("ab\xE2\x82\xAC", none), 5u);  // the whole euro sign
    EXPECT_EQ(settled_end("ab\xF0\x9F\x98", none), 2u);  // 3 of 4 bytes
    EXPECT_EQ(settled_end("ab\xEF\xBF\xBD", none), 2u);  // a stand-in for unseen bytes
    EXPECT_EQ(settled_end("ab\n\nUs", stops), 2u);       // may start a stop string
    EXPECT_EQ(settled_end("ab\nEN", stops), 3u);
    EXPECT_EQ(settled_end("ab\nE\xC3", stops), 3u);  // both
    EXPECT_EQ(settled_end("abc", {""}), 3u);
}

// The tiny Llama with a NullTokenizer: a streamed completion hands on each token's text as it is
// generated, holding back what may start a stop string, and the pieces add up to the unstreamed
// text; a stop string ends it early.
TEST(CompletionStream, HandsOnEachTokenAndAddsUpToTheUnstreamedText) {
    mt::test::TinyLlamaGenerator tiny;
    TextGenerator& generator = tiny.generator;
    const Tokenizer* tokenizer = tiny.tokenizer.get();
    for (const char* body :
         {R"({"prompt": "5 17 99 3 64 12 7", "max_tokens": 6, "temperature": 0})",
          R"({"prompt": "5 17 99 3 64 12 7", "max_tokens": 6, "temperature": 0, "stop": " 38"})",
          R"({"prompt": "9 9", "max_tokens": 5, "temperature": 0.8, "seed": 3, "stop": ["zz"]})"}) {
        auto parsed = parse_completion_request(body, 127);
        CompletionRequest r = std::get<CompletionRequest>(parsed);
        tokenize_prompts(*tokenizer, r);
        const CompletionRequest* one = &r;
        const CompletionResult whole = complete_batch(generator, std::span(&one, 1))[0];
        std::vector<std::string> pieces;
        const StreamedCompletion streamed =
            stream_completion(generator, r, [&](std::string_view piece) {
                pieces.emplace_back(piece);
                return true;
            });
        std::string text;
        for (const auto& p : pieces) text += p;
        EXPECT_EQ(text, whole.choices[0].text) << body;
        EXPECT_STREQ(streamed.finish_reason, whole.choices[0].finish_reason) << body;
        EXPECT_EQ(streamed.completion_tokens, whole.completion_tokens) << body;
        EXPECT_EQ(streamed.prompt_tokens,
                  int64_t(std::get<std::vector<int32_t>>(r.prompts[0]).size()))
            << body;
        EXPECT_GE(pieces.size(), size_t(streamed.completion_tokens) - 1) << body;  // as they come
    }
    // A client that leaves ends the generation at once.
    CompletionRequest r = std::get<CompletionRequest>(
        parse_completion_request(R"({"prompt": [5, 17], "max_tokens": 8, "temperature": 0})", 127));
    int calls = 0;
    const StreamedCompletion left = stream_completion(generator, r, [&](std::string_view) {
        ++calls;
        return false;
    });
    EXPECT_TRUE(left.client_left);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(left.completion_tokens, 1);
}

// The parsed "data:" events of a streamed body, up to "[DONE]" (which must end it).
std::vector<std::string> sse_events(const std::string& body) {
    std::vector<std::string> events;
    size_t at = 0;
    while (at < body.size()) {
        const size_t end = body.find("\n\n", at);
        EXPECT_NE(end, std::string::npos) << body;
        if (end == std::string::npos) break;
        const std::string event = body.substr(at, end - at);
        EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
        events.push_back(event.substr(6));
        at = end + 2;
    }
    EXPECT_FALSE(events.empty());
    if (!events.empty()) {
        EXPECT_EQ(events.back(), "[DONE]");
        events.pop_back();
    }
    return events;
}

class ChatServer : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        folder_ = new mt::test::TempDir();
        for (const auto& entry : fs::directory_iterator(mt::test::fixtures_dir() / "hf" / "llama"))
            fs::create_symlink(entry.path(), *folder_ / entry.path().filename().string());
        // Roles as ids: the prompt of [system "5 17", user "99 3"] is "1 5 17 2 99 3 4".
        write(*folder_ / "tokenizer_config.json",
              R"({"chat_template": "{% for m in messages %}{{ {'system': '1', 'user': '2',)"
              R"( 'assistant': '3'}[m.role] }} {{ m.content }} {% endfor %})"
              R"({% if add_generation_prompt %}4{% endif %}"})");
        server_ =
            new mt::test::ApiServerProcess("--load " + shell_quote(folder_->path()) +
                                           " --tokenizer-type NullTokenizer --vocab-size 127");
    }
    static void TearDownTestSuite() {
        delete server_;
        delete folder_;
    }

    mt::test::HttpReply post(const std::string& path, const std::string& body, int status = 200) {
        auto reply = mt::test::HttpClient(server_->port()).request(verb::post, path, body);
        EXPECT_TRUE(reply) << path << " " << body;
        if (!reply) return {};
        EXPECT_EQ(reply->status, status) << path << " " << body << " -> " << reply->body;
        return *reply;
    }
    simdjson::dom::element parse(const std::string& text) {
        texts_.push_back(std::make_unique<simdjson::padded_string>(text));
        return parsers_.emplace_back().parse(*texts_.back()).value();
    }

    static mt::test::TempDir* folder_;
    static mt::test::ApiServerProcess* server_;
    std::deque<simdjson::dom::parser> parsers_;
    std::vector<std::unique_ptr<simdjson::padded_string>> texts_;
};
mt::test::TempDir* ChatServer::folder_ = nullptr;
mt::test::ApiServerProcess* ChatServer::server_ = nullptr;

constexpr const char* kMessages =
    R"("messages": [{"role": "system", "content": "5 17"}, {"role": "user", "content": "99 3"}])";

TEST_F(ChatServer, AnswersTheCompletionOfTheRenderedPrompt) {
    ASSERT_GT(server_->port(), 0);
    auto chat = parse(
        post("/v1/chat/completions", std::string("{") + kMessages +
                                         R"(, "max_tokens": 4, "temperature": 0, "logprobs": true,)"
                                         R"( "top_logprobs": 2})")
            .body);
    auto completion =
        parse(post("/v1/completions", R"({"prompt": [1, 5, 17, 2, 99, 3, 4], "max_tokens": 4,)"
                                      R"( "temperature": 0, "logprobs": 2})")
                  .body);
    EXPECT_EQ(std::string_view(chat["object"]), "chat.completion");
    EXPECT_EQ(std::string_view(chat["id"]).rfind("chatcmpl-", 0), 0u);
    simdjson::dom::element choice = chat["choices"].at(0), expected = completion["choices"].at(0);
    EXPECT_EQ(std::string_view(choice["message"]["role"]), "assistant");
    EXPECT_EQ(std::string_view(choice["message"]["content"]), std::string_view(expected["text"]));
    EXPECT_EQ(std::string_view(choice["finish_reason"]),
              std::string_view(expected["finish_reason"]));
    simdjson::dom::array content = choice["logprobs"]["content"];
    simdjson::dom::array tokens = expected["logprobs"]["tokens"],
                         logprobs = expected["logprobs"]["token_logprobs"];
    ASSERT_EQ(content.size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(std::string_view(content.at(i)["token"]), std::string_view(tokens.at(i)));
        EXPECT_EQ(double(content.at(i)["logprob"]), double(logprobs.at(i)));
        EXPECT_EQ(simdjson::dom::array(content.at(i)["top_logprobs"]).size(), 2u);
    }
    EXPECT_EQ(int64_t(chat["usage"]["prompt_tokens"]), 7);
    EXPECT_EQ(int64_t(chat["usage"]["completion_tokens"]), 4);

    // Without max_tokens: up to the model's positions (the tiny Llama's 32).
    auto open = parse(post("/v1/chat/completions",
                           std::string("{") + kMessages + R"(, "temperature": 0, "stop": "zz"})")
                          .body);
    EXPECT_EQ(int64_t(open["usage"]["completion_tokens"]), 32 - 7);
}

TEST_F(ChatServer, StreamsEventsThatAddUpToTheAnswer) {
    ASSERT_GT(server_->port(), 0);
    for (const char* stop : {"", R"(, "stop": " 38")"}) {
        const std::string fields = std::string(R"(, "max_tokens": 6, "temperature": 0)") + stop;
        auto whole = parse(post("/v1/chat/completions", std::string("{") + kMessages + fields + "}")
                               .body)["choices"]
                         .at(0);
        const auto reply =
            post("/v1/chat/completions",
                 std::string("{") + kMessages + fields +
                     R"(, "stream": true, "stream_options": {"include_usage": true}})");
        const std::vector<std::string> events = sse_events(reply.body);
        ASSERT_GE(events.size(), 3u) << reply.body;
        std::string text;
        for (size_t i = 0; i + 2 < events.size(); ++i) {
            auto e = parse(events[i]);
            EXPECT_EQ(std::string_view(e["object"]), "chat.completion.chunk");
            simdjson::dom::element delta = e["choices"].at(0)["delta"];
            if (i == 0) {
                EXPECT_EQ(std::string_view(delta["role"]), "assistant");
            }
            text += std::string_view(delta["content"]);
            EXPECT_TRUE(e["choices"].at(0)["finish_reason"].is_null());
        }
        EXPECT_EQ(text, std::string_view(whole["message"]["content"])) << stop;
        auto last = parse(events[events.size() - 2])["choices"].at(0);
        EXPECT_EQ(std::string_view(last["finish_reason"]),
                  std::string_view(whole["finish_reason"]));
        auto usage = parse(events.back());
        EXPECT_EQ(simdjson::dom::array(usage["choices"]).size(), 0u);
        EXPECT_EQ(int64_t(usage["usage"]["prompt_tokens"]), 7);
    }
    // /v1/completions streams the same way.
    const std::string fields = R"("prompt": "5 17 99", "max_tokens": 5, "temperature": 0)";
    auto whole = parse(post("/v1/completions", "{" + fields + "}").body)["choices"].at(0);
    const std::vector<std::string> events =
        sse_events(post("/v1/completions", "{" + fields + R"(, "stream": true})").body);
    std::string text;
    for (const auto& event : events) {
        auto e = parse(event);
        EXPECT_EQ(std::string_view(e["object"]), "text_completion");
        text += std::string_view(e["choices"].at(0)["text"]);
    }
    EXPECT_EQ(text, std::string_view(whole["text"]));
    EXPECT_EQ(std::string_view(parse(events.back())["choices"].at(0)["finish_reason"]), "length");
}

TEST_F(ChatServer, RefusesWhatItCannotRunWithOpenAisErrors) {
    ASSERT_GT(server_->port(), 0);
    // Too long for the model: a 400 before any event is streamed.
    auto reply =
        post("/v1/chat/completions",
             std::string("{") + kMessages + R"(, "max_tokens": 1000, "stream": true})", 400);
    EXPECT_NE(std::string_view(parse(reply.body)["error"]["message"]).find("longer than allowed"),
              std::string::npos)
        << reply.body;
    // Text the tokenizer refuses (a NullTokenizer reads ids only).
    reply =
        post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "abc"}]})", 400);
    EXPECT_EQ(std::string_view(parse(reply.body)["error"]["type"]), "invalid_request_error");
    reply = post("/v1/completions", R"({"prompt": ["1", "2"], "stream": true})", 400);
    EXPECT_EQ(std::string_view(parse(reply.body)["error"]["message"]),
              "not supported yet: stream with several prompts, echo or logprobs");
    EXPECT_TRUE(server_->alive());
}

}  // namespace
}  // namespace mt::generate_tool
