// megatron-train's checkpoints through the binary: --save / --save-interval / --load resume the
// run exactly (dropout on), the end-of-training save, --finetune, --no-save-optim with
// --no-load-optim, leftovers of an interrupted save, the save on SIGTERM with
// --exit-signal-handler, and a truncated file.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <map>
#include <regex>

#include "mt/checkpoint.h"
#include "mt/model.h"
#include "mt/registry.h"
#include "test_support.h"

namespace fs = std::filesystem;
using mt::test::read_file;
using mt::test::run_command;
using mt::test::TempDir;

namespace {

std::string q(const fs::path& p) {
    return mt::test::shell_quote(p);
}

std::string make_dataset(const TempDir& dir) {
    std::string jsonl;
    for (int d = 0; d < 100; ++d)
        jsonl += "{\"text\": \"Document " + std::to_string(d) + " says " +
                 std::to_string(d * 7 % 13) + " and then " + std::to_string(d % 5) +
                 " again, twice over.\"}\n";
    return mt::test::tiny_gpt2_dataset(dir, jsonl);
}

// Dropout stays on (Megatron's 0.1), so resuming must also restore the dropout stream.
std::string train_command(const TempDir& dir, const std::string& data) {
    const fs::path vocab = mt::test::fixtures_dir() / "gpt2-tiny";
    return mt::test::tool_path("megatron-train").string() +
           " --num-layers 2 --hidden-size 16 --num-attention-heads 2 --seq-length 16"
           " --max-position-embeddings 16 --micro-batch-size 2 --global-batch-size 4"
           " --lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine --lr-warmup-iters 1"
           " --tokenizer-type GPT2BPETokenizer --vocab-file " +
           q(vocab / "vocab.json") + " --merge-file " + q(vocab / "merges.txt") + " --data-path " +
           q(data) + " --split 98,1,1 --data-cache-path " + q(dir / "cache") +
           " --log-interval 1 --eval-iters 0 --ckpt-format torch";
}

// iteration -> the "lm loss" text of its log line.
std::map<int, std::string> losses(const std::string& output) {
    static const std::regex line(R"(iteration +(\d+)/ +\d+ \|.*\| lm loss: ([0-9.E+-]+) \|)");
    std::map<int, std::string> out;
    for (auto it = std::sregex_iterator(output.begin(), output.end(), line);
         it != std::sregex_iterator(); ++it)
        out[std::stoi((*it)[1])] = (*it)[2];
    return out;
}

// `base` (6 iterations, no --ckpt-format) saved in `format` at iteration 3 and resumed: the
// resumed run's losses are `expected`'s after iteration 3. Returns the resumed run's output.
std::string expect_resumes_exactly(const std::string& base, const fs::path& ckpt,
                                   const std::string& format,
                                   const std::map<int, std::string>& expected) {
    auto first = run_command(base + " --ckpt-format " + format + " --save " + q(ckpt) +
                             " --exit-interval 3");
    EXPECT_EQ(first.exit_code, 0) << first.output;
    auto resumed = run_command(base + " --load " + q(ckpt));
    EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
    const std::map<int, std::string> after(expected.upper_bound(3), expected.end());
    EXPECT_EQ(losses(resumed.output), after) << format << "\n" << resumed.output;
    return resumed.output;
}

TEST(TrainCheckpoint, ResumingReproducesTheUninterruptedRun) {
    TempDir dir;
    const std::string data = make_dataset(dir);
    const std::string base = train_command(dir, data) + " --train-iters 6";
    auto full = run_command(base);
    ASSERT_EQ(full.exit_code, 0) << full.output;
    ASSERT_EQ(losses(full.output).size(), 6u) << full.output;

    const fs::path ckpt = dir / "ckpt";
    auto first = run_command(base + " --save " + q(ckpt) + " --save-interval 3 --exit-interval 3");
    ASSERT_EQ(first.exit_code, 0) << first.output;
    EXPECT_NE(first.output.find("  successfully saved checkpoint from iteration       3 to " +
                                ckpt.string() + " [ t 1/1, p 1/1 ]"),
              std::string::npos)
        << first.output;
    EXPECT_EQ(read_file(ckpt / "latest_checkpointed_iteration.txt"), "3");
    EXPECT_TRUE(fs::exists(ckpt / "iter_0000003/mp_rank_00/model_optim_rng.pt"));

    // A save of iteration 6 killed midway: its temporary directory is ignored.
    fs::create_directories(ckpt / "iter_0000006.tmp.1/mp_rank_00");
    mt::test::write_file(ckpt / "iter_0000006.tmp.1/mp_rank_00/model_optim_rng.pt", "PK");

    auto resumed =
        run_command(base + " --load " + q(ckpt) + " --save " + q(ckpt) + " --save-interval 3");
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    EXPECT_NE(resumed.output.find("  successfully loaded checkpoint from " + ckpt.string() +
                                  " [ t 1/1, p 1/1 ] at iteration 3"),
              std::string::npos)
        << resumed.output;
    auto expected = losses(full.output), got = losses(resumed.output);
    ASSERT_EQ(got.size(), 3u) << resumed.output;
    for (int i = 4; i <= 6; ++i) EXPECT_EQ(got[i], expected[i]) << "iteration " << i;
    EXPECT_NE(resumed.output.find("consumed samples:           24"), std::string::npos);
    EXPECT_EQ(read_file(ckpt / "latest_checkpointed_iteration.txt"), "6");
}

// Megatron's default format, torch_dist: --load finds it whatever --ckpt-format says, resuming
// is exact, and --ckpt-convert-format writes the loaded state in another format (which resumes
// exactly too) and stops.
TEST(TrainCheckpoint, TorchDistByDefaultResumesExactlyAndConverts) {
    TempDir dir;
    const std::string data = make_dataset(dir);
    std::string base = train_command(dir, data) + " --train-iters 6";
    const std::string torch_format = " --ckpt-format torch";
    base.erase(base.find(torch_format), torch_format.size());
    auto full = run_command(base);
    ASSERT_EQ(full.exit_code, 0) << full.output;
    const fs::path ckpt = dir / "dist";
    auto first = run_command(base + " --save " + q(ckpt) + " --exit-interval 3");
    ASSERT_EQ(first.exit_code, 0) << first.output;
    EXPECT_TRUE(fs::exists(ckpt / "iter_0000003/metadata.json"));
    EXPECT_TRUE(fs::exists(ckpt / "iter_0000003/__0_0.distcp"));

    auto conv = run_command(base + " --load " + q(ckpt) + " --ckpt-convert-format torch" +
                            " --ckpt-convert-save " + q(dir / "conv"));
    ASSERT_EQ(conv.exit_code, 0) << conv.output;
    EXPECT_TRUE(fs::exists(dir / "conv/torch/iter_0000003/mp_rank_00/model_optim_rng.pt"));
    EXPECT_TRUE(losses(conv.output).empty()) << "conversion does not train\n" << conv.output;

    const auto expected = losses(full.output);
    for (const fs::path& from : {ckpt, dir / "conv/torch"}) {
        auto resumed = run_command(base + " --load " + q(from));
        ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
        auto got = losses(resumed.output);
        ASSERT_EQ(got.size(), 3u) << resumed.output;
        for (int i = 4; i <= 6; ++i)
            EXPECT_EQ(got[i], expected.at(i)) << from << " iteration " << i;
    }
}

// --bf16 and --fp16: half weights beside the f32 masters (Megatron's fp32_from_fp16_params in
// the torch format, optimizer.state.fp32_param.* in torch_dist), and fp16's dynamic loss scale
// (its first iterations overflow at 2^32 and are skipped); both formats resume exactly.
class HalfPrecisionCheckpoint : public testing::TestWithParam<std::string> {};

TEST_P(HalfPrecisionCheckpoint, ResumesExactlyFromTheMasterWeightsInBothFormats) {
    TempDir dir;
    const std::string data = make_dataset(dir);
    const std::string precision = GetParam();
    std::string base = train_command(dir, data) + " --train-iters 6 --" + precision;
    const std::string torch_format = " --ckpt-format torch";
    base.erase(base.find(torch_format), torch_format.size());
    auto full = run_command(base);
    ASSERT_EQ(full.exit_code, 0) << full.output;
    const auto expected = losses(full.output);
    if (precision == "fp16") {
        // 2^32 overflows fp16 gradients: skipped (no lm loss in the line), the scale backs off.
        EXPECT_NE(
            full.output.find("| loss scale: 4294967296.0 | number of skipped iterations:   1"),
            std::string::npos)
            << full.output;
        EXPECT_NE(full.output.find("| loss scale: 2147483648.0 |"), std::string::npos);
    }
    for (const std::string format : {"torch", "torch_dist"}) {
        const std::string resumed = expect_resumes_exactly(base, dir / format, format, expected);
        // The loss scale resumes too (the log line's, iteration 6).
        const auto line = [](const std::string& out) {
            const size_t at = out.find("iteration        6/");
            return at == std::string::npos ? std::string()
                                           : out.substr(at, out.find('\n', at) - at);
        };
        const std::string want = line(full.output), have = line(resumed);
        EXPECT_EQ(have.substr(have.find("loss scale")), want.substr(want.find("loss scale")));
    }
    const std::string pt = read_file(dir / "torch/iter_0000003/mp_rank_00/model_optim_rng.pt");
    const char* storage = precision == "bf16" ? "BFloat16Storage" : "HalfStorage";
    for (const char* key : {"fp32_from_fp16_params", storage})
        EXPECT_NE(pt.find(key), std::string::npos) << key;
    if (precision == "fp16")
        for (const char* key : {"grad_scaler", "growth_tracker", "hysteresis_tracker"})
            EXPECT_NE(pt.find(key), std::string::npos) << key;
}

INSTANTIATE_TEST_SUITE_P(Precisions, HalfPrecisionCheckpoint, testing::Values("bf16", "fp16"),
                         [](const auto& info) { return info.param; });

TEST(TrainCheckpoint, FinetuneEndOfTrainingSaveAndNoOptimizerState) {
    TempDir dir;
    const std::string data = make_dataset(dir);
    const std::string base = train_command(dir, data);
    const fs::path a = dir / "a", b = dir / "b";
    // No --save-interval: Megatron saves once, when training ends.
    auto r = run_command(base + " --train-iters 2 --save " + q(a) + " --no-save-optim");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(read_file(a / "latest_checkpointed_iteration.txt"), "2");

    r = run_command(base + " --train-iters 4 --load " + q(a));
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("no optimizer state: use --no-load-optim or --finetune"),
              std::string::npos)
        << r.output;

    r = run_command(base + " --train-iters 4 --load " + q(a) + " --no-load-optim");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(losses(r.output).begin()->first, 3) << r.output;

    r = run_command(base + " --train-iters 2 --load " + q(a) + " --finetune --save " + q(b));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(losses(r.output).size(), 2u) << "--finetune starts at iteration 0\n" << r.output;
    EXPECT_EQ(read_file(b / "latest_checkpointed_iteration.txt"), "2");
}

TEST(TrainCheckpoint, SigtermWithTheExitSignalHandlerSavesBeforeExiting) {
    TempDir dir;
    const std::string data = make_dataset(dir);
    const fs::path log = dir / "log", ckpt = dir / "ckpt";
    // SIGTERM once the first iteration line is out (the handler is installed by then).
    auto r = run_command(
        train_command(dir, data) + " --train-iters 100000 --exit-signal-handler --save " + q(ckpt) +
        " > " + q(log) + " 2>&1 & p=$!; until grep -q 'iteration ' " + q(log) +
        " || ! kill -0 $p 2>/dev/null; do sleep 0.05; done; kill -TERM $p; wait $p");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const std::string out = read_file(log);
    const auto saved = out.find("  successfully saved checkpoint from iteration ");
    ASSERT_NE(saved, std::string::npos) << out;
    EXPECT_LT(saved, out.find("exiting program after receiving SIGTERM.")) << out;
    EXPECT_TRUE(fs::exists(ckpt / "latest_checkpointed_iteration.txt"));
}

TEST(TrainCheckpoint, SigtermDuringSetupIsKeptForTheExitSignalHandler) {
    TempDir dir;
    const std::string data = make_dataset(dir);
    const fs::path ckpt = dir / "ckpt";
    // As soon as the process catches SIGTERM (its /proc status's SigCgt has bit 15; the handler
    // is installed first thing in main): in setup (plugins, datasets, the model) or in the first
    // iterations, the signal is kept either way. (Setup here is too short for this to tell the
    // old late handler apart.) A fixed delay instead can land before main, which a sanitizer
    // build's start-up takes longer than 0.1 s to reach.
    auto r = run_command(train_command(dir, data) +
                         " --train-iters 100000 --exit-signal-handler --save " + q(ckpt) +
                         " & p=$!; until [ $(( 0x$(awk '/^SigCgt/ {print $2}' /proc/$p/status"
                         " 2>/dev/null || echo 0) & 0x4000 )) -ne 0 ] || ! kill -0 $p 2>/dev/null;"
                         " do sleep 0.01; done; kill -TERM $p; wait $p");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("exiting program after receiving SIGTERM."), std::string::npos)
        << r.output;
    EXPECT_TRUE(fs::exists(ckpt / "latest_checkpointed_iteration.txt"));
    // Without the flag SIGTERM kills, as it does Megatron.
    r = run_command(train_command(dir, data) +
                    " --train-iters 100000 & p=$!; sleep 0.3; kill -TERM $p; wait $p");
    EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.output;
}

TEST(TrainCheckpoint, ATruncatedCheckpointIsAnErrorNamingTheFile) {
    TempDir dir;
    const std::string data = make_dataset(dir);
    const std::string base = train_command(dir, data) + " --train-iters 2";
    auto r = run_command(base + " --save " + q(dir / "c"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path file = dir / "c/iter_0000002/mp_rank_00/model_optim_rng.pt";
    fs::resize_file(file, fs::file_size(file) - 100);
    r = run_command(base + " --load " + q(dir / "c"));
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("cannot read checkpoint " + file.string()), std::string::npos)
        << r.output;
}

// --decoupled-lr: the embedding and output weights in param groups of their own (Megatron's
// is_decoupled_lr, with their own max_lr / min_lr) in both formats, which resume exactly.
TEST(TrainCheckpoint, DecoupledLrGroupsResumeExactly) {
    TempDir dir;
    const std::string data = make_dataset(dir);
    std::string base =
        train_command(dir, data) + " --train-iters 6 --decoupled-lr 3e-3 --decoupled-min-lr 2e-4";
    const std::string torch_format = " --ckpt-format torch";
    base.erase(base.find(torch_format), torch_format.size());
    auto full = run_command(base);
    ASSERT_EQ(full.exit_code, 0) << full.output;
    const auto expected = losses(full.output);
    for (const std::string format : {"torch", "torch_dist"}) {
        const fs::path ckpt = dir / format;
        expect_resumes_exactly(base, ckpt, format, expected);
        const mt::CheckpointState state =
            mt::Registry::global().create_checkpoint(format)->load(ckpt);
        ASSERT_TRUE(state.optimizer) << format;
        EXPECT_EQ(state.optimizer->decoupled_max_lr, 3e-3) << format;
        EXPECT_EQ(state.optimizer->decoupled_min_lr, 2e-4) << format;
        for (const mt::OptimizerParamState& p : state.optimizer->params)
            EXPECT_EQ(p.decoupled_lr, mt::megatron_embedding_or_output(p.name)) << p.name;
    }
}

}  // namespace

// MoE models (experts with their own axis in torch_dist; every layer MoE keeps the layers
// stacked, a --moe-layer-freq list keys each layer alone; grouped experts) resume exactly in both
// formats, the experts' Adam moments with them.
TEST(TrainCheckpoint, MoeModelsResumeExactlyInBothFormats) {
    TempDir dir;
    const std::string data = make_dataset(dir);
    std::string base = train_command(dir, data) +
                       " --train-iters 6 --num-experts 4 --moe-router-topk 2"
                       " --moe-ffn-hidden-size 24 --moe-aux-loss-coeff 1e-2 --disable-bias-linear";
    const std::string torch_format = " --ckpt-format torch";
    base.erase(base.find(torch_format), torch_format.size());
    // (--moe-grouped-gemm: TE's names, which torch_dist stores as SequentialMLP's.)
    int run = 0;
    for (const std::string pattern : {"", " --moe-layer-freq '[0,1]'", " --moe-grouped-gemm"}) {
        ++run;
        auto full = run_command(base + pattern);
        ASSERT_EQ(full.exit_code, 0) << full.output;
        const auto expected = losses(full.output);
        ASSERT_EQ(expected.size(), 6u) << full.output;
        for (const std::string format : {"torch", "torch_dist"})
            expect_resumes_exactly(base + pattern, dir / (format + std::to_string(run)), format,
                                   expected);
    }
}

// --use-checkpoint-args: a run given only the data, training and tokenizer-free flags takes the
// model (depth, sizes, SwiGLU, RMSNorm, no biases, dropout) from the --load checkpoint, as
// Megatron's load_args_from_checkpoint does, and resumes the uninterrupted run exactly; the
// checkpoint's dropout is taken over the flag's (Megatron forces it); without a checkpoint at
// --load the flags' model is built, as Megatron goes on with the given args.
TEST(TrainCheckpoint, UseCheckpointArgsTakesTheModelFromTheCheckpoint) {
    TempDir dir;
    const std::string data = make_dataset(dir);
    const fs::path vocab = mt::test::fixtures_dir() / "gpt2-tiny";
    const std::string run = mt::test::tool_path("megatron-train").string() +
                            " --micro-batch-size 2 --global-batch-size 4 --lr 1e-3 --min-lr 1e-4"
                            " --lr-decay-style cosine --lr-warmup-iters 1 --data-path " +
                            q(data) + " --split 98,1,1 --data-cache-path " + q(dir / "cache") +
                            " --log-interval 1 --eval-iters 0 --train-iters 6";
    const std::string model =
        " --num-layers 3 --hidden-size 16 --num-attention-heads 2 --seq-length 16 "
        "--ffn-hidden-size 40"
        " --max-position-embeddings 16 --swiglu --normalization RMSNorm --disable-bias-linear"
        " --hidden-dropout 0.2";
    const std::string tokenizer = " --tokenizer-type GPT2BPETokenizer --vocab-file " +
                                  q(vocab / "vocab.json") + " --merge-file " +
                                  q(vocab / "merges.txt");
    auto full = run_command(run + model + tokenizer);
    ASSERT_EQ(full.exit_code, 0) << full.output;
    const fs::path ckpt = dir / "ckpt";
    auto first = run_command(run + model + tokenizer + " --save " + q(ckpt) + " --exit-interval 3");
    ASSERT_EQ(first.exit_code, 0) << first.output;

    // The vocabulary files are the flags' (Megatron takes only the tokenizer's type and model).
    auto resumed = run_command(run + " --vocab-file " + q(vocab / "vocab.json") + " --merge-file " +
                               q(vocab / "merges.txt") +
                               " --hidden-dropout 0.5 --use-checkpoint-args --load " + q(ckpt));
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    const auto expected = losses(full.output), got = losses(resumed.output);
    ASSERT_EQ(got.size(), 3u) << resumed.output;
    for (int i = 4; i <= 6; ++i) EXPECT_EQ(got.at(i), expected.at(i)) << "iteration " << i;

    auto fresh = run_command(run + model + tokenizer + " --train-iters 2 --use-checkpoint-args" +
                             " --load " + q(dir / "none"));
    ASSERT_EQ(fresh.exit_code, 0) << fresh.output;
    EXPECT_NE(fresh.output.find("Checkpoint not found to provide arguments"), std::string::npos)
        << fresh.output;
}
