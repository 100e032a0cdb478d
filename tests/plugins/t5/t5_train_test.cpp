// megatron-train --model t5 with the flags of Megatron's examples/t5/train_t5_220m_distributed.sh
// (tiny sizes, the committed sentence-split corpus of tests/fixtures/bert_dataset, the BERT
// vocabulary with --vocab-extra-ids 100): falling lm loss, evaluation, a torch_dist checkpoint
// that resumes; and under mpirun TP2, TP2 with --sequence-parallel and DP2 with the distributed
// optimizer give the one-process losses.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <vector>

#include "mpiexec_launch.h"
#include "test_support.h"

namespace fs = std::filesystem;
using mt::test::logged_values;
using mt::test::run_command;
using mt::test::TempDir;

namespace {

// The example's flags, sizes shrunk; its --split 99982,9,9 leaves no validation document in a
// 44-document corpus, so 80,10,10.
std::string example_flags(const TempDir& dir, const fs::path& vocab) {
    const fs::path corpus = mt::test::fixtures_dir() / "bert_dataset" / "corpus_text_sentence";
    return " --model t5 --encoder-num-layers 2 --decoder-num-layers 2 --hidden-size 64"
           " --num-attention-heads 4 --kv-channels 16 --ffn-hidden-size 256"
           " --encoder-seq-length 128 --decoder-seq-length 64 --max-position-embeddings 128"
           " --micro-batch-size 4 --global-batch-size 8 --lr 0.001 --train-iters 40"
           " --lr-decay-iters 40 --lr-decay-style linear --min-lr 0.00001 --weight-decay 1e-2"
           " --lr-warmup-fraction .01 --clip-grad 1.0 --vocab-extra-ids 100"
           " --init-method-std 0.015 --transformer-impl transformer_engine"
           " --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1"
           " --attention-backend auto --data-path " +
           mt::test::shell_quote(corpus) + " --vocab-file " + mt::test::shell_quote(vocab) +
           " --tokenizer-type BertWordPieceLowerCase --split 80,10,10 --log-interval 10"
           " --eval-interval 20 --eval-iters 2 --distributed-backend nccl --data-cache-path " +
           mt::test::shell_quote(dir / "cache");
}

std::string train() {
    return mt::test::tool_path("megatron-train").string();
}

// <dir>/ckpt, saved at iteration `from` and `to` by a run that logged the losses `lm` (the last
// two after `from`), set back to `from`: the resumed run logs those two losses again.
void expect_resumes_as_uninterrupted(const TempDir& dir, const std::string& flags, int from, int to,
                                     const std::vector<double>& lm) {
    char last[32];
    std::snprintf(last, sizeof last, "iter_%07d", to);
    fs::remove_all(dir / "ckpt" / last);
    mt::test::write_file(dir / "ckpt" / "latest_checkpointed_iteration.txt", std::to_string(from));
    auto resumed = run_command(train() + flags + " --load " + mt::test::shell_quote(dir / "ckpt"));
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    const auto again = logged_values(resumed.output, "lm loss");
    ASSERT_EQ(again.size(), 2u) << resumed.output;
    ASSERT_GE(lm.size(), 2u);
    EXPECT_NEAR(again[0], lm[lm.size() - 2], 1e-5 * lm[lm.size() - 2]);
    EXPECT_NEAR(again[1], lm.back(), 1e-5 * lm.back());
}

TEST(TrainT5, ExampleScriptFlagsPrintFallingLmLossAndResume) {
    auto vocab = mt::test::test_data("bert/bert-large-uncased-vocab.txt");
    if (!vocab) GTEST_SKIP() << "MEGATRON_TEST_DATA is not set: no BERT vocabulary";
    TempDir dir;
    const std::string flags = example_flags(dir, *vocab);
    auto r = run_command(train() + flags + " --save " + mt::test::shell_quote(dir / "ckpt") +
                         " --save-interval 20");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto lm = logged_values(r.output, "lm loss");
    ASSERT_EQ(lm.size(), 4u) << r.output;
    EXPECT_LT(lm.back(), lm.front() - 0.3) << r.output;  // from ~10.3 (ln 30720)
    EXPECT_NE(r.output.find(" validation loss at iteration 20 | lm loss value: "),
              std::string::npos)
        << r.output;
    EXPECT_TRUE(fs::exists(dir / "ckpt" / "iter_0000020" / "metadata.json"));
    EXPECT_TRUE(fs::exists(dir / "cache"));

    // From iteration 20's checkpoint the run goes on as the uninterrupted one did.
    expect_resumes_as_uninterrupted(dir, flags, 20, 40, lm);
}

// A torch-format checkpoint (Megatron's state dict: the repeated position_embeddings and
// output_layer keys share their storage) resumes exactly too, optimizer state included.
TEST(TrainT5, TorchFormatCheckpointsResumeExactly) {
    auto vocab = mt::test::test_data("bert/bert-large-uncased-vocab.txt");
    if (!vocab) GTEST_SKIP() << "MEGATRON_TEST_DATA is not set: no BERT vocabulary";
    TempDir dir;
    const std::string flags = example_flags(dir, *vocab) +
                              " --train-iters 4 --lr-decay-iters 4 --log-interval 1"
                              " --eval-iters 0 --ckpt-format torch";
    auto r = run_command(train() + flags + " --save " + mt::test::shell_quote(dir / "ckpt") +
                         " --save-interval 2");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto lm = logged_values(r.output, "lm loss");
    ASSERT_EQ(lm.size(), 4u) << r.output;
    expect_resumes_as_uninterrupted(dir, flags, 2, 4, lm);
}

// Full (the decoder's layers replaying their cross-attention over the kept encoder output) and
// selective recompute give the losses of a run that keeps every activation, dropout on.
TEST(TrainT5, RecomputeGivesTheSameLosses) {
    auto vocab = mt::test::test_data("bert/bert-large-uncased-vocab.txt");
    if (!vocab) GTEST_SKIP() << "MEGATRON_TEST_DATA is not set: no BERT vocabulary";
    TempDir dir;
    const std::string flags = example_flags(dir, *vocab) +
                              " --train-iters 3 --lr-decay-iters 3 --log-interval 1 --eval-iters 0";
    auto plain = run_command(train() + flags);
    ASSERT_EQ(plain.exit_code, 0) << plain.output;
    const auto want = logged_values(plain.output, "lm loss");
    ASSERT_EQ(want.size(), 3u) << plain.output;
    for (const char* recompute :
         {" --recompute-granularity full --recompute-method uniform --recompute-num-layers 1",
          " --recompute-granularity selective"}) {
        SCOPED_TRACE(recompute);
        auto r = run_command(train() + flags + recompute);
        ASSERT_EQ(r.exit_code, 0) << r.output;
        EXPECT_EQ(logged_values(r.output, "lm loss"), want) << r.output;
    }
}

// Each layout's losses under mpirun (2 ranks) against one process's, the model given by `model`.
void expect_layouts_give_the_one_process_losses(const std::string& model,
                                                const std::vector<const char*>& layouts) {
    if (!mt::test::mpiexec_available()) GTEST_SKIP() << "built without MPI";
    auto vocab = mt::test::test_data("bert/bert-large-uncased-vocab.txt");
    if (!vocab) GTEST_SKIP() << "MEGATRON_TEST_DATA is not set: no BERT vocabulary";
    TempDir dir;
    // Dropout off: Megatron draws it from other streams under tensor parallelism too.
    const std::string flags = example_flags(dir, *vocab) + model +
                              " --train-iters 4 --log-interval 1 --eval-iters 0"
                              " --hidden-dropout 0 --attention-dropout 0";
    const std::string ranks = mt::test::mpiexec_prefix(2);
    auto one = run_command(train() + flags);
    ASSERT_EQ(one.exit_code, 0) << one.output;
    const auto want = logged_values(one.output, "lm loss");
    ASSERT_EQ(want.size(), 4u) << one.output;
    for (const char* layout : layouts) {
        SCOPED_TRACE(layout);
        auto r = run_command(ranks + train() + flags + layout);
        ASSERT_EQ(r.exit_code, 0) << r.output;
        const auto got = logged_values(r.output, "lm loss");
        ASSERT_EQ(got.size(), want.size()) << r.output;
        for (size_t i = 0; i < want.size(); ++i)
            EXPECT_NEAR(got[i], want[i], 1e-5 * want[i]) << "iteration " << i + 1;
    }
}

TEST(TrainT5, TensorSequenceAndDataParallelGiveTheOneProcessLosses) {
    expect_layouts_give_the_one_process_losses(
        "",
        {" --tensor-model-parallel-size 2", " --tensor-model-parallel-size 2 --sequence-parallel",
         " --use-distributed-optimizer"});
}

// Each rank adds its heads' columns of the bucket tables (their grads summed over the group).
TEST(TrainT5, RelativePositionsAtTensorParallelGiveTheOneProcessLosses) {
    expect_layouts_give_the_one_process_losses(
        " --position-embedding-type relative",
        {" --tensor-model-parallel-size 2 --sequence-parallel"});
}

TEST(TrainT5, PipelineParallelismIsRefusedAsMegatronRefusesIt) {
    if (!mt::test::mpiexec_available()) GTEST_SKIP() << "built without MPI";
    auto vocab = mt::test::test_data("bert/bert-large-uncased-vocab.txt");
    if (!vocab) GTEST_SKIP() << "MEGATRON_TEST_DATA is not set: no BERT vocabulary";
    TempDir dir;
    auto r = run_command(mt::test::mpiexec_prefix(2) + train() + example_flags(dir, *vocab) +
                         " --pipeline-model-parallel-size 2");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("--pipeline-model-parallel-size with T5"), std::string::npos)
        << r.output;
}

// megatron-generate serves a Megatron T5 checkpoint: each prompt is the encoder's input (its
// <mask> a sentinel), each answer the decoder's text from [BOS]; the tokenizer (with its 100
// sentinels) comes from the checkpoint's args. (Its tokens equal megatron-core's greedy ones:
// t5_model_test.cpp.)
TEST(GenerateT5, PromptsAreTheEncodersInputAndTheDecoderStartsFromBos) {
    const fs::path ckpt =
        mt::test::fixtures_dir() / "megatron_checkpoints" / "core_v0.13" / "t5_torch_fp32";
    // The checkpoint names its vocabulary relative to the repository root.
    auto r = run_command("cd " + mt::test::shell_quote(mt::test::fixtures_dir() / ".." / "..") +
                         " && " + mt::test::tool_path("megatron-generate").string() +
                         " --model t5 --load " + mt::test::shell_quote(ckpt) +
                         " --prompts 'hello <mask> world' 'a cafe' --out-seq-length 4 --greedy");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const size_t first = r.output.find("\n[BOS] ");
    ASSERT_NE(first, std::string::npos) << r.output;
    const size_t second = r.output.find("\n[BOS] ", first + 1);
    ASSERT_NE(second, std::string::npos) << r.output;
    // --output-path (Megatron's static inference example) holds the decoder's ids after [BOS].
    TempDir dir;
    auto json = run_command("cd " + mt::test::shell_quote(mt::test::fixtures_dir() / ".." / "..") +
                            " && " + mt::test::tool_path("megatron-generate").string() +
                            " --model t5 --load " + mt::test::shell_quote(ckpt) +
                            " --prompts 'a cafe' --out-seq-length 4 --greedy" + " --output-path " +
                            mt::test::shell_quote(dir / "out.json"));
    ASSERT_EQ(json.exit_code, 0) << json.output;
    const size_t end = r.output.find('\n', second + 1);
    const std::string generated = r.output.substr(second + 7, end - second - 7);
    EXPECT_NE(mt::test::read_file(dir / "out.json")
                  .find("\"input_prompt\": \"a cafe\", \"generated_text\": \"" + generated + "\""),
              std::string::npos)
        << generated << "\n"
        << mt::test::read_file(dir / "out.json");
    auto bad = run_command(
        mt::test::tool_path("megatron-generate").string() + " --model t5 --load " +
        mt::test::shell_quote(ckpt) + " --vocab-file " +
        mt::test::shell_quote(mt::test::fixtures_dir() / "wordpiece" / "tiny_vocab.txt") +
        " --tokenizer-type BertWordPieceCase --prompts '<mask>' --greedy");
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.output.find("more <mask>s than the tokenizer has sentinels"), std::string::npos)
        << bad.output;
}

// megatron-eval's zero-shot tasks score decoder-only language models (Megatron's
// tasks/zeroshot_gpt): a T5 checkpoint is refused by name, not run into the decoder without its
// encoder.
TEST(EvalT5, ZeroShotTasksAreRefusedByName) {
    TempDir dir;
    mt::test::write_file(dir / "lambada.jsonl", "{\"text\": \"hello world a b\"}\n");
    const fs::path ckpt =
        mt::test::fixtures_dir() / "megatron_checkpoints" / "core_v0.13" / "t5_torch_fp32";
    auto r = run_command("cd " + mt::test::shell_quote(mt::test::fixtures_dir() / ".." / "..") +
                         " && " + mt::test::tool_path("megatron-eval").string() +
                         " --task LAMBADA --model t5 --load " + mt::test::shell_quote(ckpt) +
                         " --valid-data " + mt::test::shell_quote(dir / "lambada.jsonl"));
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("not supported: --task LAMBADA with an encoder-decoder model"),
              std::string::npos)
        << r.output;
}

}  // namespace
