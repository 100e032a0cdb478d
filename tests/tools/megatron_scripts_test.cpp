// Megatron-LM's own GPT, BERT, Mamba and T5 launch configurations of core_v0.13 and core_v0.19
// (their functional tests' model_config.yaml and example scripts) and Megatron-DeepSpeed's
// examples_deepspeed scripts (tests/fixtures/megatron_scripts/configs.tsv) through our tools at
// tiny sizes: each line runs, or is refused naming the capability we lack, as its expect column
// says.
//
// One test per line. ctest runs a sample (every example script, every 4th functional test of
// each version, and core_v0.13's functional tests that run); MT_MEGATRON_SCRIPTS_ALL=1 runs
// every line. Lines of 2-8 ranks
// run under mpiexec (skipped, saying so, when built without MPI); lines needing more ranks and
// lines naming a tool bug are skipped with the reason. configs.tsv and docs/megatron_scripts.md
// are written by tests/fixtures/megatron_scripts/extract_configs.py (see its header).
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "api_test_support.h"
#include "mpiexec_launch.h"
#include "test_support.h"

namespace fs = std::filesystem;
using mt::test::run_command;
using mt::test::RunResult;
using mt::test::shell_quote;
using mt::test::TempDir;
using mt::test::tool_path;

namespace {

// The most ranks a line runs on (extract_configs.py's MAX_RANKS); ctest's sample takes lines of
// up to 4.
constexpr int kMaxRanks = 8;

struct Config {
    std::string name, tool, mode, expect, flags, setup, note;
    int ranks = 1;
    bool functional = false;  // a functional test (not an example script)
    std::string test_name;    // name as a gtest parameter
};

// gtest prints a failing parameter with this (not as bytes).
void PrintTo(const Config& c, std::ostream* os) {
    *os << c.name;
}

std::vector<std::string> split_tabs(const std::string& line) {
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream in(line);
    while (std::getline(in, cell, '\t')) cells.push_back(cell);
    if (!line.empty() && line.back() == '\t') cells.emplace_back();
    return cells;
}

std::string identifier(const std::string& name) {
    std::string out;
    for (char c : name) {
        const bool word = std::isalnum(static_cast<unsigned char>(c));
        if (word)
            out += c;
        else if (!out.empty() && out.back() != '_')
            out += '_';
    }
    while (!out.empty() && out.back() == '_') out.pop_back();
    return out;
}

std::vector<Config> all_configs() {
    std::vector<Config> out;
    std::ifstream in(mt::test::fixtures_dir() / "megatron_scripts" / "configs.tsv");
    std::string line;
    std::vector<std::string> header;
    std::map<std::string, int> seen;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        auto cells = split_tabs(line);
        if (header.empty()) {
            header = cells;
            continue;
        }
        std::map<std::string, std::string> row;
        for (size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
        Config c;
        c.name = row["name"];
        c.tool = row["tool"];
        c.mode = row["mode"];
        c.expect = row["expect"];
        c.flags = row["flags"];
        c.setup = row["setup"];
        c.note = row["note"];
        c.ranks = std::atoi(row["ranks"].c_str());
        c.functional =
            c.name.find("/examples/") == std::string::npos && c.name.rfind("deepspeed/", 0) != 0;
        c.test_name = identifier(c.name);
        if (int n = seen[c.test_name]++; n > 0) c.test_name += "_" + std::to_string(n);
        out.push_back(c);
    }
    return out;
}

std::vector<Config> selected_configs() {
    auto all = all_configs();
    const char* every = std::getenv("MT_MEGATRON_SCRIPTS_ALL");
    if (every && std::string(every) == "1") return all;
    // Every example script, every 4th functional test of each version, and core_v0.13's that
    // run (core_v0.19's that run are sampled with the rest, to keep ctest's time); none of more
    // than 4 ranks, which the full runs start.
    std::vector<Config> out;
    std::map<std::string, int> functional;
    for (const auto& c : all) {
        const std::string version = c.name.substr(0, c.name.find('/'));
        const bool sampled = !c.functional || functional[version]++ % 4 == 0 ||
                             (c.expect == "runs" && version == "core_v0.13");
        if (sampled && (c.ranks <= 4 || c.expect.rfind("needs ranks", 0) == 0 ||
                        c.expect.rfind("refused", 0) == 0))
            out.push_back(c);
    }
    return out;
}

// The inputs every line shares, made once per process: the corpus in GPT-2 ids ({DATA}) and
// in the llama3ish Hugging Face tokenizer's ids ({HF_DATA}, for the checkpoints that the
// Hugging Face generate lines load). 3,000 documents: Megatron's 949,50,1 split leaves the
// test split 3 of them.
struct SharedData {
    TempDir dir;
    std::string gpt2, hf;
    SharedData() {
        std::string jsonl;
        for (int d = 0; d < 3000; ++d)
            jsonl += "{\"text\": \"Document " + std::to_string(d) + " says " +
                     std::to_string(d * 7 % 13) + " and then " + std::to_string(d % 5) +
                     " again, twice over, and once more for the " + std::to_string(d % 3) +
                     " readers.\"}\n";
        gpt2 = mt::test::tiny_gpt2_dataset(dir, jsonl);
        RunResult r = run_command(
            shell_quote(tool_path("megatron-preprocess")) + " --input " +
            shell_quote(dir / "corpus.jsonl") + " --output-prefix " + shell_quote(dir / "hf") +
            " --tokenizer-type HuggingFaceTokenizer --tokenizer-model " +
            shell_quote(mt::test::fixtures_dir() / "hf_tokenizer" / "llama3ish") + " --append-eod");
        EXPECT_EQ(r.exit_code, 0) << r.output;
        hf = (dir / "hf_text_document").string();
    }
};

const SharedData& shared_data() {
    static SharedData data;
    return data;
}

// {BERT_VOCAB}: the shared data's bert-large-cased-vocab.txt (empty without MEGATRON_TEST_DATA).
std::string bert_vocab() {
    const auto data = mt::test::test_data_dir();
    return data ? (*data / "bert" / "bert-large-cased-vocab.txt").string() : "";
}

// {BERT_DATA}, for the T5 lines: 12,000 sentence-split documents in bert-large-cased ids (the
// extract script's BERT_DOCUMENT), enough that Megatron's --split 99982,9,9 leaves the validation
// and test splits a document each. Made once per process, on first use.
struct BertData {
    TempDir dir;
    std::string prefix;
    BertData() {
        std::string jsonl;
        for (int d = 0; d < 12000; ++d)
            jsonl += "{\"text\": \"Document " + std::to_string(d) + " opens the story. It says " +
                     std::to_string(d * 7 % 13) + " and then " + std::to_string(d % 5) +
                     " again, twice over. Once more it speaks to the " + std::to_string(d % 3) +
                     " readers who stayed.\"}\n";
        mt::test::write_file(dir / "sentences.jsonl", jsonl);
        RunResult r = run_command(shell_quote(tool_path("megatron-preprocess")) + " --input " +
                                  shell_quote(dir / "sentences.jsonl") + " --output-prefix " +
                                  shell_quote(dir / "bert") +
                                  " --tokenizer-type BertWordPieceCase --vocab-file " +
                                  shell_quote(bert_vocab()) + " --split-sentences");
        EXPECT_EQ(r.exit_code, 0) << r.output;
        prefix = (dir / "bert_text_sentence").string();
    }
};

const std::string& bert_data() {
    static BertData data;
    return data.prefix;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
        s.replace(at, from.size(), to);
    return s;
}

// A file of the shared data (empty without MEGATRON_TEST_DATA).
std::string shared_file(const fs::path& relative) {
    const auto data = mt::test::test_data_dir();
    return data ? (*data / relative).string() : "";
}

// {SP_MODEL}: the shared data's SentencePiece model; {TIKTOKEN_MODEL}: its TikToken vocabulary
// in the JSON format Megatron's TikTokenizer reads.
std::string sentencepiece_model() {
    return shared_file(fs::path("tokenizers") / "sentencepiece" / "mistral-v1.model");
}
std::string tiktoken_model() {
    return shared_file(fs::path("tokenizers") / "tiktoken" / "tekken-240718.tiktoken.json");
}

class MegatronScripts : public ::testing::TestWithParam<Config> {
  protected:
    std::string fill(const std::string& flags) const {
        const fs::path fixtures = mt::test::fixtures_dir();
        const std::map<std::string, std::string> subs = {
            {"{DATA}", shared_data().gpt2},
            {"{HF_DATA}", shared_data().hf},
            {"{VOCAB}", (fixtures / "gpt2-tiny" / "vocab.json").string()},
            {"{MERGES}", (fixtures / "gpt2-tiny" / "merges.txt").string()},
            {"{HF_TOKENIZER}", (fixtures / "hf_tokenizer" / "llama3ish").string()},
            {"{CKPT}", (work_ / "ckpt").string()},
            {"{CACHE}", (work_ / "cache").string()},
            {"{TB}", (work_ / "tb").string()},
            {"{TMP}", work_.path().string()},
            {"{TOKENIZER_MODEL}", (work_ / "tokenizer.model").string()},
            {"{SP_MODEL}", sentencepiece_model()},
            {"{TIKTOKEN_MODEL}", tiktoken_model()},
            {"{BERT_VOCAB}", bert_vocab()},
            {"{DS_CONFIGS}", (fixtures / "megatron_scripts" / "ds_configs").string()},
        };
        std::string out = flags;
        for (const auto& [key, value] : subs) out = replace_all(out, key, value);
        if (out.find("{BERT_DATA}") != std::string::npos)
            out = replace_all(out, "{BERT_DATA}", bert_data());
        return out;
    }
    // The tool's command line: under mpiexec for 2-4 ranks; a minute at most, so that a line
    // that should stop but serves or hangs fails instead of blocking the suite.
    std::string command(const std::string& tool, const std::string& flags) const {
        const Config& c = GetParam();
        std::string launcher;
        // (A line of more ranks is refused before it starts any: one process shows it.)
        if (c.ranks > 1 && c.ranks <= kMaxRanks) launcher = mt::test::mpiexec_prefix(c.ranks);
        return std::string(c.ranks > 4 ? "timeout 300 " : "timeout 120 ") + launcher +
               shell_quote(tool_path("megatron-" + tool)) + " " + fill(flags);
    }

    // The output folder ({TB}), which Megatron's harness makes before a run, and --prompt-file's
    // JSON lines (extract_configs.py's PROMPT_FILE_TEXTS).
    void SetUp() override {
        fs::create_directories(work_ / "tb");
        std::ofstream(work_ / "prompts.jsonl") << "{\"text\": \"The quick brown fox\"}\n"
                                                  "{\"text\": \"Once upon a time\"}\n"
                                                  "{\"text\": \"In the beginning\"}\n";
    }

    TempDir work_;
};

// "iteration N/ M |" lines of a megatron-train run.
std::vector<int> iterations(const std::string& output) {
    static const std::regex line(R"(iteration +(\d+)/ +\d+ \|)");
    std::vector<int> out;
    for (auto it = std::sregex_iterator(output.begin(), output.end(), line);
         it != std::sregex_iterator(); ++it)
        out.push_back(std::stoi((*it)[1]));
    return out;
}

void expect_refused(const RunResult& r, const std::string& capability) {
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("not supported yet"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(capability), std::string::npos)
        << "expected the refusal to name '" << capability << "'\n"
        << r.output;
}

TEST_P(MegatronScripts, OutcomeIsTheExpectedOne) {
    const Config& c = GetParam();
    SCOPED_TRACE(c.name + (c.note.empty() ? "" : " (" + c.note + ")"));
    if (c.expect.rfind("bug: ", 0) == 0) {
        const size_t should = c.expect.rfind("; should: ");
        GTEST_SKIP() << "known tool bug, see tests/fixtures/megatron_scripts/extract_configs.py "
                        "BUGS: "
                     << c.expect.substr(5, should - 5)
                     << " (should: " << c.expect.substr(should + 10) << ")";
    }
    if (c.expect.rfind("needs ranks: ", 0) == 0)
        GTEST_SKIP() << c.name << " " << c.expect << "; the tests run at most " << kMaxRanks
                     << " ranks";
    if (c.ranks > 1 && c.ranks <= kMaxRanks && !mt::test::mpiexec_available())
        GTEST_SKIP() << c.name << " needs " << c.ranks << " ranks; built without MPI";
    if ((c.flags + c.setup).find("{SP_MODEL}") != std::string::npos &&
        sentencepiece_model().empty())
        GTEST_SKIP() << c.name << " needs a SentencePiece model: set MEGATRON_TEST_DATA";
    if ((c.flags + c.setup).find("{TIKTOKEN_MODEL}") != std::string::npos &&
        tiktoken_model().empty())
        GTEST_SKIP() << c.name << " needs a TikToken vocabulary: set MEGATRON_TEST_DATA";
    if ((c.flags + c.setup).find("{BERT_VOCAB}") != std::string::npos && bert_vocab().empty())
        GTEST_SKIP() << c.name << " needs the BERT vocabulary: set MEGATRON_TEST_DATA";
    ASSERT_FALSE(c.expect.empty()) << "no expect column: run extract_configs.py --probe";
    if (c.expect == "setup failed") {
        // The line itself cannot run here; that its checkpoint still cannot be written is
        // checked, so that a tool that learns to write it asks for a re-probe.
        ASSERT_FALSE(c.setup.empty()) << "'setup failed' on a line without a setup";
        const RunResult s = run_command(command("train", c.setup));
        ASSERT_NE(s.exit_code, 0) << "the setup now writes the checkpoint: re-probe the line\n"
                                  << s.output;
        GTEST_SKIP() << c.name << ": the checkpoint it loads cannot be written here (" << c.note
                     << ")";
    }
    ASSERT_FALSE(shared_data().gpt2.empty());

    const bool runs = c.expect == "runs";
    if (c.expect.rfind("refused: ", 0) == 0 || c.expect.rfind("fails: ", 0) == 0) {
        // Refusals come before any data or checkpoint is read: no setup. A generate line that
        // fails as Megatron does may fail on what it loads: its checkpoint first.
        if (c.expect[0] == 'f' && c.tool == "generate" && !c.setup.empty()) {
            const RunResult s = run_command(command("train", c.setup));
            ASSERT_EQ(s.exit_code, 0) << "writing the checkpoint it loads\n" << s.output;
        }
        const RunResult r = run_command(command(c.tool, c.flags));
        if (c.expect[0] == 'r') {
            expect_refused(r, c.expect.substr(9));
        } else {
            EXPECT_NE(r.exit_code, 0) << r.output;
            EXPECT_NE(r.output.find(c.expect.substr(7)), std::string::npos) << r.output;
        }
        return;
    }
    ASSERT_TRUE(runs) << "unknown expect '" << c.expect << "'";

    if (c.tool == "train") {
        RunResult r = run_command(command("train", c.flags));
        ASSERT_EQ(r.exit_code, 0) << r.output;
        auto its = iterations(r.output);
        ASSERT_FALSE(its.empty()) << r.output;
        EXPECT_EQ(its.back(), 2) << r.output;
        if (c.mode == "ckpt-resume") {
            // Megatron's run_ci_test.sh: drop the last checkpoint, resume from the middle one.
            fs::remove_all(work_ / "ckpt" / "iter_0000002");
            mt::test::write_file(work_ / "ckpt" / "latest_checkpointed_iteration.txt", "1");
            r = run_command(command("train", c.flags));
            ASSERT_EQ(r.exit_code, 0) << r.output;
            EXPECT_NE(r.output.find("loading checkpoint"), std::string::npos) << r.output;
            EXPECT_EQ(iterations(r.output), std::vector<int>{2}) << r.output;
        }
        return;
    }

    ASSERT_EQ(c.tool, "generate");
    if (!c.setup.empty()) {
        const RunResult s = run_command(command("train", c.setup));
        ASSERT_EQ(s.exit_code, 0) << "writing the checkpoint it loads\n" << s.output;
    }
    if (c.mode == "prompts") {
        const RunResult r = run_command(command("generate", c.flags));
        EXPECT_EQ(r.exit_code, 0) << r.output;
        return;
    }
    // The REST server (run_text_generation_server.py): up (rank 0 serving under mpiexec),
    // answers PUT /api, stops on SIGTERM.
    mt::test::ApiServerProcess server(
        fill(c.flags), "", c.ranks > 1 ? mt::test::mpiexec_prefix(c.ranks) : std::string());
    ASSERT_GT(server.port(), 0) << "the server did not start (its log is above)";
    const auto res = mt::test::put_api(
        server.port(), R"({"prompts": ["Document 7 says"], "tokens_to_generate": 4, "top_k": 1})");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;
    // The text is the prompt and its continuation (after the BOS that Hugging Face tokenizers
    // add, as in Megatron).
    EXPECT_EQ(res->body.rfind(R"({"text": [")", 0), 0u) << res->body;
    EXPECT_NE(res->body.find("Document 7 says"), std::string::npos) << res->body;
    const int status = server.stop();
    // (Open MPI's mpiexec exits 1 when it forwards a SIGTERM to its ranks: one process shows
    // the tool's own exit.)
    if (c.ranks == 1) EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

INSTANTIATE_TEST_SUITE_P(Megatron, MegatronScripts, ::testing::ValuesIn(selected_configs()),
                         [](const ::testing::TestParamInfo<Config>& info) {
                             return info.param.test_name;
                         });

// Every line has an outcome, and the doc's table is the one the extract script writes.
TEST(MegatronScriptsTable, EveryLineHasAnExpectAndTheDocListsIt) {
    const auto all = all_configs();
    ASSERT_GT(all.size(), 100u);
    const std::string doc = mt::test::read_file(mt::test::fixtures_dir() / ".." / ".." / "docs" /
                                                "megatron_scripts.md");
    for (const auto& c : all) {
        EXPECT_FALSE(c.expect.empty()) << c.name;
        EXPECT_NE(doc.find("| `" + c.name + "` | " + c.tool + " |"), std::string::npos)
            << c.name << " is not in docs/megatron_scripts.md: rerun extract_configs.py";
    }
}

}  // namespace
