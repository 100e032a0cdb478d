// megatron-generate: PUT /api request validation with Megatron's messages and the response
// shape (the engine library), then the binary on the tiny Hugging Face Llama of tests/fixtures/hf
// with a NullTokenizer (text = ids): --prompts gives transformers' greedy continuation
// (tests/fixtures/infer), the sample-file and unconditional modes write their files, and the
// REST server answers good and bad requests, concurrent ones too, and stays up; and a
// checkpoint megatron-train wrote generates with the model its own args describe.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include <simdjson.h>

#include "api_request.h"
#include "api_test_support.h"
#include "mt/infer/synthetic_requests.h"
#include "test_support.h"

namespace mt::generate_tool {
namespace {

namespace fs = std::filesystem;
using mt::test::run_command;
using mt::test::shell_quote;
using mt::test::tool_path;

std::string error_for(const std::string& body) {
    auto parsed = parse_api_request(body);
    auto* message = std::get_if<std::string>(&parsed);
    return message ? *message : "(accepted)";
}

TEST(ApiRequest, RejectsWhatMegatronRejectsWithItsMessages) {
    const std::pair<const char*, const char*> cases[] = {
        {R"({"tokens_to_generate": 3})", "prompts argument required"},
        {R"({"prompts": ["a"], "max_len": 3})",
         "max_len is no longer used.  Replace with tokens_to_generate"},
        {R"({"prompts": ["a"], "sentences": ["a"]})",
         "sentences is no longer used.  Replace with prompts"},
        {R"({"prompts": "a"})", "prompts is not a list of strings"},
        {R"({"prompts": ["a", 3]})", "prompts is not a list of strings"},
        {R"({"prompts": []})", "prompts is empty"},
        {R"({"prompts": ["a"], "tokens_to_generate": 2.5})",
         "tokens_to_generate must be an integer greater than 0"},
        {R"({"prompts": ["a"], "tokens_to_generate": -1})",
         "tokens_to_generate must be an integer greater than or equal to 0"},
        {R"({"prompts": ["a"], "logprobs": 1})", "logprobs must be a boolean value"},
        {R"({"prompts": ["a"], "tokens_to_generate": 0})",
         "tokens_to_generate=0 implies logprobs should be True"},
        {R"({"prompts": ["a"], "temperature": "hot"})",
         "temperature must be a positive number less than or equal to 1000.0"},
        {R"({"prompts": ["a"], "temperature": 0})",
         "temperature must be a positive number less than or equal to 100.0"},
        {R"({"prompts": ["a"], "top_k": 1.0})",
         "top_k must be an integer equal to or greater than 0 and less than or equal to 1000"},
        {R"({"prompts": ["a"], "top_k": 1001})",
         "top_k must be equal to or greater than 0 and less than or equal to 1000"},
        {R"({"prompts": ["a"], "top_p": 1})",
         "top_p must be a positive float less than or equal to 1.0"},
        {R"({"prompts": ["a"], "top_k": 5, "top_p": 0.5})",
         "cannot set both top-k and top-p samplings."},
        {R"({"prompts": ["a"], "top_p": 1.5})", "top_p must be less than or equal to 1.0"},
        {R"({"prompts": ["a"], "top_p_decay": 0.5})", "top_p_decay cannot be set without top_p"},
        {R"({"prompts": ["a"], "top_p": 0.5, "top_p_bound": 0.7})",
         "top_p_bound must be greater than 0 and less than top_p"},
        {R"({"prompts": ["a"], "add_BOS": "yes"})", "add_BOS must be a boolean value"},
        {R"({"prompts": [""]})", "Empty prompts require add_BOS=true"},
        {R"({"prompts": ["a"], "stop_on_eol": 0})", "stop_on_eol must be a boolean value"},
        {R"({"prompts": ["a"], "random_seed": -3})", "random_seed must be a positive integer"},
        {R"({"prompts": ["a", "b"], "beam_width": 2})",
         "When doing beam_search, batch size must be 1"},
        {R"({"prompts": ["a"], "length_penalty": 1})", "length_penalty must be a float"},
        {R"(["a"])", "the request body must be a JSON object"},
    };
    for (const auto& [body, message] : cases) EXPECT_EQ(error_for(body), message) << body;
    std::string many = R"({"prompts": [)";
    for (int i = 0; i < 129; ++i) many += std::string(i ? ", " : "") + "\"p\"";
    EXPECT_EQ(error_for(many + "]}"), "Maximum number of prompts is 128");
    EXPECT_EQ(error_for("{not json").rfind("Failed to decode JSON object", 0), 0u);
}

TEST(ApiRequest, ReadsEveryField) {
    auto parsed = parse_api_request(
        R"({"prompts": ["a", ""], "tokens_to_generate": 5, "logprobs": true, "temperature": 0.5,
            "top_p": 0.9, "top_p_decay": 0.5, "top_p_bound": 0.2, "add_BOS": true,
            "stop_on_double_eol": true, "prevent_newline_after_colon": true,
            "random_seed": 42, "no_log": true})");
    ASSERT_TRUE(std::holds_alternative<ApiRequest>(parsed)) << std::get<std::string>(parsed);
    const ApiRequest& api = std::get<ApiRequest>(parsed);
    const TextRequest& r = api.request;
    EXPECT_EQ(r.prompts, (std::vector<std::string>{"a", ""}));
    EXPECT_EQ(r.tokens_to_generate, 5);
    EXPECT_TRUE(r.logprobs && r.add_bos && r.stop_on_double_eol && r.prevent_newline_after_colon);
    EXPECT_FALSE(r.stop_on_eol);
    EXPECT_DOUBLE_EQ(r.sampling.temperature, 0.5);
    EXPECT_DOUBLE_EQ(r.sampling.top_p, 0.9);
    EXPECT_DOUBLE_EQ(r.top_p_decay, 0.5);
    EXPECT_DOUBLE_EQ(r.top_p_bound, 0.2);
    EXPECT_EQ(r.random_seed, std::optional<uint64_t>(42));
    EXPECT_TRUE(api.no_log);
}

TEST(ApiRequest, ResponseHasMegatronsFields) {
    TextResult r;
    r.text = {"a b"};
    r.tokens = {{1, 2}};
    r.logprobs = {{-0.5f}};
    r.segments = {{"a", " b"}};
    EXPECT_EQ(api_response(r, true),
              R"({"text": ["a b"], "tokens": [[1, 2]], "logprobs": [[-0.5]], )"
              R"("segments": [["a", " b"]]})");
    EXPECT_EQ(api_response(r, false),
              R"({"text": ["a b"], "tokens": [[1, 2]], "segments": [["a", " b"]]})");
}

// The tiny Llama (vocabulary 128) with a NullTokenizer whose EOD is 127.
std::string llama_flags() {
    return "--load " + shell_quote(mt::test::fixtures_dir() / "hf" / "llama") +
           " --tokenizer-type NullTokenizer --vocab-size 127";
}

// transformers' greedy continuation of the first fixture prompt, as NullTokenizer text.
std::pair<std::string, std::string> greedy_reference(size_t tokens) {
    // tests/fixtures/infer/expected.json: llama, prompt 0 and its greedy ids.
    const std::vector<int> prompt = {5, 17, 99, 3, 64, 12, 7};
    const std::vector<int> greedy = {10, 25, 38, 17, 102, 102};
    std::string p, all;
    for (int id : prompt) p += (p.empty() ? "" : " ") + std::to_string(id);
    all = p;
    for (size_t i = 0; i < tokens; ++i) all += " " + std::to_string(greedy[i]);
    return {p, all};
}

// tests/fixtures/hf/mixtral_expected.json: the tiny MixtralForCausalLM's prompt ids (its
// tokenizer.json's encoding of kMixtralPrompt) and transformers' 12 greedy ids after them.
constexpr const char* kMixtralPrompt = "The Queen said to Alice that the cat was not mad.";
constexpr const char* kMixtralPromptIds =
    "51 257 220 48 84 68 282 259 64 72 67 271 220 32 75 297 68 256 269 83 263 283 64 83 292 298 "
    "78 83 288 64 67 13";
constexpr const char* kMixtralGreedyIds = "291 279 300 172 232 127 22 140 232 270 203 266";

// A Mixtral folder or checkpoint's greedy continuation of the prompt ids, as NullTokenizer text.
std::string mixtral_greedy(const fs::path& load) {
    auto r =
        run_command(shell_quote(tool_path("megatron-generate")) + " --load " + shell_quote(load) +
                    " --tokenizer-type NullTokenizer --vocab-size 301 --greedy"
                    " --out-seq-length 12 --prompts '" +
                    kMixtralPromptIds + "'");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.output;
}

// The request log quotes at most 2 KiB of a body (cut at a character boundary).
TEST(ApiRequest, LogEntryBoundsTheBody) {
    EXPECT_EQ(request_log_entry("1.2.3.4", R"({"prompts": ["hi"]})", "2026-12-02 06:00:00"),
              "request IP: 1.2.3.4\n{\"prompts\": [\"hi\"]}\nstart time:  2026-12-02 06:00:00\n");
    const std::string body = std::string(2047, 'a') + "\xC3\xA9" + std::string(1 << 20, 'b');
    const std::string entry = request_log_entry("::1", body, "t");
    EXPECT_EQ(entry, "request IP: ::1\n" + std::string(2047, 'a') + "... (" +
                         std::to_string(body.size()) + " bytes in all)\nstart time:  t\n");
}

// transformers' MixtralForCausalLM (4 experts, top-2, GQA): its greedy tokens from the folder,
// through the folder's own tokenizer.json (the text transformers decodes, <s> and the U+FFFD of
// split bytes included) and as ids, and from the checkpoint megatron-convert --loader mixtral_hf
// makes of it over two expert-parallel ranks, and from that one resharded to TP2 x PP2 x EP2
// (the plugins named as convert.py also takes them: by module, loader_mixtral_hf, saver_core).
TEST(GenerateTool, MixtralGivesTransformersGreedyTokens) {
    const fs::path folder = mt::test::fixtures_dir() / "hf" / "mixtral";
    const std::string ids = std::string(kMixtralPromptIds) + " " + kMixtralGreedyIds;
    EXPECT_NE(mixtral_greedy(folder).find("\n" + ids + "\n"), std::string::npos);
    auto r =
        run_command(shell_quote(tool_path("megatron-generate")) + " --load " + shell_quote(folder) +
                    " --greedy --out-seq-length 12 --prompts '" + kMixtralPrompt + "'");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(std::string("\n") + kMixtralPrompt +
                            " g d<s>\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
                            "7\xD0\x8A"
                            "ou\x0f  \n"),
              std::string::npos)
        << r.output;
    mt::test::TempDir dir;
    auto c = run_command(shell_quote(tool_path("megatron-convert")) +
                         " --model-type GPT --loader loader_mixtral_hf --load-dir " +
                         shell_quote(folder) +
                         " --saver core --target-expert-parallel-size 2 --save-dir " +
                         shell_quote(dir.path() / "core"));
    ASSERT_EQ(c.exit_code, 0) << c.output;
    // Megatron's files of two expert-parallel ranks, each with two of the four experts.
    EXPECT_TRUE(fs::exists(dir.path() / "core/iter_0000001/mp_rank_00_001/model_optim_rng.pt"));
    EXPECT_NE(mixtral_greedy(dir.path() / "core").find("\n" + ids + "\n"), std::string::npos);
    // And resharded to TP2 x PP2 x EP2 (mp_rank_TT_PPP_EEE).
    c = run_command(shell_quote(tool_path("megatron-convert")) +
                    " --model-type GPT --loader loader_core --load-dir " +
                    shell_quote(dir.path() / "core") +
                    " --saver saver_core --target-tensor-parallel-size 2"
                    " --target-pipeline-parallel-size 2 --target-expert-parallel-size 2"
                    " --save-dir " +
                    shell_quote(dir.path() / "split"));
    ASSERT_EQ(c.exit_code, 0) << c.output;
    EXPECT_TRUE(
        fs::exists(dir.path() / "split/iter_0000001/mp_rank_01_001_001/model_optim_rng.pt"));
    EXPECT_NE(mixtral_greedy(dir.path() / "split").find("\n" + ids + "\n"), std::string::npos);
    // And to torch_dist (the experts on Megatron's expert axis) from the expert-parallel files.
    c = run_command(shell_quote(tool_path("megatron-convert")) +
                    " --model-type GPT --loader core --load-dir " +
                    shell_quote(dir.path() / "split") + " --saver torch_dist --save-dir " +
                    shell_quote(dir.path() / "dist"));
    ASSERT_EQ(c.exit_code, 0) << c.output;
    EXPECT_TRUE(fs::exists(dir.path() / "dist/iter_0000001/__0_0.distcp"));
    EXPECT_NE(mixtral_greedy(dir.path() / "dist").find("\n" + ids + "\n"), std::string::npos);
}

TEST(GenerateTool, PromptsGiveTransformersGreedyContinuation) {
    const auto [prompt, expected] = greedy_reference(6);
    auto r = run_command(shell_quote(tool_path("megatron-generate")) + " " + llama_flags() +
                         " --greedy --out-seq-length 6 --prompts '" + prompt + "'");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("loaded hf checkpoint"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("\n" + expected + "\n"), std::string::npos) << r.output;
}

// The HF Llama converted by megatron-convert to torch_dist at tensor parallel 2 (saved whole)
// and to Megatron's torch format split over TP 2 x PP 2 (joined again when loaded) generates
// transformers' greedy tokens.
TEST(GenerateTool, ConvertedCheckpointsInAnyLayoutGiveTransformersGreedyTokens) {
    mt::test::TempDir dir;
    const auto [prompt, expected] = greedy_reference(6);
    for (const auto& [saver, layout] :
         {std::pair<std::string, std::string>{"torch_dist", "--target-tensor-parallel-size 2"},
          {"core", "--target-tensor-parallel-size 2 --target-pipeline-parallel-size 2"}}) {
        const fs::path out = dir.path() / saver;
        auto c = run_command(shell_quote(tool_path("megatron-convert")) +
                             " --model-type GPT --loader llama_mistral --checkpoint-type hf"
                             " --load-dir " +
                             shell_quote(mt::test::fixtures_dir() / "hf" / "llama") + " --saver " +
                             saver + " " + layout + " --save-dir " + shell_quote(out));
        ASSERT_EQ(c.exit_code, 0) << c.output;
        auto r = run_command(shell_quote(tool_path("megatron-generate")) + " --load " +
                             shell_quote(out) +
                             " --tokenizer-type NullTokenizer --vocab-size 127 --greedy"
                             " --out-seq-length 6 --prompts '" +
                             prompt + "'");
        ASSERT_EQ(r.exit_code, 0) << r.output;
        EXPECT_NE(r.output.find("\n" + expected + "\n"), std::string::npos) << saver << r.output;
    }
}

TEST(GenerateTool, SampleFileAndUnconditionalModesWriteTheirFiles) {
    mt::test::TempDir dir;
    const auto [prompt, expected] = greedy_reference(4);
    std::ofstream(dir.path() / "prompts.txt") << prompt << "\n" << prompt << "\n";
    auto r = run_command(shell_quote(tool_path("megatron-generate")) + " " + llama_flags() +
                         " --greedy --out-seq-length 4 --sample-input-file " +
                         shell_quote(dir.path() / "prompts.txt"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::ifstream in(dir.path() / "prompts.txt.out");
    std::stringstream text;
    text << in.rdbuf();
    const std::string one =
        "\nContext:" + prompt + "\n\nMegatron-LM:" + expected.substr(prompt.size()) + "\n";
    EXPECT_EQ(text.str(), one + one);

    r = run_command(shell_quote(tool_path("megatron-generate")) + " " + llama_flags() +
                    " --num-samples 3 --out-seq-length 5 --genfile " +
                    shell_quote(dir.path() / "samples.jsonl"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::ifstream samples(dir.path() / "samples.jsonl");
    int lines = 0;
    for (std::string line; std::getline(samples, line); ++lines)
        EXPECT_EQ(line.rfind("{\"text\": \"", 0), 0u) << line;
    EXPECT_EQ(lines, 3);
    EXPECT_FALSE(fs::exists(dir.path() / "samples.jsonl.tmp"));
}

// --sample-input-file with --num-samples: Megatron's detoxify generate_samples_gpt.py reads
// RealToxicityPrompts-style JSON lines and writes {"text", "all_text", "prompt", "id"} lines;
// past the input's end it pads with "EMPTY TEXT" (which NullTokenizer cannot encode: refused by
// name), and a line that is not such a record is an error naming it.
TEST(GenerateTool, SampleInputFileWithNumSamplesWritesPromptRecords) {
    mt::test::TempDir dir;
    const auto [prompt, expected] = greedy_reference(4);
    const std::string record = R"({"prompt": {"text": ")" + prompt + R"(", "toxicity": 0.1}})";
    std::ofstream(dir.path() / "prompts.jsonl") << record << "\n" << record << "\n";
    const std::string generate = shell_quote(tool_path("megatron-generate")) + " " + llama_flags() +
                                 " --greedy --out-seq-length 4 --sample-input-file " +
                                 shell_quote(dir.path() / "prompts.jsonl");
    auto r = run_command(generate + " --num-samples 2 --sample-output-file " +
                         shell_quote(dir.path() / "out.jsonl"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::string want;
    for (int id = 0; id < 2; ++id)
        want += R"({"text": ")" + expected.substr(prompt.size()) + R"(", "all_text": ")" +
                expected + R"(", "prompt": ")" + prompt + R"(", "id": )" + std::to_string(id) +
                "}\n";
    EXPECT_EQ(mt::test::read_file(dir.path() / "out.jsonl"), want);

    r = run_command(generate + " --num-samples 3");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("EMPTY"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir.path() / "prompts.jsonl.out"));
    std::ofstream(dir.path() / "prompts.jsonl") << record << "\n{\"text\": \"x\"}\n";
    r = run_command(generate + " --num-samples 2");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("prompts.jsonl:2: not a JSON line with a \"prompt\""),
              std::string::npos)
        << r.output;
}

// A megatron-train checkpoint: the model is built from the args stored in it (no model flags on
// the command line), and its max positions bound prompt + generation.
TEST(GenerateTool, GeneratesFromAMegatronTrainCheckpoint) {
    mt::test::TempDir dir;
    const std::string data = mt::test::tiny_gpt2_dataset(dir, mt::test::hello_documents(60));
    const std::string tokenizer = mt::test::tiny_gpt2_tokenizer_flags();
    auto train = run_command(
        shell_quote(tool_path("megatron-train")) +
        " --num-layers 2 --hidden-size 16 --num-attention-heads 2 --seq-length 32"
        " --max-position-embeddings 32 --micro-batch-size 2 --global-batch-size 4 --lr 1e-2"
        " --train-iters 20 --eval-iters 0 --split 100,0,0 --data-path " +
        shell_quote(data) + " --data-cache-path " + shell_quote(dir.path() / "cache") + tokenizer +
        " --save " + shell_quote(dir.path() / "ckpt"));
    ASSERT_EQ(train.exit_code, 0) << train.output;
    // Without --tokenizer-type: GPT2BPETokenizer over the files given, as Megatron's server.
    const std::string untyped = tokenizer.substr(tokenizer.find(" --vocab-file"));
    auto r = run_command(shell_quote(tool_path("megatron-generate")) + " --load " +
                         shell_quote(dir.path() / "ckpt") + untyped +
                         " --greedy --out-seq-length 8 --prompts 'Document 7 says'");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("loaded torch_dist checkpoint"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("\nDocument 7 says"), std::string::npos) << r.output;
    // No tokenizer flag at all: the checkpoint's args name the tokenizer and its files
    // (Megatron's --use-checkpoint-args, accepted).
    r = run_command(
        shell_quote(tool_path("megatron-generate")) + " --load " +
        shell_quote(dir.path() / "ckpt") +
        " --use-checkpoint-args --greedy --out-seq-length 8 --prompts 'Document 7 says'");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("\nDocument 7 says"), std::string::npos) << r.output;
    // No prompts but Megatron's dynamic-inference flags: its synthetic requests ("hi " x a random
    // length, core_v0.13's draws, as tests/unit/infer checks them against Megatron's).
    mt::infer::SyntheticRequestFlags synthetic;
    synthetic.min_prompt = 2;
    synthetic.max_prompt = 5;
    synthetic.per_sec = 20;
    synthetic.duration = 0.5;
    synthetic.seed = 7;
    const auto requests = mt::infer::synthetic_requests(synthetic);
    ASSERT_GT(requests.size(), 1u);
    r = run_command(shell_quote(tool_path("megatron-generate")) + " --load " +
                    shell_quote(dir.path() / "ckpt") + untyped +
                    " --greedy --num-tokens-to-generate 2 --seed 7 --num-tokens-to-prompt 2 5"
                    " --incoming-requests-per-sec 20 --incoming-requests-duration 0.5");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(" " + std::to_string(requests.size()) +
                            " synthetic requests (core_v0.13's), prompts of 2 to 5 tokens"),
              std::string::npos)
        << r.output;
    size_t from = 0;
    for (const auto& request : requests) {
        std::string text;
        for (int64_t i = 0; i < request.prompt_length; ++i) text += "hi ";
        from = r.output.find("\n" + text, from);
        ASSERT_NE(from, std::string::npos) << request.prompt_length << "\n" << r.output;
        ++from;
    }
    // --interactive: the prompt loop on stdin; modes are exclusive (none: the REST server).
    r = run_command("printf 'Document 7 says\\nstop\\n' | " +
                    shell_quote(tool_path("megatron-generate")) + " --load " +
                    shell_quote(dir.path() / "ckpt") + untyped +
                    " --greedy --out-seq-length 4 --interactive");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("Context prompt (stop to exit) >>> \nMegatron-LM: "), std::string::npos)
        << r.output;
    r = run_command(shell_quote(tool_path("megatron-generate")) + " --load " +
                    shell_quote(dir.path() / "ckpt") + untyped + " --prompts a --interactive");
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("are separate modes"), std::string::npos) << r.output;
    // Too long for the 32 positions the checkpoint's args give.
    r = run_command(shell_quote(tool_path("megatron-generate")) + " --load " +
                    shell_quote(dir.path() / "ckpt") + tokenizer +
                    " --greedy --out-seq-length 8 --prompts \"$(printf 'a %.0s' $(seq 40))\"");
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("no room left in the model's 32 positions"), std::string::npos)
        << r.output;
}

TEST(GenerateTool, MissingCheckpointIsAClearError) {
    auto r = run_command(shell_quote(tool_path("megatron-generate")) +
                         " --load /nonexistent/ckpt --tokenizer-type NullTokenizer --vocab-size 127"
                         " --prompts 1");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.output.find("error: --load /nonexistent/ckpt: no such directory"),
              std::string::npos)
        << r.output;
}

TEST(GenerateTool, ServerAnswersGoodBadAndConcurrentRequestsAndStaysUp) {
    mt::test::ApiServerProcess server(llama_flags());
    ASSERT_GT(server.port(), 0);
    const auto [prompt, expected] = greedy_reference(6);
    const std::string good = R"({"prompts": [")" + prompt +
                             R"("], "tokens_to_generate": 6, "top_k": 1, "logprobs": true})";
    auto res = mt::test::put_api(server.port(), good);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(res->body.rfind(R"({"text": [")" + expected + R"("], "tokens": [[5, 17, )", 0), 0u)
        << res->body;
    EXPECT_NE(res->body.find(R"("logprobs": [[)"), std::string::npos);

    // Too long, and near or beyond INT64_MAX: 400 before anything is allocated, not 500.
    for (const char* bad :
         {"{oops", R"({"prompts": ["1"], "top_k": 2, "top_p": 0.5})",
          R"({"prompts": ["1 2"], "tokens_to_generate": 1000})",
          R"({"prompts": ["1 2"], "tokens_to_generate": 1000000000})",
          R"({"prompts": ["1 2"], "tokens_to_generate": 9223372036854775807})",
          R"({"prompts": ["1 2"], "tokens_to_generate": 18446744073709551615})"}) {
        auto r = mt::test::put_api(server.port(), bad);
        ASSERT_TRUE(r) << bad;
        EXPECT_EQ(r->status, 400) << bad << " -> " << r->body;
    }

    std::vector<std::thread> clients;
    std::vector<std::string> bodies(4);
    for (size_t i = 0; i < bodies.size(); ++i)
        clients.emplace_back([&, i] {
            if (auto r = mt::test::put_api(server.port(), good); r && r->status == 200)
                bodies[i] = r->body;
        });
    for (auto& t : clients) t.join();
    for (const auto& body : bodies) EXPECT_EQ(body, res->body);
    EXPECT_TRUE(server.alive());
    const int status = server.stop();  // SIGTERM ends it cleanly
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// --bf16 / --fp16 (Megatron's inference scripts pass them): the model computes in that
// precision, its weights cast from the checkpoint's (bf16 and fp16 meet through f32); the tiny
// Llama's greedy continuation is transformers' still.
TEST(GenerateTool, Bf16AndFp16ComputeInThatPrecision) {
    const auto [prompt, expected] = greedy_reference(4);
    for (const char* precision : {"--bf16", "--fp16"}) {
        auto r = run_command(shell_quote(tool_path("megatron-generate")) + " " + llama_flags() +
                             " --greedy --out-seq-length 4 " + precision + " --prompts '" + prompt +
                             "'");
        ASSERT_EQ(r.exit_code, 0) << precision << r.output;
        EXPECT_NE(r.output.find("\n" + expected + "\n"), std::string::npos)
            << precision << r.output;
    }
    auto both = run_command(shell_quote(tool_path("megatron-generate")) + " " + llama_flags() +
                            " --bf16 --fp16 --prompts 1");
    EXPECT_NE(both.output.find("--bf16 and --fp16 exclude each other"), std::string::npos)
        << both.output;
}

// The inference tools' OpenMP threads spin 1,000 times before sleeping unless the user chose
// (mt/cli/openmp_waiting.h): libgomp's own report of its settings (OMP_DISPLAY_ENV) in the process
// that runs, the last one.
TEST(GenerateTool, ThreadsSpinBrieflyUnlessTheUserChose) {
    auto spin_count = [](const std::string& env, const char* tool, const char* flags) {
        const auto r =
            run_command("env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT OMP_DISPLAY_ENV=verbose " + env +
                        " " + shell_quote(tool_path(tool)) + " " + flags);
        const std::string key = "GOMP_SPINCOUNT = '";
        const size_t at = r.output.rfind(key);
        if (at == std::string::npos) return std::string("none\n") + r.output;
        return r.output.substr(at + key.size(),
                               r.output.find('\'', at + key.size()) - at - key.size());
    };
    EXPECT_EQ(spin_count("", "megatron-generate", "--help"), "1000");
    EXPECT_EQ(spin_count("", "megatron-eval", "--task LAMBADA --help"), "1000");
    EXPECT_EQ(spin_count("OMP_WAIT_POLICY=passive", "megatron-generate", "--help"), "0");
    EXPECT_EQ(spin_count("GOMP_SPINCOUNT=1234", "megatron-generate", "--help"), "1234");
    EXPECT_EQ(spin_count("OMP_WAIT_POLICY=active", "megatron-generate", "--help"), "30000000000");
    // Training keeps libgomp's default (spinning a while is faster on a quiet machine).
    EXPECT_EQ(spin_count("", "megatron-eval", "--task RACE --help"), "300000");
    EXPECT_EQ(spin_count("", "megatron-train", "--help"), "300000");
}

// The names Megatron's generation scripts use: --num-tokens-to-generate is --out-seq-length;
// the dynamic-inference example's flags with prompts change nothing; tokenizers without a plugin
// are refused by name.
TEST(GenerateTool, MegatronScriptNamesAndRefusals) {
    const auto [prompt, expected] = greedy_reference(4);
    auto r = run_command(shell_quote(tool_path("megatron-generate")) + " " + llama_flags() +
                         " --greedy --num-tokens-to-generate 4 --max-batch-size 8 --prompts '" +
                         prompt + "'");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("\n" + expected + "\n"), std::string::npos) << r.output;
    // With prompts, the dynamic-inference flags only time the requests' arrivals.
    auto dynamic = run_command(shell_quote(tool_path("megatron-generate")) + " " + llama_flags() +
                               " --greedy --num-tokens-to-generate 4 --num-tokens-to-prompt 8 16"
                               " --incoming-requests-per-sec 100 --prompts '" +
                               prompt + "'");
    ASSERT_EQ(dynamic.exit_code, 0) << dynamic.output;
    EXPECT_NE(dynamic.output.find("\n" + expected + "\n"), std::string::npos) << dynamic.output;
    auto multimodal = run_command(shell_quote(tool_path("megatron-generate")) + " --load " +
                                  shell_quote(mt::test::fixtures_dir() / "hf" / "llama") +
                                  " --tokenizer-type MultimodalTokenizer --prompts 1");
    EXPECT_NE(multimodal.output.find("--tokenizer-type MultimodalTokenizer: not supported yet: the "
                                     "MultimodalTokenizer tokenizer"),
              std::string::npos)
        << multimodal.output;
}

// Megatron core_v0.19's inference examples' flags (gpt_static_inference.py,
// gpt_dynamic_inference.py): --output-path holds each prompt's generated ids and text and, with
// --return-log-probs, the log-probs printed beside the text (also apart: the prompt's, the
// generated ones'); the options that change nothing are accepted (--incoming-requests-per-step:
// the same results), the others refused by name.
TEST(GenerateTool, CoreV019InferenceExampleWritesItsOutputPath) {
    mt::test::TempDir dir;
    const auto [prompt, expected] = greedy_reference(4);
    const fs::path json = dir.path() / "out.json";
    auto r = run_command(shell_quote(tool_path("megatron-generate")) + " " + llama_flags() +
                         " --greedy --num-tokens-to-generate 4 --return-log-probs --output-path " +
                         shell_quote(json) +
                         " --inference-ckpt-non-strict --inference-repeat-n 2"
                         " --use-flashinfer-fused-rope --no-record-throughput --model-provider gpt"
                         " --incoming-requests-per-step 2 --prompts '" +
                         prompt + "'");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    ASSERT_FALSE(parser.load(json.string()).get(doc)) << mt::test::read_file(json);
    simdjson::dom::element result;
    ASSERT_FALSE(doc["0"].get(result)) << mt::test::read_file(json);
    EXPECT_EQ(std::string_view(result["input_prompt"]), prompt);
    // The generated ids: the expected text after the prompt (NullTokenizer: text = ids).
    std::string generated;
    for (simdjson::dom::element id : simdjson::dom::array(result["generated_tokens"]))
        generated += " " + std::to_string(int64_t(id));
    EXPECT_EQ(prompt + generated, expected);
    EXPECT_EQ(" " + std::string(std::string_view(result["generated_text"])), generated);
    EXPECT_GE(double(result["latency"]), 0.0);
    // The log-probs of every token after the first, as printed (7 prompt ids, 4 generated).
    std::vector<double> logprobs;
    for (simdjson::dom::element lp : simdjson::dom::array(result["logprobs"]))
        logprobs.push_back(double(lp));
    ASSERT_EQ(logprobs.size(), 10u);
    std::vector<double> apart;
    for (const char* key : {"prompt_logprobs", "generated_logprobs"}) {
        const size_t before = apart.size();
        for (simdjson::dom::element lp : simdjson::dom::array(result[key]))
            apart.push_back(double(lp));
        EXPECT_EQ(apart.size() - before, key == std::string("prompt_logprobs") ? 6u : 4u) << key;
    }
    EXPECT_EQ(apart, logprobs);
    std::istringstream printed(r.output.substr(r.output.find("\n" + expected + "\n")));
    std::string line;
    std::getline(printed, line);
    std::getline(printed, line);
    for (size_t i = 0; i < logprobs.size() && std::getline(printed, line); ++i)
        EXPECT_NEAR(std::stod(line.substr(line.rfind(' ') + 1)), logprobs[i], 1e-6) << line;
    for (const auto& [flags, message] : std::vector<std::pair<std::string, std::string>>{
             {"--model-provider mamba", "--model-provider mamba names another model family"},
             {"--output-request-events",
              "--output-request-events: not supported yet: this option of "
              "Megatron's inference examples"},
             {"--prompt-file p.jsonl", "Cannot use both --prompts and --prompt-file"},
             {"--incoming-requests-per-step 0", "--incoming-requests-per-step must be > 0"}}) {
        r = run_command(shell_quote(tool_path("megatron-generate")) + " " + llama_flags() + " " +
                        flags + " --prompts '" + prompt + "'");
        EXPECT_NE(r.exit_code, 0) << flags;
        EXPECT_NE(r.output.find(message), std::string::npos) << flags << "\n" << r.output;
    }
}

// The generated ids of result `key` of an --output-path file, as NullTokenizer text.
std::string generated_ids(simdjson::dom::element doc, const char* key) {
    std::string out;
    for (simdjson::dom::element id : simdjson::dom::array(doc[key]["generated_tokens"]))
        out += " " + std::to_string(int64_t(id));
    return out;
}

// The rest of core_v0.19's example options: prompts from a JSON-lines --prompt-file (the first
// --prompt-file-num-truncate, each with its own length under --num-tokens-from-file), top-n
// log-probs beside the generated tokens' own (--skip-prompt-log-probs), --termination-id,
// --stop-words (dropped from the result) and --output-every-n-results.
TEST(GenerateTool, CoreV019InferenceExampleOptionsShapeTheGeneration) {
    mt::test::TempDir dir;
    const auto [prompt, expected] = greedy_reference(6);  // greedy: 10 25 38 17 102 102
    const fs::path prompts = dir.path() / "prompts.jsonl";
    std::ofstream(prompts) << "{\"text\": \"" << prompt
                           << "\", \"chatgpt_output_token_length\": 4}\n"
                           << "{\"text\": \"" << prompt
                           << "\", \"chatgpt_output_token_length\": 2, \"id\": 7}\n"
                           << "{\"text\": \"" << prompt << "\"}\n";
    const fs::path json = dir.path() / "out.json";
    const std::string base = shell_quote(tool_path("megatron-generate")) + " " + llama_flags() +
                             " --greedy --output-path " + shell_quote(json) + " --prompt-file " +
                             shell_quote(prompts);
    auto r = run_command(base +
                         " --prompt-file-num-truncate 2 --num-tokens-from-file --top-n-logprobs 3"
                         " --return-log-probs --skip-prompt-log-probs");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    ASSERT_FALSE(parser.load(json.string()).get(doc)) << mt::test::read_file(json);
    EXPECT_EQ(generated_ids(doc, "0"), " 10 25 38 17");
    EXPECT_EQ(generated_ids(doc, "1"), " 10 25");
    EXPECT_EQ(simdjson::dom::object(doc).size(), 2u) << mt::test::read_file(json);
    // One log-prob per generated token; the greedy token is each top-3 dict's first key, with
    // the same log-prob.
    std::vector<double> logprobs;
    for (simdjson::dom::element lp : simdjson::dom::array(doc["0"]["logprobs"]))
        logprobs.push_back(double(lp));
    ASSERT_EQ(logprobs.size(), 4u);
    const char* greedy[] = {"10", "25", "38", "17"};
    size_t at = 0;
    for (simdjson::dom::element top : simdjson::dom::array(doc["0"]["generated_top_n_logprobs"])) {
        ASSERT_LT(at, 4u);
        simdjson::dom::object entries(top);
        EXPECT_EQ(entries.size(), 3u);
        const auto first = *entries.begin();
        EXPECT_EQ(first.key, greedy[at]);
        EXPECT_NEAR(double(first.value), logprobs[at], 1e-6);
        double previous = 0;
        for (const auto field : entries) {
            EXPECT_LE(double(field.value), previous) << field.key;  // most likely first
            previous = double(field.value);
        }
        ++at;
    }
    EXPECT_EQ(at, 4u);

    // --termination-id ends at that id (kept); a stop word's ids end it too and are dropped.
    r = run_command(base +
                    " --num-tokens-to-generate 6 --termination-id 38 --output-every-n-results 2");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ASSERT_FALSE(parser.load(json.string()).get(doc)) << mt::test::read_file(json);
    EXPECT_EQ(generated_ids(doc, "0"), " 10 25 38");
    EXPECT_EQ(generated_ids(doc, "2"), " 10 25 38");
    EXPECT_EQ(simdjson::dom::object(doc).size(), 2u) << mt::test::read_file(json);  // 0 and 2
    r = run_command(base +
                    " --num-tokens-to-generate 6 --termination-id -1 --stop-words '38 17' 99"
                    " --suspend-resume-interval 16 --suspend-timeout 0.5");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ASSERT_FALSE(parser.load(json.string()).get(doc)) << mt::test::read_file(json);
    EXPECT_EQ(generated_ids(doc, "0"), " 10 25");
    r = run_command(base + " --num-tokens-to-generate 6 --termination-id -1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ASSERT_FALSE(parser.load(json.string()).get(doc)) << mt::test::read_file(json);
    EXPECT_EQ(generated_ids(doc, "0"), " 10 25 38 17 102 102");

    std::ofstream(dir.path() / "bad.jsonl") << "{\"text\": \"1 2\"}\n{\"prompt\": \"3\"}\n";
    r = run_command(shell_quote(tool_path("megatron-generate")) + " " + llama_flags() +
                    " --prompt-file " + shell_quote(dir.path() / "bad.jsonl"));
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("bad.jsonl:2: not a JSON line with a \"text\" string"),
              std::string::npos)
        << r.output;
}

}  // namespace
}  // namespace mt::generate_tool
