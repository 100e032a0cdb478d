// megatron-train --model bert with the flags of Megatron's examples/bert/train_bert_340m_
// distributed.sh (tiny sizes, one process, the committed sentence-split corpus of
// tests/fixtures/bert_dataset): pretrain_bert.py's log lines with falling lm and sop losses, the
// evaluation blocks, checkpoints, --bert-no-binary-head, and a family we do not have refused.
#include <gtest/gtest.h>

#include <filesystem>

#include "mpiexec_launch.h"
#include "test_support.h"

namespace fs = std::filesystem;
using mt::test::run_command;
using mt::test::TempDir;

namespace {

// The example's flags, sizes shrunk (no --tokenizer-type: pretrain_bert.py defaults it).
std::string example_command(const TempDir& dir, const fs::path& vocab) {
    const fs::path corpus = mt::test::fixtures_dir() / "bert_dataset" / "corpus_text_sentence";
    return mt::test::tool_path("megatron-train").string() +
           " --model bert --num-layers 2 --hidden-size 64 --num-attention-heads 4"
           " --seq-length 64 --max-position-embeddings 64 --attention-backend auto"
           " --micro-batch-size 4 --global-batch-size 8 --train-iters 80 --weight-decay 1e-2"
           " --clip-grad 1.0 --lr 0.001 --lr-decay-iters 100 --lr-decay-style linear"
           " --min-lr 1.0e-5 --lr-warmup-fraction .01 --data-path " +
           mt::test::shell_quote(corpus) + " --vocab-file " + mt::test::shell_quote(vocab) +
           " --split 80,15,5 --log-interval 10 --save-interval 20 --eval-interval 20"
           " --eval-iters 2 --data-cache-path " +
           mt::test::shell_quote(dir / "cache") + " --save " + mt::test::shell_quote(dir / "ckpt") +
           " --tensorboard-dir " + mt::test::shell_quote(dir / "tb");
}

using mt::test::logged_values;

TEST(TrainBert, ExampleScriptFlagsPrintFallingLmAndSopLosses) {
    auto vocab = mt::test::test_data("bert/bert-large-uncased-vocab.txt");
    if (!vocab) GTEST_SKIP() << "MEGATRON_TEST_DATA is not set: no BERT vocabulary";
    TempDir dir;
    auto r = run_command(example_command(dir, *vocab));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto lm = logged_values(r.output, "lm loss"), sop = logged_values(r.output, "sop loss");
    ASSERT_EQ(lm.size(), 8u) << r.output;
    ASSERT_EQ(sop.size(), 8u) << r.output;
    EXPECT_LT(lm.back(), lm.front() - 0.3) << r.output;  // from ~10.3 (ln 30592)
    EXPECT_GT(sop.front(), 0.5);                         // about ln 2 at first
    EXPECT_NE(r.output.find(" validation loss at iteration 20 | lm loss value: "),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find(" | sop loss value: "), std::string::npos);
    EXPECT_TRUE(fs::exists(dir / "ckpt" / "iter_0000080" / "metadata.json"));
    EXPECT_NE(r.output.find("> building BertWordPieceLowerCase tokenizer"), std::string::npos);
}

TEST(TrainBert, WithoutTheBinaryHeadOnlyTheLmLoss) {
    auto vocab = mt::test::test_data("bert/bert-large-uncased-vocab.txt");
    if (!vocab) GTEST_SKIP() << "MEGATRON_TEST_DATA is not set: no BERT vocabulary";
    TempDir dir;
    auto r = run_command(example_command(dir, *vocab) +
                         " --bert-no-binary-head --mask-prob 0.2 --short-seq-prob 0.05"
                         " --train-iters 10");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(logged_values(r.output, "lm loss").size(), 1u) << r.output;
    EXPECT_TRUE(logged_values(r.output, "sop loss").empty()) << r.output;
}

// With dropout off, TP2 (vocabulary padded to the same size), TP2 with --sequence-parallel, DP2
// and PP2 give the one-process lm and sop losses: replicated heads count once in the gradient
// norm, the pooler gathers the sequence shards, the data-parallel mean is the micro-batches'
// mean, the last stage's copy of the tied word embeddings follows the first stage's. PP2's
// checkpoints (torch and torch_dist) resume in one process as the one-process run goes on.
TEST(TrainBert, TensorSequenceDataAndPipelineParallelGiveTheOneProcessLosses) {
    if (!mt::test::mpiexec_available()) GTEST_SKIP() << "built without MPI";
    auto vocab = mt::test::test_data("bert/bert-large-uncased-vocab.txt");
    if (!vocab) GTEST_SKIP() << "MEGATRON_TEST_DATA is not set: no BERT vocabulary";
    TempDir dir;
    const std::string corpus =
        mt::test::shell_quote(mt::test::fixtures_dir() / "bert_dataset" / "corpus_text_sentence");
    const std::string args =
        " --model bert --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64"
        " --max-position-embeddings 64 --micro-batch-size 2 --global-batch-size 8"
        " --train-iters 4 --lr 1e-3 --split 80,15,5 --log-interval 1 --eval-iters 0"
        " --hidden-dropout 0 --attention-dropout 0 --data-path " +
        corpus + " --vocab-file " + mt::test::shell_quote(*vocab) + " --data-cache-path " +
        mt::test::shell_quote(dir / "cache");
    const std::string train = mt::test::tool_path("megatron-train").string() + args;
    const std::string ranks = mt::test::mpiexec_prefix(2);
    auto one = run_command(train);
    auto tp2 = run_command(ranks + train +
                           " --tensor-model-parallel-size 2 --make-vocab-size-divisible-by 64");
    auto sp = run_command(ranks + train +
                          " --tensor-model-parallel-size 2 --sequence-parallel"
                          " --make-vocab-size-divisible-by 64");
    auto dp2 = run_command(ranks + train);
    auto pp2 = run_command(ranks + train + " --pipeline-model-parallel-size 2");
    ASSERT_EQ(one.exit_code, 0) << one.output;
    ASSERT_EQ(tp2.exit_code, 0) << tp2.output;
    ASSERT_EQ(sp.exit_code, 0) << sp.output;
    ASSERT_EQ(dp2.exit_code, 0) << dp2.output;
    ASSERT_EQ(pp2.exit_code, 0) << pp2.output;
    for (const char* name : {"lm loss", "sop loss"}) {
        const auto want = logged_values(one.output, name);
        ASSERT_EQ(want.size(), 4u) << one.output;
        for (const auto* run : {&tp2, &sp, &dp2, &pp2}) {
            const auto got = logged_values(run->output, name);
            ASSERT_EQ(got.size(), want.size()) << run->output;
            for (size_t i = 0; i < want.size(); ++i)
                EXPECT_NEAR(got[i], want[i], 1e-5 * want[i]) << name << " iteration " << i + 1;
        }
    }
    const auto want = logged_values(one.output, "lm loss");
    for (const char* format : {"torch_dist", "torch"}) {
        SCOPED_TRACE(format);
        const std::string ckpt = mt::test::shell_quote(dir / format);
        const std::string fmt = std::string(" --ckpt-format ") + format;
        auto saved = run_command(ranks + train + fmt + " --pipeline-model-parallel-size 2 --save " +
                                 ckpt + " --exit-interval 2");
        ASSERT_EQ(saved.exit_code, 0) << saved.output;
        auto resumed = run_command(train + fmt + " --load " + ckpt);
        ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
        const auto got = logged_values(resumed.output, "lm loss");
        ASSERT_EQ(got.size(), 2u) << resumed.output;
        for (size_t i = 0; i < 2; ++i)
            EXPECT_NEAR(got[i], want[i + 2], 1e-5 * want[i + 2]) << "iteration " << i + 3;
    }
}

TEST(TrainBert, AFamilyWeDoNotHaveIsRefusedByName) {
    auto r = run_command(mt::test::tool_path("megatron-train").string() + " --model retro");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("unknown model 'retro'; available: bert, gpt, hybrid, mamba, t5"),
              std::string::npos)
        << r.output;
}

}  // namespace
