// megatron-eval: its pieces against Megatron's task code (detokenizer rules, _LMDataset
// windows, LAMBADA sequences, scoring, the printed result block), and the tool itself on the
// tiny GPT-2 of tests/fixtures/eval against the numbers Megatron's zero-shot code computes
// with it (tests/fixtures/eval/make_fixtures.py); also its errors, and a megatron-train
// checkpoint as --load.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <string>
#include <vector>

#include "detokenizer.h"
#include "lambada_examples.h"
#include "lm_windows.h"
#include "mt/io/crc32.h"
#include "mt/model.h"
#include "mt/registry.h"
#include "python_text.h"
#include "results.h"
#include "scoring.h"
#include "task_data.h"
#include "test_support.h"

namespace fs = std::filesystem;
using mt::test::run_command;
using mt::test::TempDir;

namespace {

const fs::path kFixtures = mt::test::fixtures_dir() / "eval";

simdjson::dom::element expected() {
    static simdjson::dom::parser parser;
    static simdjson::dom::element doc = parser.load((kFixtures / "expected.json").string());
    return doc;
}

std::vector<int64_t> ints(simdjson::dom::array a) {
    std::vector<int64_t> out;
    for (auto v : a) out.push_back(int64_t(v));
    return out;
}

std::string q(const fs::path& p) {
    return mt::test::shell_quote(p);
}

// ---------------------------------------------------------------- pieces

TEST(PythonText, StripAndSplitTreatUnicodeSpacesAsPythonDoes) {
    const std::string text = "\u3000\x1c a\u00a0b\u2028c\u200bd \t\u0085";
    EXPECT_EQ(mt::eval::python_strip(text), "a\u00a0b\u2028c\u200bd");
    const auto words = mt::eval::python_split(text);
    ASSERT_EQ(words.size(), 3u);
    EXPECT_EQ(words[0], "a");
    EXPECT_EQ(words[1], "b");
    EXPECT_EQ(words[2], "c\u200bd");  // U+200B is not whitespace for Python
    EXPECT_TRUE(mt::eval::python_split(" \n ").empty());
}

TEST(Detokenizer, MatchesMegatronOnHandmadeCases) {
    for (auto c : expected()["detokenizer_cases"].get_array()) {
        const std::string text{std::string_view(c["text"])};
        EXPECT_EQ(mt::eval::wikitext_detokenize(text), std::string_view(c["wikitext"])) << text;
        EXPECT_EQ(mt::eval::ptb_detokenize(text), std::string_view(c["ptb"])) << text;
    }
}

TEST(Detokenizer, IsChosenByThePathAsMegatronDoes) {
    const std::string text = "a ( b ) N x";
    EXPECT_EQ(mt::eval::detokenizer_for_path("/d/ptb.wiki.txt")(text), "a ( b )1 x");
    EXPECT_EQ(mt::eval::detokenizer_for_path("/d/wiki.lambada")(text), "a (b) 1 x");
    EXPECT_EQ(mt::eval::detokenizer_for_path("lambada.jsonl")(text), text);
    const std::string error =
        mt::test::error_of([] { mt::eval::detokenizer_for_path("/d/corpus.txt"); });
    EXPECT_NE(error.find("/d/corpus.txt"), std::string::npos) << error;
    EXPECT_NE(error.find("'wiki'"), std::string::npos) << error;
}

TEST(Detokenizer, MatchesMegatronOnTheWholeWikiTextFiles) {
    for (auto [name, want] : expected()["detokenized"].get_object()) {
        auto path = mt::test::test_data("wikitext/" + std::string(name));
        if (!path) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: needs wikitext/" << name;
        const std::string text = mt::eval::wikitext_detokenize(mt::eval::read_utf8_file(*path));
        EXPECT_EQ(int64_t(text.size()), int64_t(want["bytes"])) << name;
        EXPECT_EQ(mt::io::crc32_update(0, text.data(), text.size()), uint64_t(want["crc32"]))
            << name;
    }
}

TEST(LmWindows, MatchMegatronsLMDataset) {
    for (auto c : expected()["windows"].get_array()) {
        const int64_t n = int64_t(c["num_tokens"]), L = int64_t(c["seq_length"]);
        std::vector<int32_t> tokens(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) tokens[size_t(i)] = int32_t(100 + i);
        mt::eval::LmWindows windows(tokens, L, 7, int64_t(c["overlapping_eval"]));
        auto want_tokens = c["tokens"].get_array();
        auto want_masks = c["pad_mask"].get_array();
        ASSERT_EQ(windows.size(), int64_t(want_tokens.size()));
        for (int64_t w = 0; w < windows.size(); ++w) {
            const auto got = windows.window(w);
            EXPECT_EQ(std::vector<int64_t>(got.tokens.begin(), got.tokens.end()),
                      ints(want_tokens.at(size_t(w))))
                << "n " << n << " window " << w;
            EXPECT_EQ(std::vector<int64_t>(got.mask.begin(), got.mask.end()),
                      ints(want_masks.at(size_t(w))))
                << "n " << n << " window " << w;
        }
    }
}

TEST(LambadaSequence, ScoresTheLabelPositionsAndPadsWithEod) {
    const auto s = mt::eval::lambada_sequence({{1, 2, 3}, {4, 5}}, 6, 9);
    EXPECT_EQ(s.tokens, (std::vector<int32_t>{1, 2, 3, 4, 5, 9, 9}));
    EXPECT_EQ(s.mask, (std::vector<uint8_t>{0, 0, 1, 1, 0, 0}));
    // No context: Megatron's pad_mask[1:] drops the first label token.
    EXPECT_EQ(mt::eval::lambada_sequence({{}, {4, 5}}, 2, 9).mask, (std::vector<uint8_t>{1, 0}));
    const std::string error = mt::test::error_of([] {
        mt::eval::lambada_sequence({{1, 2, 3}, {4}}, 2, 9);
    });
    EXPECT_NE(error.find("4 tokens, more than --seq-length + 1 = 3"), std::string::npos) << error;
}

TEST(LambadaExample, StrictTakesTheWholeLastWord) {
    mt::TokenizerOptions o;
    o.vocab_file = (mt::test::fixtures_dir() / "gpt2-tiny" / "vocab.json").string();
    o.merge_file = (mt::test::fixtures_dir() / "gpt2-tiny" / "merges.txt").string();
    auto tok = mt::Registry::global().create_tokenizer("GPT2BPETokenizer", o);
    const std::string text = "He went home.\u00a0Then he slept soundly \n";
    const auto plain = mt::eval::lambada_example(text, *tok, false);
    auto all = tok->encode(text);
    EXPECT_EQ(plain.label, std::vector<int32_t>(1, all.back()));
    all.pop_back();
    EXPECT_EQ(plain.context, all);
    const auto strict = mt::eval::lambada_example(text, *tok, true);
    EXPECT_EQ(strict.context, tok->encode("He went home.\u00a0Then he slept"));
    EXPECT_EQ(strict.label, tok->encode(" soundly"));
}

// A stand-in model whose logits at position t depend on every token up to t and on t, so that
// scoring a cut batch must give what the full sequences give.
class CausalToyModel : public mt::Model {
  public:
    static constexpr int64_t kVocab = 5;
    std::vector<mt::nn::Parameter*> parameters() override { return {}; }
    void initialize(uint64_t) override {}
    mt::Losses forward(const mt::Batch&, mt::nn::DropoutContext&,
                       std::unique_ptr<mt::Activations>*) override {
        return {};
    }
    void backward(const std::vector<mt::Tensor>&, const mt::Activations&) override {}
    double training_flops(int64_t) const override { return 0; }
    mt::Tensor logits(const mt::Tensor& tokens, mt::nn::InferenceState*, int64_t keep) override {
        const int64_t B = tokens.size(0), T = tokens.size(1), n = keep ? keep : T;
        mt::Tensor out = mt::Tensor::empty({B, n, kVocab}, mt::DType::f32);
        for (int64_t b = 0; b < B; ++b) {
            double prefix = 0;
            for (int64_t t = 0; t < T; ++t) {
                prefix = prefix * 0.7 + double(tokens.data<int64_t>()[b * T + t]);
                if (t < T - n) continue;
                for (int64_t v = 0; v < kVocab; ++v)
                    out.data<float>()[(b * n + t - (T - n)) * kVocab + v] =
                        float(std::sin(prefix * double(v + 1) + 0.3 * double(t)));
            }
        }
        ++calls;
        return out;
    }
    int calls = 0;
};

TEST(Scoring, CutAndGroupedBatchesScoreAsTheFullSequences) {
    std::vector<int32_t> tokens(3000);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t((i * 7 + i / 5) % 5);
    mt::eval::LmWindows windows(std::span<const int32_t>(tokens).first(1990), 700, 4, 300);
    std::vector<mt::eval::ScoredSequence> batch;
    for (int64_t w = 0; w < windows.size(); ++w) batch.push_back(windows.window(w));
    CausalToyModel model;
    for (auto metric : {mt::eval::Metric::loss, mt::eval::Metric::accuracy}) {
        double full = 0;
        for (const auto& s : batch) {
            mt::Tensor t = mt::Tensor::empty({1, 700}, mt::DType::i64);
            std::copy_n(s.tokens.begin(), 700, t.data<int64_t>());
            std::vector<int64_t> labels(s.tokens.begin() + 1, s.tokens.end());
            full += mt::eval::score_logits(model.logits(t, nullptr, 0), labels, s.mask, metric);
        }
        model.calls = 0;
        EXPECT_NEAR(mt::eval::score_batch(model, batch, metric), full, 1e-9 * std::abs(full));
        // Windows 0 and 1 (700 positions each), then the other five (their last 300).
        EXPECT_EQ(model.calls, 2);
    }
}

TEST(Scoring, AccuracyNeedsEveryScoredPositionAndTakesTheFirstMaximum) {
    mt::Tensor logits = mt::Tensor::zeros({2, 2, 3}, mt::DType::f32);
    float* p = logits.data<float>();
    p[0 * 3 + 2] = 1;  // row 0 position 0: argmax 2
    p[1 * 3 + 1] = 1;  // row 0 position 1: tie of 1 and 2 -> 1
    p[1 * 3 + 2] = 1;
    p[2 * 3 + 0] = 1;  // row 1 position 0: argmax 0; position 1: all equal -> 0
    const std::vector<uint8_t> mask = {1, 1, 0, 1};
    EXPECT_EQ(mt::eval::score_logits(logits, std::vector<int64_t>{2, 1, 1, 0}, mask,
                                     mt::eval::Metric::accuracy),
              2.0);
    EXPECT_EQ(mt::eval::score_logits(logits, std::vector<int64_t>{2, 2, 0, 1}, mask,
                                     mt::eval::Metric::accuracy),
              0.0);
    // Loss: the masked-in rows only, log-sum-exp minus the label's logit.
    const double l0 = std::log(2 + std::exp(1.0)) - 1, l1 = std::log(1 + 2 * std::exp(1.0)) - 1;
    const double l3 = std::log(3.0);
    EXPECT_NEAR(mt::eval::score_logits(logits, std::vector<int64_t>{2, 1, 1, 0}, mask,
                                       mt::eval::Metric::loss),
                l0 + l1 + l3, 1e-6);
}

std::string dashed(const std::string& line) {
    const std::string dashes(line.size() + 1, '-');
    return dashes + "\n" + line + "\n" + dashes + "\n";
}

TEST(Results, PrintAsMegatronAndWriteJson) {
    EXPECT_EQ(mt::eval::result_block("WIKITEXT103", mt::eval::perplexity_result(30.0, 11, 13)),
              dashed(" validation results on WIKITEXT103 | avg loss: 2.5000E+00 | ppl: "
                     "1.2182E+01 | adjusted ppl: 2.0086E+01 | token ratio: 1.2 |"));
    EXPECT_DOUBLE_EQ(mt::eval::perplexity_result(300.0, 11, 3).ppl, std::exp(20.0));
    const auto a = mt::eval::accuracy_result(3, 8);
    EXPECT_EQ(mt::eval::result_block("LAMBADA", a),
              dashed(" validation results on LAMBADA | number correct: 3.0000E+00 | total "
                     "examples: 8.0000E+00 | avg accuracy: 3.7500E-01"));
    mt::eval::EvalSettings s{"LAMBADA", "d/l\"x.jsonl", "ckpt", 64, 32, true};
    EXPECT_EQ(mt::eval::result_json(s, a),
              "{\"task\": \"LAMBADA\", \"valid_data\": \"d/l\\\"x.jsonl\", \"load\": \"ckpt\", "
              "\"seq_length\": 64, \"strict_lambada\": true, \"number_correct\": 3, "
              "\"total_examples\": 8, \"avg_accuracy\": 0.375}\n");
    EXPECT_NE(mt::test::error_of([] { mt::eval::perplexity_result(1.0, 1, 5); }).find("word"),
              std::string::npos);
}

TEST(TaskData, LambadaErrorsNameTheLine) {
    TempDir dir;
    mt::test::write_file(dir / "l.jsonl", "{\"text\": \"a b\"}\n{\"text\": \"c\"\n");
    std::string error = mt::test::error_of([&] { mt::eval::read_lambada_texts(dir / "l.jsonl"); });
    EXPECT_NE(error.find("l.jsonl:2: not valid JSON"), std::string::npos) << error;
    mt::test::write_file(dir / "l.jsonl", "{\"text\": \"a b\"}\n{\"txt\": \"c\"}");
    error = mt::test::error_of([&] { mt::eval::read_lambada_texts(dir / "l.jsonl"); });
    EXPECT_NE(error.find("l.jsonl:2: no key 'text'"), std::string::npos) << error;
    mt::test::write_file(dir / "l.jsonl", "{\"text\": \"a\"}\n{\"text\": \"b \\u00e9\"}");
    const auto texts = mt::eval::read_lambada_texts(dir / "l.jsonl");
    EXPECT_EQ(texts, (std::vector<std::string>{"a", "b \u00e9"}));
}

// ---------------------------------------------------------------- the tool

// The first `lines` lines of a shared-data file, written to dir/name.
std::optional<fs::path> slice(const TempDir& dir, const std::string& data, int64_t lines,
                              const std::string& name) {
    auto path = mt::test::test_data(data);
    if (!path) return std::nullopt;
    mt::test::write_first_lines(*path, lines, dir / name);
    return dir / name;
}

std::string gpt2_tokenizer_flags() {
    auto vocab = mt::test::test_data("gpt2/gpt2-vocab.json");
    auto merges = mt::test::test_data("gpt2/gpt2-merges.txt");
    if (!vocab || !merges) return "";
    return " --tokenizer-type GPT2BPETokenizer --vocab-file " + q(*vocab) + " --merge-file " +
           q(*merges);
}

std::string eval_command(const std::string& task, const fs::path& data,
                         const std::string& tokenizer) {
    return mt::test::tool_path("megatron-eval").string() + " --task " + task + " --load " +
           q(kFixtures / "model") + " --valid-data " + q(data) + tokenizer;
}

std::string lines(simdjson::dom::array printed) {
    std::string block;
    for (auto line : printed) block += std::string(std::string_view(line)) + "\n";
    return block;
}

void expect_printed(const std::string& output, const std::string& block) {
    EXPECT_NE(output.find(block), std::string::npos) << "expected\n" << block << "in\n" << output;
}

void expect_rel(double got, double want, const char* what) {
    EXPECT_NEAR(got, want, 1e-5 * std::abs(want)) << what;
}

class EvalWikitext : public ::testing::TestWithParam<int> {};

TEST_P(EvalWikitext, MatchesMegatronsTaskCode) {
    auto c = expected()["wikitext"].get_array().at(size_t(GetParam()));
    TempDir dir;
    const auto data = slice(dir, "wikitext/wiki.test.tokens", int64_t(expected()["wiki_lines"]),
                            "wiki.slice.tokens");
    const std::string tokenizer = gpt2_tokenizer_flags();
    if (!data || tokenizer.empty()) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: needs wikitext";
    const fs::path json = dir / "out" / "result.json";
    fs::create_directories(json.parent_path());
    auto r = run_command(eval_command("WIKITEXT103", *data, tokenizer) + " --seq-length " +
                         std::to_string(int64_t(c["seq_length"])) + " --overlapping-eval " +
                         std::to_string(int64_t(c["overlapping_eval"])) +
                         " --micro-batch-size 3 --output-json " + q(json) + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(" > number of original tokens: " +
                            std::to_string(int64_t(c["num_original_tokens"])) +
                            ", number of detokenized tokens: " +
                            std::to_string(int64_t(c["num_tokenized_tokens"]))),
              std::string::npos)
        << r.output;

    simdjson::dom::parser parser;
    simdjson::dom::element got = parser.load(json.string());
    EXPECT_EQ(std::string_view(got["task"]), "WIKITEXT103");
    EXPECT_EQ(int64_t(got["seq_length"]), int64_t(c["seq_length"]));
    EXPECT_EQ(int64_t(got["num_tokenized_tokens"]), int64_t(c["num_tokenized_tokens"]));
    EXPECT_EQ(int64_t(got["num_original_tokens"]), int64_t(c["num_original_tokens"]));
    const double avg = double(c["avg_loss"]), ratio = double(c["token_ratio"]);
    expect_rel(double(got["avg_loss"]), avg, "avg_loss");
    expect_rel(double(got["ppl"]), std::exp(avg), "ppl");
    expect_rel(double(got["adjusted_ppl"]), std::exp(avg * ratio), "adjusted_ppl");
    EXPECT_EQ(double(got["token_ratio"]), ratio);
    // The printed block, character for character (4 digits: far from a rounding edge here).
    expect_printed(r.output, lines(c["printed"].get_array()));
    EXPECT_EQ(std::vector<fs::path>(fs::directory_iterator(json.parent_path()), {}),
              std::vector<fs::path>{json});  // no temporary left behind
}

INSTANTIATE_TEST_SUITE_P(Cases, EvalWikitext, ::testing::Range(0, 4));

class EvalLambada : public ::testing::TestWithParam<int> {};

TEST_P(EvalLambada, MatchesMegatronsTaskCode) {
    auto c = expected()["lambada"].get_array().at(size_t(GetParam()));
    TempDir dir;
    const auto data =
        slice(dir, "lambada/lambada_test.jsonl", int64_t(expected()["lambada_lines"]), "l.jsonl");
    const std::string tokenizer = gpt2_tokenizer_flags();
    if (!data || tokenizer.empty()) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: needs lambada";
    const bool strict = bool(c["strict"]);
    ASSERT_GT(double(c["min_margin"]), 1e-4);  // the reference's argmax is not a near tie
    auto r = run_command(eval_command("LAMBADA", *data, tokenizer) + " --seq-length " +
                         std::to_string(int64_t(c["seq_length"])) + " --micro-batch-size 5" +
                         (strict ? " --strict-lambada" : "") + " --output-json " +
                         q(dir / "r.json") + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_printed(r.output, lines(c["printed"].get_array()));
    simdjson::dom::parser parser;
    simdjson::dom::element got = parser.load((dir / "r.json").string());
    EXPECT_EQ(int64_t(got["number_correct"]), int64_t(c["number_correct"]));
    EXPECT_EQ(int64_t(got["total_examples"]), int64_t(c["total_examples"]));
    EXPECT_EQ(bool(got["strict_lambada"]), strict);
    EXPECT_EQ(double(got["avg_accuracy"]),
              double(int64_t(c["number_correct"])) / double(int64_t(c["total_examples"])));
}

INSTANTIATE_TEST_SUITE_P(Cases, EvalLambada, ::testing::Range(0, 2));

// Errors come before the model loads; the committed tiny vocabulary is enough for them.
std::string tiny_command(const std::string& task) {
    const fs::path vocab = mt::test::fixtures_dir() / "gpt2-tiny";
    return mt::test::tool_path("megatron-eval").string() + " --task " + task + " --load " +
           q(kFixtures / "model") + " --tokenizer-type GPT2BPETokenizer --vocab-file " +
           q(vocab / "vocab.json") + " --merge-file " + q(vocab / "merges.txt");
}

TEST(EvalTool, ReportsBadInput) {
    TempDir dir;
    struct Case {
        std::string args, message;
    };
    mt::test::write_file(dir / "bad.jsonl", "{\"text\": \"one two\"}\n\n{\"text\": \"x\"}\n");
    mt::test::write_file(dir / "corpus.txt", "a b c\n");
    const std::vector<Case> cases = {
        {tiny_command("LAMBADA"),
         "error: --task LAMBADA needs exactly one --valid-data file, got 0"},
        {tiny_command("LAMBADA") + " --valid-data " + q(dir / "nope.jsonl"),
         "error: --valid-data " + (dir / "nope.jsonl").string() + ": no such file"},
        {tiny_command("LAMBADA") + " --valid-data " + q(dir / "bad.jsonl"),
         "error: " + (dir / "bad.jsonl").string() + ":2: not valid JSON"},
        {tiny_command("WIKITEXT103") + " --valid-data " + q(dir / "corpus.txt"),
         "no detokenizer for this file"},
        {tiny_command("RACE") + " --valid-data " + q(dir / "corpus.txt"),
         "error: --task RACE needs --epochs (0: evaluation only)"},
        {tiny_command("SQUAD") + " --valid-data " + q(dir / "corpus.txt"),
         "Task SQUAD is not implemented"},
        // Checked before anything divides by it.
        {tiny_command("LAMBADA") + " --valid-data " + q(dir / "bad.jsonl") +
             " --micro-batch-size 0",
         "error: --micro-batch-size must be positive, got 0"},
    };
    for (const auto& c : cases) {
        auto r = run_command(c.args + " 2>&1");
        EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.output;
        EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
    }
    auto r = run_command(mt::test::tool_path("megatron-eval").string() + " --task LAMBADA 2>&1");
    EXPECT_EQ(r.exit_code, 2) << r.output;  // usage: --load and --tokenizer-type are required
}

TEST(EvalTool, RunsOnAMegatronTrainCheckpoint) {
    TempDir dir;
    std::string jsonl;
    for (int d = 0; d < 100; ++d)
        jsonl += "{\"text\": \"Story " + std::to_string(d) + " ends with the word " +
                 std::to_string(d % 3) + "\"}\n";
    const std::string data = mt::test::tiny_gpt2_dataset(dir, jsonl);
    const fs::path vocab = mt::test::fixtures_dir() / "gpt2-tiny";
    const std::string tokenizer = " --tokenizer-type GPT2BPETokenizer --vocab-file " +
                                  q(vocab / "vocab.json") + " --merge-file " +
                                  q(vocab / "merges.txt");
    auto train = run_command(
        mt::test::tool_path("megatron-train").string() +
        " --num-layers 2 --hidden-size 16 --num-attention-heads 2 --seq-length 32"
        " --max-position-embeddings 32 --micro-batch-size 2 --global-batch-size 2 --lr 1e-3"
        " --train-iters 2 --data-path " +
        q(data) + " --split 98,1,1 --eval-iters 0 --ckpt-format torch --save " + q(dir / "ckpt") +
        tokenizer + " 2>&1");
    ASSERT_EQ(train.exit_code, 0) << train.output;
    mt::test::write_file(dir / "lambada.jsonl", jsonl);
    mt::test::write_file(dir / "wiki.tokens", " = Title = \n One , two ( three ) . \n");
    for (const auto& [task, file] :
         {std::pair<std::string, std::string>{"LAMBADA", "lambada.jsonl"},
          {"WIKITEXT103", "wiki.tokens"}}) {
        auto r = run_command(mt::test::tool_path("megatron-eval").string() + " --task " + task +
                             " --load " + q(dir / "ckpt") + " --valid-data " + q(dir / file) +
                             " --micro-batch-size 4 --overlapping-eval 8" + tokenizer + " 2>&1");
        ASSERT_EQ(r.exit_code, 0) << r.output;
        EXPECT_NE(r.output.find("(torch format) at iteration 2"), std::string::npos) << r.output;
        EXPECT_NE(r.output.find(" validation results on " + task + " | "), std::string::npos)
            << r.output;
        EXPECT_NE(r.output.find("done :-)"), std::string::npos) << r.output;
    }
    // No tokenizer flag: the checkpoint's args name the tokenizer and its files (Megatron's
    // --use-checkpoint-args), with the same result.
    auto flagged =
        run_command(mt::test::tool_path("megatron-eval").string() + " --task LAMBADA --load " +
                    q(dir / "ckpt") + " --valid-data " + q(dir / "lambada.jsonl") +
                    " --micro-batch-size 4" + tokenizer + " 2>&1");
    auto from_ckpt =
        run_command(mt::test::tool_path("megatron-eval").string() + " --task LAMBADA --load " +
                    q(dir / "ckpt") + " --valid-data " + q(dir / "lambada.jsonl") +
                    " --micro-batch-size 4 --use-checkpoint-args 2>&1");
    ASSERT_EQ(from_ckpt.exit_code, 0) << from_ckpt.output;
    const auto result = [](const std::string& out) {
        const size_t at = out.find(" validation results on LAMBADA | ");
        return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
    };
    EXPECT_FALSE(result(flagged.output).empty()) << flagged.output;
    EXPECT_EQ(result(from_ckpt.output), result(flagged.output)) << from_ckpt.output;
}

}  // namespace
