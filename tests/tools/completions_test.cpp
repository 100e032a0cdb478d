// POST /completions and the paths beside it: request validation (OpenAI's fields, Megatron's
// mapping and refusals), token offsets over byte-level BPE, and the server on the tiny Hugging
// Face Llama of tests/fixtures/hf with a NullTokenizer (text = ids): the prompt's log-probs
// under echo are transformers' (tests/fixtures/infer/expected.json), a greedy token's log-prob
// equals the top one to the bit, each prompt of a batch gets what it gets alone, stop strings
// cut the text, and the tokenizer and model endpoints answer.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <deque>
#include <memory>
#include <thread>

#include <sys/wait.h>

#include "api_test_support.h"
#include "completion.h"
#include "completion_batcher.h"
#include "completion_engine.h"
#include "completion_request.h"
#include "json_compare.h"
#include "mt/infer/model_loader.h"
#include "mt/model.h"
#include "mt/registry.h"
#include "test_support.h"
#include "tiny_llama_generator.h"

namespace mt::generate_tool {
namespace {

using boost::beast::http::verb;
using mt::test::shell_quote;

std::string error_for(const std::string& body, int64_t vocab = 100) {
    auto parsed = parse_completion_request(body, vocab);
    auto* message = std::get_if<std::string>(&parsed);
    return message ? *message : "(accepted)";
}

CompletionRequest accepted(const std::string& body) {
    auto parsed = parse_completion_request(body, 100);
    if (auto* message = std::get_if<std::string>(&parsed))
        ADD_FAILURE() << body << ": " << *message;
    return std::get<CompletionRequest>(parsed);
}

TEST(CompletionRequest, RefusesWithMessages) {
    const std::pair<const char*, const char*> cases[] = {
        {R"({"max_tokens": 3})", "prompt argument required"},
        {R"({"prompt": 3})",
         "prompt must be a string, a list of strings, a list of token ids or a list of lists of "
         "token ids"},
        {R"({"prompt": []})", "prompt contains no items"},
        {R"({"prompt": ""})", "prompt 0 is empty"},
        {R"({"prompt": ["a", [1]]})",
         "prompt must be a string, a list of strings, a list of token ids or a list of lists of "
         "token ids, not a mix"},
        {R"({"prompt": [1, "a"]})", "prompt 0 must be a list of token ids"},
        {R"({"prompt": [[1], []]})", "prompt 1 is empty"},
        {R"({"prompt": [1, 100]})",
         "prompt 0 has token id 100 at position 1, outside the vocabulary [0, 100)"},
        {R"({"prompt": [-1]})",
         "prompt 0 has token id -1 at position 0, outside the vocabulary [0, 100)"},
        {R"({"prompt": "a", "max_tokens": -1})", "max_tokens must be an integer >= 0"},
        {R"({"prompt": "a", "max_tokens": 0})",
         "echo=False not supported when tokens_to_generate=0"},
        {R"({"prompt": "a", "temperature": -0.5})", "temperature must be between 0 and 100"},
        {R"({"prompt": "a", "top_p": 0})", "top_p must be greater than 0 and at most 1"},
        {R"({"prompt": "a", "top_k": 5, "top_p": 0.5})",
         "cannot set both top-k and top-p samplings."},
        {R"({"prompt": "a", "logprobs": 11})", "return_topk_logprobs > 10 not supported"},
        {R"({"prompt": "a", "echo": 1})", "echo must be a boolean value"},
        {R"({"prompt": "a", "stop": 3})", "stop must be a string or a list of strings"},
        {R"({"prompt": "a", "seed": -2})", "seed must be an integer >= 0"},
        {R"({"prompt": "a", "best_of": 2})", "best_of > 1 not supported"},
        {R"({"prompt": "a", "n": 2})", "num_completions > 1 not supported"},
        {R"({"prompt": ["a", "b"], "stream": true})",
         "not supported yet: stream with several prompts, echo or logprobs"},
        {R"({"prompt": "a", "stream": 1})", "stream must be a boolean value"},
        {R"({"prompt": "a", "presence_penalty": 0.5})", "not supported yet: presence_penalty"},
        {R"({"prompt": "a", "logit_bias": {"5": 1}})", "not supported yet: logit_bias"},
        {R"({"prompt": "a", "suffix": "z"})", "not supported yet: suffix"},
        {"[1]", "the request body must be a JSON object"},
    };
    for (const auto& [body, message] : cases) EXPECT_EQ(error_for(body), message) << body;
    std::string prompts;
    for (int i = 0; i < 129; ++i) prompts += std::string(i ? ", " : "") + "\"a\"";
    EXPECT_EQ(error_for("{\"prompt\": [" + prompts + "]}"), "Maximum number of prompts is 128");
}

TEST(CompletionRequest, ReadsOpenAisFieldsAsMegatronMapsThem) {
    // lm-evaluation-harness's loglikelihood request.
    CompletionRequest r =
        accepted(R"({"model": "m", "prompt": [[5, 6, 7], [8]], "temperature": 0, "max_tokens": 1,)"
                 R"( "logprobs": 1, "seed": 1234, "echo": true})");
    ASSERT_EQ(r.prompts.size(), 2u);
    EXPECT_EQ(std::get<std::vector<int32_t>>(r.prompts[0]), (std::vector<int32_t>{5, 6, 7}));
    EXPECT_EQ(r.max_tokens, 1);
    EXPECT_EQ(r.logprobs, 1);
    EXPECT_TRUE(r.echo);
    EXPECT_EQ(r.seed, 1234u);
    EXPECT_EQ(r.sampling.top_k, 1);  // temperature 0: greedy
    EXPECT_EQ(r.sampling.top_p, 0.0);
    EXPECT_FALSE(r.stop);  // the end-of-document text, when run

    r = accepted(R"({"prompt": "Hi", "stop": "\n", "top_p": 1, "temperature": 0.7})");
    EXPECT_EQ(std::get<std::string>(r.prompts[0]), "Hi");
    EXPECT_EQ(r.max_tokens, 16);       // OpenAI's default
    EXPECT_EQ(r.sampling.top_p, 0.0);  // 1 keeps every token
    EXPECT_DOUBLE_EQ(r.sampling.temperature, 0.7);
    EXPECT_EQ(*r.stop, std::vector<std::string>{"\n"});
    r = accepted(R"({"prompt": [3, 4], "stop": null, "logprobs": null, "n": 1, "top_k": 4})");
    EXPECT_EQ(std::get<std::vector<int32_t>>(r.prompts[0]), (std::vector<int32_t>{3, 4}));
    EXPECT_EQ(r.sampling.top_k, 4);
    EXPECT_FALSE(r.stop);
}

// A token's offset is where its text starts (GPT-2's " world" at its space); the bytes of a
// character split over byte-level tokens all point at the character's start.
TEST(CompletionOffsets, AreCharacterStartsOverByteLevelBpe) {
    TokenizerOptions o;
    o.vocab_file = (mt::test::fixtures_dir() / "gpt2-tiny" / "vocab.json").string();
    o.merge_file = (mt::test::fixtures_dir() / "gpt2-tiny" / "merges.txt").string();
    auto tok = Registry::global().create_tokenizer("GPT2BPETokenizer", o);
    const std::string text = "Hello world \xe6\x97\xa5 ok";  // U+65E5, 3 bytes
    const std::vector<int32_t> ids = tok->encode(text);
    ASSERT_EQ(tok->decode(ids), text);
    const std::vector<size_t> offsets = token_byte_offsets(*tok, ids, text);
    ASSERT_EQ(offsets.size(), ids.size());
    int split = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
        const std::string piece = tok->decode(std::span(&ids[i], 1));
        if (piece.find("\xef\xbf\xbd") == std::string::npos) {  // a whole text: found there
            EXPECT_EQ(text.compare(offsets[i], piece.size(), piece), 0) << i << " " << piece;
        } else {  // a byte of U+65E5: its start
            EXPECT_EQ(offsets[i], 12u) << i;
            ++split;
        }
    }
    EXPECT_GE(split, 2) << "the character was not split over tokens: the test shows nothing";
}

// Requests queued together run as one batch when they can (greedy, prompts of similar length),
// each getting exactly what it gets alone; a sampled one runs alone.
TEST(CompletionBatcher, QueuedGreedyRequestsShareABatchAndGetWhatTheyGetAlone) {
    mt::test::TinyLlamaGenerator tiny;
    TextGenerator& generator = tiny.generator;
    const Tokenizer* tokenizer = tiny.tokenizer.get();
    const char* bodies[] = {
        R"({"prompt": "5 17 99 3 64 12 7", "max_tokens": 4, "temperature": 0, "logprobs": 2})",
        R"({"prompt": [[42, 8, 1], [99, 1, 77, 23]], "max_tokens": 2, "temperature": 0,)"
        R"( "echo": true})",
        R"({"prompt": "9 9 9", "max_tokens": 3, "temperature": 0.8, "seed": 4})",
        R"({"prompt": "1 2 3 4 5", "max_tokens": 5, "temperature": 0, "stop": " 25"})",
    };
    std::vector<CompletionRequest> requests;
    std::vector<std::string> alone;
    for (const char* body : bodies) {
        requests.push_back(accepted(body));
        tokenize_prompts(*tokenizer, requests.back());
        const CompletionRequest* one = &requests.back();
        alone.push_back(completion_response(complete_batch(generator, std::span(&one, 1))[0],
                                            requests.back(), "id", "m", 0));
    }
    CompletionBatcher batcher(generator);
    std::vector<std::shared_ptr<CompletionBatcher::Ticket>> tickets;
    for (const auto& r : requests) tickets.push_back(batcher.queue(r));
    for (size_t i = 0; i < tickets.size(); ++i) {
        const std::string together =
            completion_response(batcher.result(tickets[i]), tickets[i]->request(), "id", "m", 0);
        // The same tokens and texts; log-probs to 1e-5 (a batch's products sum in another order).
        EXPECT_TRUE(mt::test::json_near(together, alone[i], 1e-5)) << together << "\n" << alone[i];
    }
    EXPECT_EQ(tickets[0]->batch_size(), 3u);  // the three greedy ones
    EXPECT_EQ(tickets[1]->batch_size(), 3u);
    EXPECT_EQ(tickets[2]->batch_size(), 1u);  // sampled: alone
    EXPECT_EQ(tickets[3]->batch_size(), 3u);

    // A batch that fails (one prompt too long for the model) is run again one by one: only the
    // bad request fails.
    auto good = batcher.queue(requests[0]);
    CompletionRequest too_long =
        accepted(R"({"prompt": [1], "max_tokens": 100000, "temperature": 0})");
    auto bad = batcher.queue(too_long);
    EXPECT_TRUE(mt::test::json_near(
        completion_response(batcher.result(good), requests[0], "id", "m", 0), alone[0], 1e-5));
    EXPECT_NE(mt::test::error_of([&] { batcher.result(bad); }).find("longer than allowed"),
              std::string::npos);
}

// The continuous batch (CompletionEngine): requests queued at once, greedy and sampled, one
// prompt or several, with echo, log-probs and stop strings, each get what they get alone; a
// queue beyond its bound is refused before anything is queued.
TEST(CompletionEngine, QueuedRequestsRunTogetherAndGetWhatTheyGetAlone) {
    mt::test::TinyLlamaGenerator tiny;
    TextGenerator& generator = tiny.generator;
    ASSERT_TRUE(CompletionEngine::supports(generator));
    const char* bodies[] = {
        R"({"prompt": "5 17 99 3 64 12 7", "max_tokens": 6, "temperature": 0, "logprobs": 2})",
        R"({"prompt": [[42, 8, 1], [99, 1, 77, 23]], "max_tokens": 2, "temperature": 0,)"
        R"( "echo": true, "logprobs": 1})",
        R"({"prompt": "9 9 9", "max_tokens": 5, "temperature": 0.8, "seed": 4})",
        R"({"prompt": "1 2 3 4 5", "max_tokens": 5, "temperature": 0, "stop": " 25"})",
        R"({"prompt": [[3, 1, 4, 1, 5]], "max_tokens": 0, "echo": true, "logprobs": 3})",
    };
    std::vector<CompletionRequest> requests;
    std::vector<std::string> alone;
    for (const char* body : bodies) {
        requests.push_back(accepted(body));
        tokenize_prompts(*tiny.tokenizer, requests.back());
        const CompletionRequest* one = &requests.back();
        alone.push_back(completion_response(complete_batch(generator, std::span(&one, 1))[0],
                                            requests.back(), "id", "m", 0));
    }
    CompletionEngine engine(generator, BatchLimits{3});  // fewer places than prompts: some wait
    std::vector<std::string> together(requests.size());
    const int32_t eod = generator.generation_tokens().eod;
    for (size_t i = 0; i < requests.size(); ++i)
        engine.queue(requests[i],
                     {{},
                      [&, i](infer::GenerationResult rows) {
                          together[i] = completion_response(
                              shape_completion(*tiny.tokenizer, eod, requests[i], std::move(rows)),
                              requests[i], "id", "m", 0);
                      },
                      [](std::exception_ptr e) { std::rethrow_exception(e); }});
    engine.run();
    for (size_t i = 0; i < requests.size(); ++i)  // log-probs to 1e-5, as in a batch
        EXPECT_TRUE(mt::test::json_near(together[i], alone[i], 1e-5)) << together[i] << "\n"
                                                                      << alone[i];

    // Refused at once, nothing queued: a prompt too long for the model, a full queue.
    CompletionRequest too_long = accepted(R"({"prompt": [1], "max_tokens": 100000})");
    EXPECT_NE(mt::test::error_of([&] { engine.queue(too_long, {}); }).find("longer than allowed"),
              std::string::npos);
    CompletionRequest many = accepted(R"({"prompt": [1], "max_tokens": 1})");
    many.prompts.assign(kMaxQueuedSequences / 4, std::vector<int32_t>{1});
    for (int i = 0; i < 4; ++i) engine.queue(many, {{}, [](infer::GenerationResult) {}, {}});
    EXPECT_THROW(engine.queue(requests[0], {}), ServerBusy);
    engine.run();  // the queued ones run; there is room again
    EXPECT_NO_THROW(engine.queue(requests[0], {{}, [](infer::GenerationResult) {}, {}}));
}

// A job queued between steps (a tokenizer request) runs before the batch's next step, while the
// running completion goes on: not after the batch has drained.
TEST(CompletionEngine, AJobBetweenStepsRunsAtTheNextStep) {
    mt::test::TinyLlamaGenerator tiny;
    CompletionEngine engine(tiny.generator, BatchLimits{2});
    CompletionRequest r = accepted(R"({"prompt": "5 17 99", "max_tokens": 12, "temperature": 0})");
    tokenize_prompts(*tiny.tokenizer, r);
    int tokens = 0, tokens_when_run = -1;
    bool done = false;
    engine.queue(r, {[&](int32_t) {
                         if (++tokens == 3) engine.between_steps([&] { tokens_when_run = tokens; });
                         return true;
                     },
                     [&](infer::GenerationResult) { done = true; },
                     [](std::exception_ptr e) { std::rethrow_exception(e); }});
    engine.run();
    EXPECT_TRUE(done);
    EXPECT_EQ(tokens_when_run, 3);  // before the fourth token's step
}

// The tiny Llama's logits from transformers, as log-probs of each next prompt token.
std::vector<double> transformers_log_probs(std::vector<int64_t>& prompt) {
    simdjson::dom::parser parser;
    simdjson::dom::element llama = parser.load(
        (mt::test::fixtures_dir() / "infer" / "expected.json").string())["models"]["llama"];
    for (simdjson::dom::element id : simdjson::dom::array(llama["prompts"].at(0)))
        prompt.push_back(int64_t(id));
    std::vector<double> out;
    size_t position = 0;
    for (simdjson::dom::element row : simdjson::dom::array(llama["logits"].at(0))) {
        if (position + 1 >= prompt.size()) break;
        std::vector<double> x;
        for (simdjson::dom::element v : simdjson::dom::array(row)) x.push_back(double(v));
        double m = *std::max_element(x.begin(), x.end()), sum = 0;
        for (double v : x) sum += std::exp(v - m);
        out.push_back(x[size_t(prompt[position + 1])] - m - std::log(sum));
        ++position;
    }
    return out;
}

class CompletionsServer : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        server_ = new mt::test::ApiServerProcess(
            "--load " + shell_quote(mt::test::fixtures_dir() / "hf" / "llama") +
            " --tokenizer-type NullTokenizer --vocab-size 127");
    }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }

    // The answer's JSON (status 200 expected unless given).
    simdjson::dom::element call(verb method, const std::string& path, const std::string& body,
                                int status = 200) {
        auto reply = mt::test::HttpClient(server_->port()).request(method, path, body);
        EXPECT_TRUE(reply) << path << " " << body;
        if (!reply) return {};
        EXPECT_EQ(reply->status, status) << path << " " << body << " -> " << reply->body;
        bodies_.push_back(std::make_unique<simdjson::padded_string>(reply->body));
        return parser_.emplace_back().parse(*bodies_.back()).value();
    }
    simdjson::dom::element complete(const std::string& body, int status = 200) {
        return call(verb::post, "/v1/completions", body, status);
    }

    static mt::test::ApiServerProcess* server_;
    std::deque<simdjson::dom::parser> parser_;
    std::vector<std::unique_ptr<simdjson::padded_string>> bodies_;
};
mt::test::ApiServerProcess* CompletionsServer::server_ = nullptr;

// lm-evaluation-harness's loglikelihood request: the prompt's tokens with their log-probs
// (transformers' numbers), then one greedy token whose log-prob is the top one.
TEST_F(CompletionsServer, EchoGivesThePromptsLogProbsAndTheGreedyTopOne) {
    ASSERT_GT(server_->port(), 0);
    std::vector<int64_t> prompt;
    const std::vector<double> expected = transformers_log_probs(prompt);
    std::string ids;
    for (int64_t id : prompt) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
    auto res = complete(R"({"prompt": [[)" + ids +
                        R"(]], "max_tokens": 1, "temperature": 0, "logprobs": 1, "echo": true})");
    EXPECT_EQ(std::string_view(res["object"]), "text_completion");
    simdjson::dom::element choice = res["choices"].at(0);
    EXPECT_EQ(int64_t(choice["index"]), 0);
    simdjson::dom::element lp = choice["logprobs"];
    simdjson::dom::array tokens = lp["tokens"], token_lp = lp["token_logprobs"],
                         top = lp["top_logprobs"], offsets = lp["text_offset"];
    ASSERT_EQ(tokens.size(), prompt.size() + 1);
    ASSERT_EQ(token_lp.size(), prompt.size() + 1);
    EXPECT_TRUE(token_lp.at(0).is_null());
    EXPECT_TRUE(top.at(0).is_null());
    for (size_t i = 1; i < prompt.size(); ++i)
        EXPECT_NEAR(double(token_lp.at(i)), expected[i - 1], 1e-4) << i;
    // The generated token is transformers' greedy one (10) and its log-prob the top one exactly.
    EXPECT_EQ(std::string_view(tokens.at(prompt.size())), "10");
    const double generated = double(token_lp.at(prompt.size()));
    simdjson::dom::object best = top.at(prompt.size());
    ASSERT_EQ(best.size(), 1u);
    EXPECT_EQ(double(best["10"]), generated);
    // NullTokenizer's text: ids joined by spaces; offsets in characters.
    EXPECT_EQ(std::string_view(choice["text"]), "5 17 99 3 64 12 7 10");
    EXPECT_EQ(int64_t(offsets.at(1)), 1);  // " 17" (the separator is the token's)
    EXPECT_EQ(int64_t(offsets.at(prompt.size())), 17);
    EXPECT_EQ(std::string_view(choice["finish_reason"]), "length");
    EXPECT_EQ(int64_t(res["usage"]["prompt_tokens"]), int64_t(prompt.size()));
    EXPECT_EQ(int64_t(res["usage"]["completion_tokens"]), 1);

    // Scoring only (max_tokens 0): the same prompt log-probs, nothing generated.
    auto scored = complete(R"({"prompt": [)" + ids + R"(], "max_tokens": 0, "echo": true})");
    simdjson::dom::array scored_lp = scored["choices"].at(0)["logprobs"]["token_logprobs"];
    ASSERT_EQ(scored_lp.size(), prompt.size());
    for (size_t i = 1; i < prompt.size(); ++i)
        EXPECT_EQ(double(scored_lp.at(i)), double(token_lp.at(i))) << i;
    EXPECT_TRUE(scored["choices"].at(0)["logprobs"]["top_logprobs"].is_null());
}

// Prompts of different lengths in one request each get their own max_tokens and the choice
// they get when sent alone; text prompts are tokenized by the server.
TEST_F(CompletionsServer, EachPromptOfABatchGetsWhatItGetsAlone) {
    ASSERT_GT(server_->port(), 0);
    const char* prompts[] = {"5 17 99 3 64 12 7", "42 8", "100 1 77 23"};
    std::vector<std::string> alone;
    for (const char* p : prompts) {
        auto res = complete(std::string(R"({"prompt": ")") + p +
                            R"(", "max_tokens": 4, "temperature": 0, "logprobs": 2})");
        simdjson::dom::element choice = res["choices"].at(0);
        EXPECT_EQ(simdjson::dom::array(choice["logprobs"]["tokens"]).size(), 4u) << p;
        alone.push_back(simdjson::minify(choice));
    }
    EXPECT_EQ(alone[0].find(R"("text":" 10 25 38 17")"), 11u) << alone[0];  // transformers' greedy
    auto res = complete(R"({"prompt": ["5 17 99 3 64 12 7", "42 8", "100 1 77 23"],)"
                        R"( "max_tokens": 4, "temperature": 0, "logprobs": 2})");
    simdjson::dom::array choices = res["choices"];
    ASSERT_EQ(choices.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        std::string together = simdjson::minify(choices.at(i));
        // only the index differs
        const std::string index = "\"index\":" + std::to_string(i);
        ASSERT_EQ(together.find(index), 1u) << together;
        together.replace(1, index.size(), "\"index\":0");
        EXPECT_EQ(together, alone[i]) << prompts[i];
    }
    EXPECT_EQ(int64_t(res["usage"]["completion_tokens"]), 12);
}

// A stop string ends the text before it; the tokens end with the one that reaches into it.
TEST_F(CompletionsServer, StopStringsCutTheText) {
    ASSERT_GT(server_->port(), 0);
    auto res = complete(
        R"({"prompt": "5 17 99 3 64 12 7", "max_tokens": 6, "temperature": 0, "stop": [" 38", "zz"]})");
    simdjson::dom::element choice = res["choices"].at(0);
    EXPECT_EQ(std::string_view(choice["text"]), " 10 25");
    EXPECT_EQ(std::string_view(choice["finish_reason"]), "stop");
    simdjson::dom::array tokens = choice["logprobs"]["tokens"];
    ASSERT_EQ(tokens.size(), 3u);
    EXPECT_EQ(std::string_view(tokens.at(2)), "38");
    EXPECT_TRUE(choice["logprobs"]["top_logprobs"].is_null());
    // The same request with a seed and sampling: reproducible.
    const std::string sampled =
        R"({"prompt": "5 17", "max_tokens": 5, "temperature": 0.9, "top_k": 20, "seed": 7})";
    EXPECT_EQ(simdjson::minify(complete(sampled)["choices"]),
              simdjson::minify(complete(sampled)["choices"]));
}

// Concurrent clients get the tokens and texts they get alone (their requests may share a batch).
TEST_F(CompletionsServer, ConcurrentClientsGetWhatTheyGetAlone) {
    ASSERT_GT(server_->port(), 0);
    std::vector<std::string> bodies, alone;
    for (int i = 0; i < 6; ++i) {
        bodies.push_back(R"({"prompt": [[)" + std::to_string(5 + i) + R"(, 17, 99, )" +
                         std::to_string(30 + 7 * i) + R"(]], "max_tokens": )" +
                         std::to_string(2 + i % 3) + R"(, "temperature": 0, "logprobs": 1})");
        alone.push_back(simdjson::minify(complete(bodies.back())["choices"]));
    }
    std::vector<std::string> together(bodies.size());
    std::vector<std::thread> clients;
    for (size_t i = 0; i < bodies.size(); ++i)
        clients.emplace_back([&, i] {
            auto reply = mt::test::HttpClient(server_->port())
                             .request(verb::post, "/v1/completions", bodies[i]);
            if (!reply || reply->status != 200) return;
            simdjson::dom::parser parser;
            together[i] = simdjson::minify(parser.parse(reply->body)["choices"]);
        });
    for (auto& t : clients) t.join();
    for (size_t i = 0; i < bodies.size(); ++i)  // log-probs to 1e-5, as in a batch
        EXPECT_TRUE(mt::test::json_near(together[i], alone[i], 1e-5)) << together[i] << "\n"
                                                                      << alone[i];
}

// Stopped while a continuous batch runs and requests wait (SIGTERM), the server exits cleanly:
// the batch's requests, which hold connections, are dropped before the connections' io_context.
TEST(CompletionsServerShutdown, StopsCleanlyWithRequestsInFlight) {
    mt::test::ApiServerProcess server("--load " +
                                      shell_quote(mt::test::fixtures_dir() / "hf" / "llama") +
                                      " --tokenizer-type NullTokenizer --vocab-size 127");
    ASSERT_GT(server.port(), 0);
    std::atomic<int> answered{0};
    std::vector<std::thread> clients;
    for (int i = 0; i < 48; ++i)
        clients.emplace_back([&, i] {
            auto reply = mt::test::HttpClient(server.port())
                             .request(verb::post, "/v1/completions",
                                      R"({"prompt": [[)" + std::to_string(1 + i) +
                                          R"(, 7]], "max_tokens": 28, "temperature": 0})");
            if (reply && reply->status == 200) ++answered;
        });
    while (answered == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const int status = server.stop();
    for (auto& t : clients) t.join();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// --inference-dynamic-batching-buffer-size-gb: 4 KiB holds 16 positions of the tiny Llama's
// KV cache (2 layers x keys and values x 2 groups x 8 x 4 bytes = 256 bytes a position). A
// request of 8 positions runs; one of 32 can never fit and is answered 400 naming the flag.
TEST(CompletionsServerMemory, ARequestLargerThanTheBatchesMemoryIsRefused) {
    mt::test::ApiServerProcess server(
        "--load " + shell_quote(mt::test::fixtures_dir() / "hf" / "llama") +
        " --tokenizer-type NullTokenizer --vocab-size 127"
        " --inference-dynamic-batching-buffer-size-gb 3.814697265625e-06");
    ASSERT_GT(server.port(), 0);
    auto fits = mt::test::HttpClient(server.port())
                    .request(verb::post, "/v1/completions",
                             R"({"prompt": [[1, 2]], "max_tokens": 6, "temperature": 0})");
    ASSERT_TRUE(fits);
    EXPECT_EQ(fits->status, 200) << fits->body;
    auto huge = mt::test::HttpClient(server.port())
                    .request(verb::post, "/v1/completions",
                             R"({"prompt": [[1, 2, 3, 4]], "max_tokens": 28, "temperature": 0})");
    ASSERT_TRUE(huge);
    EXPECT_EQ(huge->status, 400) << huge->body;
    EXPECT_NE(huge->body.find("--inference-dynamic-batching-buffer-size-gb"), std::string::npos)
        << huge->body;
    EXPECT_TRUE(server.alive());
}

// PUT /api runs outside the continuous batch: it is answered while completions keep arriving
// (the batch stops taking new ones and drains for it), not after they stop. Two places for 24
// clients keep requests queued all the time: the batch never empties by itself.
TEST(CompletionsServerApi, PutApiIsAnsweredUnderAConstantCompletionsLoad) {
    mt::test::ApiServerProcess server(
        "--load " + shell_quote(mt::test::fixtures_dir() / "hf" / "llama") +
        " --tokenizer-type NullTokenizer --vocab-size 127 --inference-max-requests 2");
    ASSERT_GT(server.port(), 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    std::atomic<bool> put_done{false};
    std::atomic<int> completions{0};
    std::vector<std::thread> clients;
    for (int i = 0; i < 24; ++i)
        clients.emplace_back([&, i] {
            while (!put_done && std::chrono::steady_clock::now() < deadline) {
                auto reply = mt::test::HttpClient(server.port())
                                 .request(verb::post, "/v1/completions",
                                          R"({"prompt": [[)" + std::to_string(1 + i) +
                                              R"(, 7]], "max_tokens": 20, "temperature": 0})");
                if (reply && reply->status == 200) ++completions;
            }
        });
    while (completions < 24) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const auto sent = std::chrono::steady_clock::now();
    auto put =
        mt::test::HttpClient(server.port())
            .request(verb::put, "/api", R"({"prompts": ["5 17 99"], "tokens_to_generate": 3})");
    // Milliseconds here; while the load lasts (15 s) before the batch let it through.
    const bool in_time = std::chrono::steady_clock::now() - sent < std::chrono::seconds(5);
    put_done = true;
    for (auto& t : clients) t.join();
    ASSERT_TRUE(put);
    EXPECT_EQ(put->status, 200) << put->body;
    EXPECT_TRUE(in_time) << "PUT /api waited for the completions to stop";
    // The completions went on after it.
    auto after = mt::test::HttpClient(server.port())
                     .request(verb::post, "/v1/completions",
                              R"({"prompt": [[3, 7]], "max_tokens": 4, "temperature": 0})");
    ASSERT_TRUE(after);
    EXPECT_EQ(after->status, 200) << after->body;
}

TEST_F(CompletionsServer, AnswersErrorsModelsAndTokenizerPaths) {
    ASSERT_GT(server_->port(), 0);
    auto error = complete(R"({"prompt": "1", "n": 3})", 400);
    EXPECT_EQ(std::string_view(error["error"]["message"]), "num_completions > 1 not supported");
    EXPECT_EQ(std::string_view(error["error"]["type"]), "invalid_request_error");
    // Too long for the model's positions: refused by the generation, still a 400.
    error = complete(R"({"prompt": "1", "max_tokens": 100000})", 400);
    EXPECT_NE(std::string_view(error["error"]["message"]).find("longer than allowed"),
              std::string::npos);
    auto reply = mt::test::HttpClient(server_->port()).request(verb::get, "/v1/completions", "");
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 405);

    auto models = call(verb::get, "/v1/models", "");
    EXPECT_EQ(std::string_view(models["object"]), "list");
    EXPECT_NE(std::string_view(models["data"].at(0)["id"]).find("llama"), std::string::npos);
    auto info = call(verb::get, "/tokenizer_info", "");
    EXPECT_EQ(std::string_view(info["tokenizer_class"]), "NullTokenizer");
    EXPECT_EQ(std::string_view(info["eos_token"]), "127");
    auto tokens =
        call(verb::post, "/tokenize", R"({"prompt": "5 17 99", "add_special_tokens": false})");
    EXPECT_EQ(simdjson::minify(tokens["tokens"]), "[5,17,99]");
    EXPECT_EQ(int64_t(tokens["count"]), 3);
    auto text = call(verb::post, "/detokenize", R"({"tokens": [5, 17, 99]})");
    EXPECT_EQ(std::string_view(text["prompt"]), "5 17 99");
    error = call(verb::post, "/detokenize", R"({"tokens": [5, 500]})", 400);
    EXPECT_EQ(std::string_view(error["error"]["message"]),
              "tokens has token id 500 at position 1, outside the vocabulary [0, 128)");
    EXPECT_TRUE(server_->alive());
}

}  // namespace
}  // namespace mt::generate_tool
