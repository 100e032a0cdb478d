// megatron-generate and megatron-eval on a model split over the ranks of an mpiexec job
// (--tensor-model-parallel-size 2, --pipeline-model-parallel-size 2): each rank loads its part,
// rank 0 prints, serves or evaluates, and the tokens, log-probabilities, REST answers and
// evaluation results are the one-process ones, on the tiny Hugging Face Llama (GQA, two key/value
// groups: one per rank), a megatron-train checkpoint saved at TP2 (per-rank files), a Hugging
// Face GPT-2 whose 50257 vocabulary rows do not split in two (padded for the split, cut from the
// logits), a Mixtral whose experts are spread over expert-parallel ranks, a Mamba hybrid
// model over pipeline stages, and Megatron's T5 (encoder-decoder).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api_test_support.h"
#include "json_compare.h"
#include "mpiexec_launch.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using mt::test::run_command;
using mt::test::shell_quote;
using mt::test::tool_path;

std::string llama_flags() {
    return " --load " + shell_quote(mt::test::fixtures_dir() / "hf" / "llama") +
           " --tokenizer-type NullTokenizer --vocab-size 127";
}

// The lines after the "loaded ... checkpoint" line: the generations and their log-probabilities.
std::vector<std::string> after_loading(const std::string& output) {
    const size_t at = output.find(" loaded ");
    std::vector<std::string> lines;
    if (at == std::string::npos) return {"(not loaded)", output};
    std::istringstream in(output.substr(output.find('\n', at) + 1));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// The same generations; each token's log-probability ('  "token" -1.234') to 1e-5 relative
// (the tensor-parallel ranks add their partial sums in another order).
void expect_same_lines(const std::vector<std::string>& got, const std::vector<std::string>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        const size_t g = got[i].rfind("\" "), w = want[i].rfind("\" ");
        if (got[i].rfind("  \"", 0) != 0 || g == std::string::npos || w == std::string::npos) {
            EXPECT_EQ(got[i], want[i]) << "line " << i;
            continue;
        }
        EXPECT_EQ(got[i].substr(0, g), want[i].substr(0, w)) << "line " << i;
        const double a = std::stod(got[i].substr(g + 2)), b = std::stod(want[i].substr(w + 2));
        EXPECT_NEAR(a, b, 1e-5 * std::abs(b)) << "line " << i;
    }
}

class ParallelInference : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!mt::test::mpiexec_available()) GTEST_SKIP() << "built without MPI";
    }
    // The command's stdout (its stderr added only when it fails): mpirun forwards a rank's
    // stdout and stderr separately, so a log line (stderr) may land after the " loaded " line.
    mt::test::RunResult stdout_of(const std::string& command) {
        const fs::path err = logs_.path() / "stderr";
        auto r = run_command("{ " + command + " 2>" + shell_quote(err) + "; }");
        if (r.exit_code != 0) r.output += mt::test::read_file(err);
        return r;
    }
    // `flags` in one process and split over ranks (TP2 by default): the same output after
    // loading.
    void expect_same_generation(const std::string& flags,
                                const std::string& layout = " --tensor-model-parallel-size 2",
                                int ranks = 2) {
        const std::string tool = shell_quote(tool_path("megatron-generate"));
        auto one = stdout_of(tool + flags);
        ASSERT_EQ(one.exit_code, 0) << one.output;
        auto split = stdout_of(mt::test::mpiexec_prefix(ranks) + tool + flags + layout);
        ASSERT_EQ(split.exit_code, 0) << split.output;
        expect_same_lines(after_loading(split.output), after_loading(one.output));
        // Rank 0 alone prints.
        EXPECT_EQ(split.output.find(" loaded "), split.output.rfind(" loaded ")) << split.output;
    }

  private:
    mt::test::TempDir logs_;
};

// transformers' greedy continuation (tests/fixtures/infer) and the one-process log-probs.
TEST_F(ParallelInference, TensorParallelGenerationGivesTheOneProcessTokensAndLogProbs) {
    expect_same_generation(llama_flags() +
                           " --greedy --out-seq-length 6 --return-log-probs"
                           " --prompts '5 17 99 3 64 12 7' '1 2 3'");
    auto r = run_command(mt::test::mpiexec_prefix(2) + shell_quote(tool_path("megatron-generate")) +
                         llama_flags() +
                         " --greedy --out-seq-length 6 --prompts '5 17 99 3 64 12 7'"
                         " --tensor-model-parallel-size 2");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("\n5 17 99 3 64 12 7 10 25 38 17 102 102\n"), std::string::npos)
        << r.output;
    // Sampling draws on rank 0: the same samples for the same seed.
    expect_same_generation(llama_flags() +
                           " --top_k 5 --temperature 0.8 --seed 7 --out-seq-length 5"
                           " --prompts '5 17 99'");
}

// A Mixtral (4 experts, top-2) with its experts spread over 2 and 4 expert-parallel ranks, also
// under tensor and pipeline parallelism: the one-process tokens and log-probabilities (each
// expert-parallel rank a replica of the dense weights, running the same calls).
TEST_F(ParallelInference, ExpertParallelGenerationGivesTheOneProcessTokensAndLogProbs) {
    const std::string mixtral =
        " --load " + shell_quote(mt::test::fixtures_dir() / "hf" / "mixtral") +
        " --tokenizer-type NullTokenizer --vocab-size 301 --greedy --out-seq-length 6"
        " --return-log-probs --prompts '51 257 220 48 84 68 282' '13 64'";
    expect_same_generation(mixtral, " --expert-model-parallel-size 2", 2);
    expect_same_generation(mixtral, " --expert-model-parallel-size 4", 4);
    expect_same_generation(mixtral,
                           " --expert-model-parallel-size 2 --tensor-model-parallel-size 2", 4);
    expect_same_generation(mixtral,
                           " --expert-model-parallel-size 2 --pipeline-model-parallel-size 2", 4);
}

TEST_F(ParallelInference, RestServerOnRankZeroAnswersAsOneProcess) {
    const std::string request =
        R"({"prompts": ["5 17 99 3 64 12 7", "1 2"], "tokens_to_generate": 5, "top_k": 1,)"
        R"( "logprobs": true})";
    // POST /v1/completions: the choices (the rest names the time).
    const std::string completion =
        R"({"prompt": [[5, 17, 99, 3], [1, 2]], "max_tokens": 3, "temperature": 0,)"
        R"( "logprobs": 3, "echo": true})";
    const auto complete = [&](int port) {
        auto res = mt::test::HttpClient(port).request(boost::beast::http::verb::post,
                                                      "/v1/completions", completion);
        EXPECT_TRUE(res && res->status == 200) << (res ? res->body : "no answer");
        simdjson::dom::parser parser;
        return res ? simdjson::minify(parser.parse(res->body)["choices"]) : std::string();
    };
    // A streamed completion that its stop string ends early: its events' texts put together.
    const auto streamed = [&](int port) {
        auto res = mt::test::HttpClient(port).request(
            boost::beast::http::verb::post, "/v1/completions",
            R"({"prompt": "5 17 99 3 64 12 7", "max_tokens": 6, "temperature": 0,)"
            R"( "stop": " 38", "stream": true})");
        EXPECT_TRUE(res && res->status == 200) << (res ? res->body : "no answer");
        std::string text;
        simdjson::dom::parser parser;
        for (size_t at = 0; res && (at = res->body.find("data: {", at)) != std::string::npos;) {
            const size_t end = res->body.find("\n\n", at);
            text += std::string_view(
                parser.parse(res->body.substr(at + 6, end - at - 6))["choices"].at(0)["text"]);
            at = end;
        }
        return text;
    };
    std::string alone, alone_completion, alone_streamed;
    {
        mt::test::ApiServerProcess server(llama_flags());
        ASSERT_GT(server.port(), 0);
        auto res = mt::test::put_api(server.port(), request);
        ASSERT_TRUE(res);
        ASSERT_EQ(res->status, 200) << res->body;
        alone = res->body;
        alone_completion = complete(server.port());
        alone_streamed = streamed(server.port());
        EXPECT_EQ(alone_streamed, " 10 25");  // cut before " 38"
    }
    // Tensor- and pipeline-parallel: rank 0 serves every path, the others follow.
    for (const char* layout :
         {" --tensor-model-parallel-size 2", " --pipeline-model-parallel-size 2"}) {
        mt::test::ApiServerProcess server(llama_flags() + layout, "", mt::test::mpiexec_prefix(2));
        ASSERT_GT(server.port(), 0) << layout;
        for (int i = 0; i < 2; ++i) {  // the followers stay in step across requests
            auto res = mt::test::put_api(server.port(), request);
            ASSERT_TRUE(res);
            EXPECT_EQ(res->status, 200) << res->body;
            // The same texts and tokens; log-probs to 1e-5 (the ranks sum in another order).
            EXPECT_TRUE(mt::test::json_near(res->body, alone, 1e-5)) << layout;
            EXPECT_TRUE(mt::test::json_near(complete(server.port()), alone_completion, 1e-5))
                << layout;
            EXPECT_EQ(streamed(server.port()), alone_streamed) << layout;
        }
        // Concurrent clients (a continuous batch: each request's state has a twin on the
        // follower) each get what they get alone.
        std::vector<std::string> together(4), streams(2);
        std::vector<std::thread> clients;
        for (size_t i = 0; i < together.size(); ++i)
            clients.emplace_back([&, i] { together[i] = complete(server.port()); });
        for (size_t i = 0; i < streams.size(); ++i)
            clients.emplace_back([&, i] { streams[i] = streamed(server.port()); });
        for (auto& t : clients) t.join();
        for (const std::string& answer : together)
            EXPECT_TRUE(mt::test::json_near(answer, alone_completion, 1e-5)) << layout;
        for (const std::string& text : streams) EXPECT_EQ(text, alone_streamed) << layout;
        auto bad =
            mt::test::put_api(server.port(), R"({"prompts": ["1"], "top_k": 2, "top_p": 0.5})");
        ASSERT_TRUE(bad);
        EXPECT_EQ(bad->status, 400);
        EXPECT_TRUE(server.alive());
    }
}

// An encoder-decoder model: Megatron's own T5 checkpoint (tests/fixtures/megatron_checkpoints,
// pretrain_t5.py's model) at TP2, each prompt the encoder's input, its <mask> a sentinel: the
// CLI's greedy tokens and log-probabilities and the REST server's answers (its followers encoding
// each request's prompts in step) are the one-process ones.
TEST_F(ParallelInference, T5GeneratesAndServesAtTensorParallelAsOneProcess) {
    const std::string t5 =
        " --model t5 --load " +
        shell_quote(mt::test::fixtures_dir() / "megatron_checkpoints" / "core_v0.13" /
                    "t5_torch_fp32") +
        " --tokenizer-type BertWordPieceCase --vocab-extra-ids 100 --vocab-file " +
        shell_quote(mt::test::fixtures_dir() / "wordpiece" / "tiny_vocab.txt");
    expect_same_generation(t5 +
                           " --greedy --out-seq-length 5 --return-log-probs"
                           " --prompts 'hello <mask> world' 'a cafe'");
    const std::string request =
        R"({"prompts": ["hello <mask> world", "a cafe"], "tokens_to_generate": 4, "top_k": 1,)"
        R"( "logprobs": true})";
    std::string alone;
    {
        mt::test::ApiServerProcess server(t5);
        ASSERT_GT(server.port(), 0);
        auto res = mt::test::put_api(server.port(), request);
        ASSERT_TRUE(res);
        ASSERT_EQ(res->status, 200) << res->body;
        alone = res->body;
    }
    // The decoder's text from [BOS].
    EXPECT_EQ(alone.rfind(R"({"text": ["[BOS] )", 0), 0u) << alone;
    mt::test::ApiServerProcess server(t5 + " --tensor-model-parallel-size 2", "",
                                      mt::test::mpiexec_prefix(2));
    ASSERT_GT(server.port(), 0);
    for (int i = 0; i < 2; ++i) {  // the followers stay in step across requests
        auto res = mt::test::put_api(server.port(), request);
        ASSERT_TRUE(res);
        EXPECT_EQ(res->status, 200) << res->body;
        EXPECT_TRUE(mt::test::json_near(res->body, alone, 1e-5));
    }
}

// A checkpoint megatron-train saved at TP2 in the torch format (mp_rank_00, mp_rank_01) and in
// torch_dist generates at TP2 what it generates in one process.
TEST_F(ParallelInference, TrainedTensorParallelCheckpointGeneratesAsOneProcess) {
    mt::test::TempDir dir;
    const std::string data = mt::test::tiny_gpt2_dataset(dir, mt::test::hello_documents(60));
    const std::string tokenizer = mt::test::tiny_gpt2_tokenizer_flags();
    for (const char* format : {"torch", "torch_dist"}) {
        const fs::path ckpt = dir.path() / format;
        auto train = run_command(
            mt::test::mpiexec_prefix(2) + shell_quote(tool_path("megatron-train")) +
            " --num-layers 2 --hidden-size 16 --num-attention-heads 2 --seq-length 32"
            " --max-position-embeddings 32 --micro-batch-size 2 --global-batch-size 4 --lr 1e-2"
            " --train-iters 10 --eval-iters 0 --split 100,0,0 --tensor-model-parallel-size 2"
            " --data-path " +
            shell_quote(data) + " --data-cache-path " + shell_quote(dir.path() / "cache") +
            tokenizer + " --ckpt-format " + format + " --save " + shell_quote(ckpt));
        ASSERT_EQ(train.exit_code, 0) << train.output;
        expect_same_generation(" --load " + shell_quote(ckpt) + tokenizer +
                               " --greedy --out-seq-length 8 --return-log-probs"
                               " --prompts 'Document 7 says' 'Document'");
    }
}

// Megatron's zero-shot tasks at TP2 and TP2 x PP2 on a Hugging Face GPT-2 (50257 vocabulary
// rows, padded for the split): the one-process results (which tests/tools/eval_test.cpp checks
// against Megatron's task code).
TEST_F(ParallelInference, TensorParallelEvaluationGivesTheOneProcessResults) {
    auto lambada = mt::test::test_data("lambada/lambada_test.jsonl");
    auto wiki = mt::test::test_data("wikitext/wiki.test.tokens");
    auto gpt2 = mt::test::test_data("gpt2/gpt2-vocab.json");
    if (!lambada || !wiki || !gpt2)
        GTEST_SKIP() << "MEGATRON_TEST_DATA not set: needs lambada/, wikitext/ and gpt2/";
    mt::test::TempDir dir;
    auto head = [&](const fs::path& from, const std::string& name, int lines) {
        mt::test::write_first_lines(from, lines, dir.path() / name);
        return dir.path() / name;
    };
    const std::string tool = shell_quote(tool_path("megatron-eval")) + " --load " +
                             shell_quote(mt::test::fixtures_dir() / "eval" / "model") +
                             " --tokenizer-type GPT2BPETokenizer --vocab-file " +
                             shell_quote(*gpt2) + " --merge-file " +
                             shell_quote(gpt2->parent_path() / "gpt2-merges.txt") +
                             " --seq-length 128 --micro-batch-size 3";
    for (const std::string task :
         {" --task LAMBADA --valid-data " + shell_quote(head(*lambada, "l.jsonl", 30)),
          " --task WIKITEXT103 --overlapping-eval 16 --valid-data " +
              shell_quote(head(*wiki, "wiki.tokens", 40))}) {
        auto one = run_command(tool + task);
        ASSERT_EQ(one.exit_code, 0) << one.output;
        const size_t at = one.output.find(" validation results on ");
        ASSERT_NE(at, std::string::npos) << one.output;
        const std::string block = one.output.substr(at, one.output.find('\n', at) - at);
        // TP2, and TP2 x PP2 (the vocabulary padded for the split on the last stage).
        auto two = run_command(mt::test::mpiexec_prefix(2) + tool + task +
                               " --tensor-model-parallel-size 2");
        ASSERT_EQ(two.exit_code, 0) << two.output;
        EXPECT_NE(two.output.find(block), std::string::npos) << block << "\n" << two.output;
        auto four = run_command(mt::test::mpiexec_prefix(4) + tool + task +
                                " --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2");
        ASSERT_EQ(four.exit_code, 0) << four.output;
        EXPECT_NE(four.output.find(block), std::string::npos) << block << "\n" << four.output;
    }
}

// Pipeline stages pass the hidden states on and the last stage's logits come back to rank 0:
// PP2, and TP2 x PP2 over four ranks, with the KV cache of each stage's layers.
TEST_F(ParallelInference, PipelineGenerationGivesTheOneProcessTokensAndLogProbs) {
    const std::string flags = llama_flags() +
                              " --greedy --out-seq-length 6 --return-log-probs"
                              " --prompts '5 17 99 3 64 12 7' '1 2 3'";
    expect_same_generation(flags, " --pipeline-model-parallel-size 2");
    expect_same_generation(flags,
                           " --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2", 4);
}

// A Mamba hybrid checkpoint ("M*-M") over two pipeline stages: each stage keeps its layers'
// recurrent and KV states.
TEST_F(ParallelInference, HybridPipelineGenerationGivesTheOneProcessTokensAndLogProbs) {
    mt::test::TempDir dir;
    auto r =
        run_command(shell_quote(tool_path("megatron-train")) +
                    " --model mamba --num-layers 4 --hidden-size 32 --num-attention-heads 4"
                    " --hybrid-override-pattern M*-M --mamba-state-dim 8 --mamba-head-dim 8"
                    " --mamba-num-groups 2 --position-embedding-type none --seq-length 32"
                    " --max-position-embeddings 32 --micro-batch-size 2 --mock-data"
                    " --tokenizer-type NullTokenizer --vocab-size 4096 --lr 1e-3 --train-iters 3"
                    " --eval-iters 0 --save " +
                    shell_quote(dir.path() / "ckpt") + " --save-interval 3");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_same_generation(" --model mamba --load " + shell_quote(dir.path() / "ckpt") +
                               " --tokenizer-type NullTokenizer --vocab-size 4096 --greedy"
                               " --out-seq-length 5 --return-log-probs --prompts '3 1 4 1 5'",
                           " --pipeline-model-parallel-size 2");
}

TEST_F(ParallelInference, LayoutsThatDoNotFitTheJobAreRefused) {
    const std::string tool = shell_quote(tool_path("megatron-generate"));
    auto r = run_command(mt::test::mpiexec_prefix(2) + tool + llama_flags() + " --prompts 1");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("must equal the job's 2 ranks"), std::string::npos) << r.output;
    r = run_command(mt::test::mpiexec_prefix(2) + tool + llama_flags() +
                    " --prompts 1 --pipeline-model-parallel-size 2 --tensor-model-parallel-size 2");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("must equal the job's 2 ranks"), std::string::npos) << r.output;
}

}  // namespace
