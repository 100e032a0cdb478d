// lm-evaluation-harness as a real client of megatron-generate's POST /v1/completions: its
// `local-completions` model (with the remote tokenizer it detects from /tokenizer_info) runs the
// committed tasks (tests/fixtures/lm_eval/tasks: LAMBADA from the shared file, a RACE sample as
// multiple choice, first commas of the shared corpus) against the server, and its `hf` model runs
// them on the same weights exported by megatron-convert --saver hf (lm-eval sends 4 requests at
// a time to the server, which batches them, and 4 prompts a request). Every sample's
// log-likelihood, its is-greedy flag and every task's metric must agree.
//
// Needs a python with lm_eval (pip install "lm_eval[api,hf]") named by MT_LM_EVAL_PYTHON, and
// MEGATRON_TEST_DATA; skipped, saying so, without them. lm_eval runs offline (HF_HUB_OFFLINE)
// with its caches in the test's temporary directory.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <utility>

#include "api_test_support.h"
#include "test_support.h"

namespace fs = std::filesystem;
using mt::test::run_command;
using mt::test::shell_quote;
using mt::test::tool_path;

namespace {

constexpr const char* kTasks = "megatron_cpp_lambada,megatron_cpp_race,megatron_cpp_first_comma";

// lm_eval's output folder: results_*.json and samples_<task>_*.jsonl.
struct LmEvalRun {
    fs::path dir;
    fs::path file(const std::string& prefix) const {
        for (const auto& entry : fs::recursive_directory_iterator(dir))
            if (entry.path().filename().string().rfind(prefix, 0) == 0) return entry.path();
        ADD_FAILURE() << "no " << prefix << "* under " << dir;
        return {};
    }
};

// Every task's metrics ("acc,none" -> value) from results_*.json.
std::map<std::string, double> metrics(const LmEvalRun& run) {
    std::map<std::string, double> out;
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.load(run.file("results_").string());
    for (auto [task, values] : simdjson::dom::object(doc["results"]))
        for (auto [name, value] : simdjson::dom::object(values))
            if (value.is_double() || value.is_int64())
                out[std::string(task) + " " + std::string(name)] = double(value);
    return out;
}

// Per sample of a task: each request's (log-likelihood, is greedy), in doc order.
std::vector<std::vector<std::pair<double, bool>>> sample_scores(const LmEvalRun& run,
                                                                const std::string& task) {
    std::vector<std::vector<std::pair<double, bool>>> out;
    simdjson::dom::parser parser;
    simdjson::padded_string text =
        simdjson::padded_string::load(run.file("samples_" + task + "_").string()).value();
    for (simdjson::dom::element line : parser.parse_many(text)) {
        std::vector<std::pair<double, bool>> requests;
        for (simdjson::dom::element resp : simdjson::dom::array(line["resps"])) {
            // written as strings: ["-16.51864242553711", "False"]
            simdjson::dom::array pair = simdjson::dom::array(resp).at(0);
            requests.emplace_back(std::stod(std::string(std::string_view(pair.at(0)))),
                                  std::string_view(pair.at(1)) == "True");
        }
        out.push_back(std::move(requests));
    }
    return out;
}

// Per sample of a generate_until task: the text lm_eval kept of the generation.
std::vector<std::string> sample_generations(const LmEvalRun& run, const std::string& task) {
    std::vector<std::string> out;
    simdjson::dom::parser parser;
    simdjson::padded_string text =
        simdjson::padded_string::load(run.file("samples_" + task + "_").string()).value();
    for (simdjson::dom::element line : parser.parse_many(text))
        out.emplace_back(std::string_view(simdjson::dom::array(line["resps"]).at(0).at(0)));
    return out;
}

// What both tests need, made once: the skip reason, or a small trained GPT-2-shaped checkpoint
// (ckpt/) and its Hugging Face export (hf/) in a temporary directory.
struct Prepared {
    std::string skip;
    std::string python;
    std::unique_ptr<mt::test::TempDir> dir;
};

Prepared prepare() {
    Prepared p;
    const char* python = std::getenv("MT_LM_EVAL_PYTHON");
    if (!python || !*python) {
        p.skip = "MT_LM_EVAL_PYTHON is not set (a python with lm_eval[api,hf] installed)";
        return p;
    }
    p.python = python;
    if (run_command(p.python + " -c 'import lm_eval, tenacity, accelerate'").exit_code) {
        p.skip = p.python + " cannot import lm_eval with its api and hf extras";
        return p;
    }
    const auto data = mt::test::test_data_dir();
    if (!data || !fs::exists(*data / "lambada") || !fs::exists(*data / "race")) {
        p.skip = "MEGATRON_TEST_DATA with lambada/ and race/ is not available";
        return p;
    }
    p.dir = std::make_unique<mt::test::TempDir>();
    const mt::test::TempDir& dir = *p.dir;
    const fs::path gpt2 = *data / "gpt2";
    const std::string tokenizer = " --tokenizer-type GPT2BPETokenizer --vocab-file " +
                                  shell_quote(gpt2 / "gpt2-vocab.json") + " --merge-file " +
                                  shell_quote(gpt2 / "gpt2-merges.txt");
    auto r =
        run_command(shell_quote(tool_path("megatron-preprocess")) + " --input " +
                    shell_quote(*data / "corpus" / "openwebtext-1000.jsonl") + " --output-prefix " +
                    shell_quote(dir / "owt") + tokenizer + " --append-eod");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    // A small GPT-2-shaped model, 1024 positions so that the RACE passages fit (trained on 128).
    r = run_command(
        shell_quote(tool_path("megatron-train")) +
        " --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128"
        " --max-position-embeddings 1024 --micro-batch-size 8 --global-batch-size 16"
        " --train-iters 60 --lr 3e-3 --min-lr 3e-4 --lr-decay-style cosine --lr-warmup-iters 6"
        " --eval-iters 0 --split 100,0,0"
        " --data-path " +
        shell_quote(dir / "owt_text_document") + " --data-cache-path " +
        shell_quote(dir / "cache") + tokenizer + " --save " + shell_quote(dir / "ckpt"));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    r = run_command(shell_quote(tool_path("megatron-convert")) +
                    " --model-type GPT --loader torch_dist --load-dir " +
                    shell_quote(dir / "ckpt") + " --saver hf --save-dir " +
                    shell_quote(dir / "hf") + " --vocab-file " +
                    shell_quote(gpt2 / "gpt2-vocab.json"));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    // lm_eval reads the tasks' data/ from its working directory.
    fs::create_directory_symlink(*data, dir / "data");
    return p;
}

const Prepared& prepared() {
    static const Prepared p = prepare();
    return p;
}

// lm_eval from the prepared directory, offline, on `tasks`.
std::string lm_eval_command(const Prepared& p, const std::string& tasks) {
    const mt::test::TempDir& dir = *p.dir;
    return "cd " + shell_quote(dir.path()) + " && HF_HOME=" + shell_quote(dir / "hf_home") +
           " HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false " + p.python +
           " -m lm_eval --tasks " + tasks + " --include_path " +
           shell_quote(mt::test::fixtures_dir() / "lm_eval" / "tasks") +
           " --limit 40 --log_samples";
}

}  // namespace

TEST(LmEvalClient, LocalCompletionsGivesTheHfBackendsNumbers) {
    const Prepared& p = prepared();
    if (!p.skip.empty()) GTEST_SKIP() << p.skip;
    const mt::test::TempDir& dir = *p.dir;
    const std::string lm_eval = lm_eval_command(p, kTasks) + " --batch_size 4";
    mt::test::RunResult r;
    LmEvalRun served{dir / "served"}, hf{dir / "hf_out"};
    {
        mt::test::ApiServerProcess server("--load " + shell_quote(dir / "ckpt"));
        ASSERT_GT(server.port(), 0) << "megatron-generate did not start serving";
        r = run_command(lm_eval +
                        " --model local-completions --model_args base_url=http://127.0.0.1:" +
                        std::to_string(server.port()) +
                        "/v1/completions,max_length=1024,num_concurrent=4 --output_path " +
                        shell_quote(served.dir) + " 2>&1");
        ASSERT_EQ(r.exit_code, 0) << r.output;
        EXPECT_NE(r.output.find("Using remote tokenizer"), std::string::npos) << r.output;
    }
    r = run_command(lm_eval + " --model hf --model_args pretrained=" + shell_quote(dir / "hf") +
                    ",dtype=float32 --device cpu --output_path " + shell_quote(hf.dir) + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;

    // The accuracies are equal; the perplexity agrees to float precision.
    const auto ours = metrics(served), theirs = metrics(hf);
    ASSERT_FALSE(ours.empty());
    for (const auto& [name, value] : theirs) {
        if (name.find("stderr") != std::string::npos) continue;
        ASSERT_TRUE(ours.count(name)) << name;
        if (name.find("perplexity") != std::string::npos)
            EXPECT_NEAR(ours.at(name), value, 1e-4 * value) << name;
        else
            EXPECT_EQ(ours.at(name), value) << name;
    }
    // Every request of every sample: the log-likelihood (fp32 both ways, summed over up to a
    // few tokens) and whether the continuation is the greedy one.
    int greedy = 0;
    for (const std::string task :
         {"megatron_cpp_lambada", "megatron_cpp_race", "megatron_cpp_first_comma"}) {
        const auto a = sample_scores(served, task), b = sample_scores(hf, task);
        ASSERT_EQ(a.size(), 40u) << task;
        ASSERT_EQ(a.size(), b.size()) << task;
        for (size_t s = 0; s < a.size(); ++s) {
            ASSERT_EQ(a[s].size(), b[s].size()) << task << " sample " << s;
            for (size_t q = 0; q < a[s].size(); ++q) {
                EXPECT_NEAR(a[s][q].first, b[s][q].first, 2e-4 * (1 + std::abs(b[s][q].first)))
                    << task << " sample " << s << " request " << q;
                EXPECT_EQ(a[s][q].second, b[s][q].second)
                    << task << " sample " << s << " request " << q;
                greedy += b[s][q].second;
            }
        }
    }
    EXPECT_GT(greedy, 0) << "no greedy continuation anywhere: the is-greedy check proved nothing";
}

// lm_eval's local-chat-completions against POST /v1/chat/completions (messages rendered by
// --chat-template) and its hf model with --apply_chat_template over the export holding the same
// template: every greedy generation of a generate_until task is the same text.
TEST(LmEvalClient, LocalChatCompletionsGivesTheHfBackendsGenerations) {
    const Prepared& p = prepared();
    if (!p.skip.empty()) GTEST_SKIP() << p.skip;
    const mt::test::TempDir& dir = *p.dir;
    // The model knows no chat format: the user's message is the prompt.
    const std::string chat_template = "{% for m in messages %}{{ m.content }}{% endfor %}";
    std::ofstream(dir / "hf" / "chat_template.jinja") << chat_template;
    const std::string task = "megatron_cpp_lambada_generate";
    const std::string lm_eval = lm_eval_command(p, task) + " --apply_chat_template";
    LmEvalRun served{dir / "chat_served"}, hf{dir / "chat_hf"};
    mt::test::RunResult r;
    {
        mt::test::ApiServerProcess server("--load " + shell_quote(dir / "ckpt") +
                                          " --chat-template " + shell_quote(chat_template));
        ASSERT_GT(server.port(), 0) << "megatron-generate did not start serving";
        r = run_command(
            lm_eval + " --model local-chat-completions --model_args base_url=http://127.0.0.1:" +
            std::to_string(server.port()) + "/v1/chat/completions,num_concurrent=4 --output_path " +
            shell_quote(served.dir) + " 2>&1");
        ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    r = run_command(lm_eval + " --model hf --model_args pretrained=" + shell_quote(dir / "hf") +
                    ",dtype=float32 --device cpu --batch_size 4 --output_path " +
                    shell_quote(hf.dir) + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto ours = sample_generations(served, task), theirs = sample_generations(hf, task);
    ASSERT_EQ(ours.size(), 40u);
    ASSERT_EQ(ours.size(), theirs.size());
    size_t nonempty = 0;
    for (size_t i = 0; i < ours.size(); ++i) {
        EXPECT_EQ(ours[i], theirs[i]) << "sample " << i;
        nonempty += !theirs[i].empty();
    }
    // The tiny model often ends a passage's continuation at once (its end-of-document token).
    EXPECT_GE(nonempty, 10u) << "too few generations hold text for the comparison to say much";
    EXPECT_EQ(metrics(served), metrics(hf));
}
