// megatron-eval's finetuning tasks on a BERT that megatron-train pretrained (tiny sizes): RACE
// finetuned on the shared RACE dev set and scored on its test set, MNLI on the shared MNLI
// samples, each printing Megatron's accuracy lines; a RACE split directory (middle/ and high/
// inside) named as such.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "test_support.h"

namespace fs = std::filesystem;
using mt::test::run_command;
using mt::test::shell_quote;
using mt::test::TempDir;

namespace {

const char* kModel =
    " --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 64"
    " --max-position-embeddings 64";

class BertTasks : public testing::Test {
  protected:
    void SetUp() override {
        data_ = mt::test::test_data_dir();
        if (!data_) GTEST_SKIP() << "MEGATRON_TEST_DATA is not set: no RACE, MNLI or vocabulary";
        vocab_ = " --vocab-file " + shell_quote(*data_ / "bert" / "bert-large-uncased-vocab.txt") +
                 " --tokenizer-type BertWordPieceLowerCase";
        const fs::path corpus = mt::test::fixtures_dir() / "bert_dataset" / "corpus_text_sentence";
        auto r = run_command(
            mt::test::tool_path("megatron-train").string() + " --model bert" + kModel + vocab_ +
            " --micro-batch-size 4 --global-batch-size 8 --train-iters 10"
            " --lr 1e-3 --split 80,15,5 --eval-iters 0 --data-path " +
            shell_quote(corpus) + " --data-cache-path " + shell_quote(dir_ / "cache") + " --save " +
            shell_quote(dir_ / "pretrained"));
        ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    std::string eval(const std::string& task, const std::string& data) const {
        return mt::test::tool_path("megatron-eval").string() + " --task " + task + kModel + vocab_ +
               " --pretrained-checkpoint " + shell_quote(dir_ / "pretrained") +
               " --lr 1e-4 --log-interval 100 " + data;
    }

    TempDir dir_;
    std::optional<fs::path> data_;
    std::string vocab_;
};

TEST_F(BertTasks, RaceFinetunesOnDevAndScoresTest) {
    const fs::path race = *data_ / "race" / "RACE";
    auto r = run_command(eval("RACE", "--epochs 1 --micro-batch-size 8 --train-data " +
                                          shell_quote(race / "dev" / "middle") + " --valid-data " +
                                          shell_quote(race / "test" / "middle") +
                                          " --output-json " + shell_quote(dir_ / "race.json")));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // 1436 test questions; four choices each: about a quarter right before it learns much.
    const std::regex line(
        R"( >> \|epoch: 0\| overall: correct / total = (\d+) / 1436 = [0-9.]+ %)");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.output, m, line)) << r.output;
    EXPECT_GT(std::stoi(m[1]), 200);
    EXPECT_NE(r.output.find(" > |epoch: 0| metrics for test-middle: correct / total = "),
              std::string::npos)
        << r.output;
    EXPECT_TRUE(fs::exists(dir_ / "race.json"));
    // The split directory itself holds only middle/ (and high/): named, not read as empty.
    r = run_command(eval("RACE", "--epochs 1 --train-data " + shell_quote(race / "dev") +
                                     " --valid-data " + shell_quote(race / "test")));
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("no *.txt files"), std::string::npos) << r.output;
}

TEST_F(BertTasks, MnliMatchedAndMismatchedAccuracy) {
    const fs::path mnli = *data_ / "mnli";
    auto r =
        run_command(eval("MNLI", "--epochs 2 --micro-batch-size 2 --train-data " +
                                     shell_quote(mnli / "train.sample6.tsv") + " --valid-data " +
                                     shell_quote(mnli / "dev_matched.head11.tsv") + " " +
                                     shell_quote(mnli / "dev_mismatched.head5.tsv")));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const char* epoch : {"0", "1"})
        EXPECT_TRUE(std::regex_search(
            r.output, std::regex(std::string(R"( >> \|epoch: )") + epoch +
                                 R"(\| overall: correct / total = \d+ / 16 = [0-9.]+ %)")))
            << r.output;
    EXPECT_NE(r.output.find("dev-matched.head11: correct / total = "), std::string::npos);
    // --epochs 0: evaluation only, epoch -1.
    r = run_command(
        eval("MNLI", "--epochs 0 --valid-data " + shell_quote(mnli / "dev_matched.head11.tsv")));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(" >> |epoch: -1| overall: correct / total = "), std::string::npos)
        << r.output;
}

}  // namespace
