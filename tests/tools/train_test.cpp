// megatron-train through its binary on a small corpus preprocessed by megatron-preprocess with
// the committed GPT-2 tiny vocabulary: Megatron's log lines, evaluation, TensorBoard files,
// the exit conditions, and clear errors for what is not supported yet.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <tuple>

#include "mpiexec_launch.h"
#include "mt/checkpoint/checkpoint_directory.h"
#include "test_support.h"

namespace fs = std::filesystem;
using mt::test::run_command;
using mt::test::TempDir;

namespace {

std::string q(const fs::path& p) {
    return mt::test::shell_quote(p);
}

// `command` with each case's flags added fails (exit 1) with its message.
void expect_each_refused(const std::string& command,
                         const std::vector<std::pair<std::string, std::string>>& cases) {
    for (const auto& [flag, message] : cases) {
        auto bad = run_command(command + " " + flag);
        EXPECT_EQ(bad.exit_code, 1) << flag << "\n" << bad.output;
        EXPECT_NE(bad.output.find(message), std::string::npos) << flag << "\n" << bad.output;
    }
}

// The "lm loss: ..." of an iteration's log line ("" when it has none).
std::string loss_at(const std::string& log, int iteration) {
    const size_t at = log.find("iteration        " + std::to_string(iteration) + "/");
    const size_t loss = log.find("lm loss: ", at);
    return at == std::string::npos || loss == std::string::npos
               ? std::string()
               : log.substr(loss, log.find(' ', loss + 9) - loss);
}

// A corpus of numbered English sentences, tokenized into <dir>/corpus_text_document.
std::string make_dataset(const TempDir& dir) {
    std::string jsonl;
    for (int d = 0; d < 200; ++d) {
        std::string text;
        for (int s = 0; s < 6; ++s)
            text += "Sentence " + std::to_string(s) + " of document " + std::to_string(d) +
                    " talks about the number " + std::to_string(d * 7 % 13) + ". ";
        jsonl += "{\"text\": \"" + text + "\"}\n";
    }
    return mt::test::tiny_gpt2_dataset(dir, jsonl);
}

// A one-layer GPT on MockGPTDataset's ids (NullTokenizer), micro-batches of 2.
constexpr const char* kTinyMockModel =
    " --mock-data --tokenizer-type NullTokenizer --vocab-size 4096 --num-layers 1"
    " --hidden-size 32 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32"
    " --micro-batch-size 2";

std::string train_command(const TempDir& dir, const std::string& data) {
    fs::path vocab = mt::test::fixtures_dir() / "gpt2-tiny";
    return mt::test::tool_path("megatron-train").string() +
           " --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32"
           " --max-position-embeddings 32 --micro-batch-size 2 --global-batch-size 4"
           " --lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine --lr-warmup-iters 2"
           " --tokenizer-type GPT2BPETokenizer --vocab-file " +
           q(vocab / "vocab.json") + " --merge-file " + q(vocab / "merges.txt") + " --data-path " +
           q(data) + " --split 90,8,2 --data-cache-path " + q(dir / "cache") +
           " --attention-dropout 0 --hidden-dropout 0";
}

TEST(Train, TrainsWithMegatronsLogLinesEvaluationAndTensorBoard) {
    TempDir dir;
    std::string data = make_dataset(dir);
    auto r = run_command(train_command(dir, data) +
                         " --train-iters 8 --log-interval 2 --eval-interval 4 --eval-iters 2"
                         " --log-throughput --log-memory-to-tensorboard --tensorboard-dir " +
                         q(dir / "tb"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::regex line(
        R"( \[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] iteration        8/       8 \| consumed samples:           32 \| elapsed time per iteration \(ms\): [0-9.]+ \| throughput per GPU \(TFLOP/s/GPU\): [0-9.]+ \| learning rate: [0-9.]+E-0[0-9] \| global batch size:     4 \| lm loss: [0-9.]+E\+00 \| loss scale: 1\.0 \| grad norm: [0-9.]+ \| number of skipped iterations:   0 \| number of nan iterations:   0 \|)");
    EXPECT_TRUE(std::regex_search(r.output, line)) << r.output;
    EXPECT_NE(r.output.find(" validation loss at iteration 4 | lm loss value: "), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find(" validation loss at iteration 8 on validation set | "),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find(" validation loss at iteration 8 on test set | "), std::string::npos)
        << r.output;
    // The loss goes down from the first logged interval to the last.
    std::regex loss(R"(lm loss: ([0-9.]+E[-+][0-9]+) \|)");
    std::vector<double> losses;
    for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), loss);
         it != std::sregex_iterator(); ++it)
        losses.push_back(std::stod((*it)[1]));
    ASSERT_EQ(losses.size(), 4u) << r.output;
    EXPECT_LT(losses.back(), losses.front());
    // Megatron's report_memory, once, after the first logged iteration (resident set sizes).
    std::regex memory(
        R"(\[Rank 0\] \(after 2 iterations\) memory \(MB\) \| allocated: [0-9.]+ \| max allocated: [0-9.]+ \| reserved: [0-9.]+ \| max reserved: [0-9.]+\n)");
    EXPECT_TRUE(std::regex_search(r.output, memory)) << r.output;
    EXPECT_EQ(r.output.find("(after 4 iterations) memory"), std::string::npos);
    ASSERT_TRUE(fs::exists(dir / "tb"));
    EXPECT_FALSE(fs::is_empty(dir / "tb"));
    std::string events;
    for (const auto& e : fs::directory_iterator(dir / "tb"))
        events += mt::test::read_file(e.path());
    for (const char* tag : {"mem-allocated-bytes", "mem-max-allocated-bytes", "mem-reserved-bytes"})
        EXPECT_NE(events.find(tag), std::string::npos) << tag;
    // Megatron's index cache was written where --data-cache-path says.
    EXPECT_FALSE(fs::is_empty(dir / "cache"));

    // Same seed, same losses.
    auto again = run_command(train_command(dir, data) +
                             " --train-iters 8 --log-interval 2 --eval-interval 4 --eval-iters 2");
    ASSERT_EQ(again.exit_code, 0) << again.output;
    std::vector<double> losses2;
    for (auto it = std::sregex_iterator(again.output.begin(), again.output.end(), loss);
         it != std::sregex_iterator(); ++it)
        losses2.push_back(std::stod((*it)[1]));
    EXPECT_EQ(losses, losses2);
}

// The scalars of a TensorBoard event file: TFRecords (length, its CRC, an Event, its CRC) whose
// Event (wall_time 1, step 2, summary 5) holds Summary.Value (tag 1, simple_value 2).
struct Scalar {
    std::string tag;
    int64_t step = 0;
    float value = 0;
};
uint64_t varint(const std::string& b, size_t& at) {
    uint64_t v = 0;
    for (int shift = 0; at < b.size(); shift += 7) {
        const uint8_t byte = uint8_t(b[at++]);
        v |= uint64_t(byte & 0x7f) << shift;
        if (!(byte & 0x80)) break;
    }
    return v;
}
// The fields of one protobuf message: number -> (wire type, the varint or the bytes).
std::vector<std::tuple<int, uint64_t, std::string>> fields(const std::string& m) {
    std::vector<std::tuple<int, uint64_t, std::string>> out;
    for (size_t at = 0; at < m.size();) {
        const uint64_t key = varint(m, at);
        const int wire = int(key & 7);
        if (wire == 0) {
            out.emplace_back(int(key >> 3), varint(m, at), "");
        } else if (wire == 1 || wire == 5) {
            const size_t n = wire == 1 ? 8 : 4;
            out.emplace_back(int(key >> 3), wire, m.substr(at, n));
            at += n;
        } else {
            const uint64_t n = varint(m, at);
            out.emplace_back(int(key >> 3), wire, m.substr(at, n));
            at += n;
        }
    }
    return out;
}
std::vector<Scalar> tensorboard_scalars(const fs::path& dir) {
    std::vector<Scalar> out;
    for (const auto& e : fs::directory_iterator(dir)) {
        const std::string b = mt::test::read_file(e.path());
        for (size_t at = 0; at + 12 <= b.size();) {
            uint64_t n = 0;
            std::memcpy(&n, b.data() + at, 8);
            const std::string event = b.substr(at + 12, n);
            at += 12 + n + 4;
            int64_t step = 0;
            for (const auto& [number, v, bytes] : fields(event)) {
                if (number == 2) step = int64_t(v);
                if (number != 5) continue;
                for (const auto& [vn, vw, value] : fields(bytes)) {
                    if (vn != 1) continue;
                    Scalar s{"", step, 0};
                    for (const auto& [fn, fw, fb] : fields(value)) {
                        if (fn == 1) s.tag = fb;
                        if (fn == 2) std::memcpy(&s.value, fb.data(), 4);
                    }
                    out.push_back(s);
                }
            }
        }
    }
    return out;
}

// --moe-per-layer-logging: each layer's auxiliary loss as moe/<name>_layer_<i> for every layer
// of the model (a dense layer's 0), whose mean over the MoE layers is the loss logged.
TEST(Train, MoePerLayerLoggingWritesEachLayersAuxiliaryLoss) {
    TempDir dir;
    std::string data = make_dataset(dir);
    auto r = run_command(train_command(dir, data) +
                         " --num-layers 3 --num-experts 4 --moe-router-topk 2"
                         " --moe-aux-loss-coeff 0.01 --moe-layer-freq '[0,1,1]'"
                         " --train-iters 3 --log-interval 1 --eval-iters 0"
                         " --moe-per-layer-logging --tensorboard-dir " +
                         q(dir / "tb"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::map<std::pair<std::string, int64_t>, float> scalars;
    for (const Scalar& s : tensorboard_scalars(dir / "tb")) scalars[{s.tag, s.step}] = s.value;
    const auto at = [&](const std::string& tag, int64_t step) {
        return scalars.count({tag, step}) ? scalars.at({tag, step}) : -1.0f;
    };
    for (int64_t step = 1; step <= 3; ++step) {
        SCOPED_TRACE(step);
        const std::string name = "moe/load_balancing_loss_layer_";
        EXPECT_EQ(at(name + "0", step), 0.0f);   // the dense layer
        EXPECT_EQ(at(name + "3", step), -1.0f);  // none past the model's layers
        const float one = at(name + "1", step), two = at(name + "2", step);
        EXPECT_GT(one, 0.0f);
        EXPECT_GT(two, 0.0f);
        EXPECT_NEAR(at("load_balancing_loss", step), (one + two) / 2, 1e-6 * (one + two));
    }
}

TEST(Train, ExitIntervalAndUnsupportedFlags) {
    TempDir dir;
    std::string data = make_dataset(dir);
    auto r = run_command(train_command(dir, data) +
                         " --train-iters 10 --log-interval 1 --eval-iters 0 --exit-interval 3");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("iteration        3/      10"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("iteration        4/      10"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("exiting program at iteration 3"), std::string::npos) << r.output;

    // --timing-log-level 1: Megatron's level-1 timers after each logged line, not level 2's.
    auto timed =
        run_command(train_command(dir, data) +
                    " --train-iters 3 --log-interval 1 --eval-iters 0 --timing-log-level 1");
    ASSERT_EQ(timed.exit_code, 0) << timed.output;
    EXPECT_NE(timed.output.find("(min, max) time across ranks (ms):\n    forward-backward ....."),
              std::string::npos)
        << timed.output;
    EXPECT_NE(timed.output.find("    optimizer ......"), std::string::npos) << timed.output;
    EXPECT_EQ(timed.output.find("forward-compute"), std::string::npos) << timed.output;

    expect_each_refused(
        train_command(dir, data) + " --train-iters 2",
        {{"--save " + q(dir / "ckpt") + " --ckpt-format zarr", "unknown checkpoint 'zarr'"},
         {"--fp16 --bf16", "--bf16 and --fp16 exclude each other"},
         {"--tensor-model-parallel-size 2",
          "the world size (1 ranks) is not a multiple of --tensor-model-parallel-size (2) x "
          "--pipeline-model-parallel-size (1) x --context-parallel-size (1) = 2; start the "
          "run with mpirun -np N (or srun)"},
         {"--pipeline-model-parallel-size 2",
          "the world size (1 ranks) is not a multiple of --tensor-model-parallel-size (1) x "
          "--pipeline-model-parallel-size (2) x --context-parallel-size (1) = 2"},
         {"--expert-model-parallel-size 2",
          "the world size (1 ranks) is not a multiple of --expert-tensor-parallel-size (1) x "
          "--expert-model-parallel-size (2) x --pipeline-model-parallel-size (1) = 2"},
         {"--normalization BatchNorm", "--normalization BatchNorm: supported are"}});
    // argparse with Megatron's allow_abbrev=False: no abbreviations, and a repeated flag (a
    // model flag or a multi-value one) takes its last value.
    auto abbreviated = run_command(train_command(dir, data) + " --train-iters 2 --log-inter 1");
    EXPECT_EQ(abbreviated.exit_code, 2) << abbreviated.output;
    // --tokenizer-type left out: pretrain_gpt.py's default, GPT2BPETokenizer.
    std::string untyped = train_command(dir, data);
    untyped.erase(untyped.find(" --tokenizer-type GPT2BPETokenizer"),
                  std::string(" --tokenizer-type GPT2BPETokenizer").size());
    auto repeated = run_command(untyped +
                                " --train-iters 4 --log-interval 1 --eval-iters 0 --num-layers 9"
                                " --num-layers 2 --data-path /nonexistent --data-path " +
                                q(data) + " --lr 5 --lr 1e-3");
    EXPECT_EQ(repeated.exit_code, 0) << repeated.output;
    EXPECT_NE(repeated.output.find("learning rate: 5.000000E-04"), std::string::npos)
        << repeated.output;
    auto usage = run_command(mt::test::tool_path("megatron-train").string() + " --help");
    EXPECT_EQ(usage.exit_code, 0);
    for (const char* flag : {"--num-layers", "--micro-batch-size", "--lr-decay-style",
                             "--data-path", "--tensorboard-dir", "--swiglu", "--tokenizer-type"})
        EXPECT_NE(usage.output.find(flag), std::string::npos) << flag;
}

// --fp8-format with --fp8-recipe tensorwise (mt/nn/fp8.h; the numbers are checked in
// GptTraining.Fp8* and Fp8.*): training changes the losses, a resumed run repeats the
// uninterrupted one's (current scaling keeps no state), and what is not emulated is refused by
// name.
TEST(Train, Fp8TensorwiseTrainsAndResumes) {
    TempDir dir;
    const std::string tool = mt::test::tool_path("megatron-train").string();
    const std::string flags = std::string(kTinyMockModel) +
                              " --num-layers 2 --global-batch-size 4 --lr 1e-3 --train-iters 4"
                              " --log-interval 1 --eval-iters 0 --bf16";
    const std::string fp8 = " --fp8-format hybrid --fp8-recipe tensorwise";
    auto bf16 = run_command(tool + flags);
    ASSERT_EQ(bf16.exit_code, 0) << bf16.output;
    // Plain, and with FP8 parameters (requantized from the distributed optimizer's f32 main
    // params after each step, which a resumed run restores).
    for (const std::string variant : {"", " --use-distributed-optimizer --fp8-param-gather"}) {
        const fs::path ckpt = dir / ("ckpt" + std::to_string(variant.size()));
        auto whole = run_command(tool + flags + fp8 + variant + " --save " + q(ckpt) +
                                 " --save-interval 2");
        ASSERT_EQ(whole.exit_code, 0) << whole.output;
        EXPECT_NE(loss_at(whole.output, 1), loss_at(bf16.output, 1)) << whole.output;
        mt::test::write_file(ckpt / "latest_checkpointed_iteration.txt", "2");
        auto resumed = run_command(tool + flags + fp8 + variant + " --load " + q(ckpt));
        ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
        for (int it : {3, 4}) {
            EXPECT_FALSE(loss_at(resumed.output, it).empty()) << resumed.output;
            EXPECT_EQ(loss_at(resumed.output, it), loss_at(whole.output, it)) << variant << it;
        }
    }
    expect_each_refused(
        tool + flags,
        {{" --fp8-format hybrid --fp8-recipe custom",
          "--fp8-recipe custom: not supported yet: FP8 with a custom recipe"},
         {fp8 + " --fp8-param-gather",
          "--fp8-param-gather only supported with distributed optimizer"},
         {fp8 + " --num-experts 2", "not supported yet: FP8 in MoE models"},
         {" --fp8-format e5m2 --fp8-recipe tensorwise", "--fp8-format e5m2: supported are"},
         {fp8 + " --recompute-granularity selective --recompute-modules layernorm",
          "moe_act and layernorm recompute cannot work with fp8."},
         {fp8 + " --first-last-layers-bf16 --num-layers-at-start-in-bf16 3",
          "--num-layers-at-start-in-bf16 (3) must be between 0 and number of layers per "
          "pipeline stage (2)"}});
    // Megatron's local layers are not Transformer Engine's: no FP8 GEMM, the bf16 losses.
    const std::string local = " --transformer-impl local";
    auto local_bf16 = run_command(tool + flags + local);
    auto local_fp8 = run_command(tool + flags + local + fp8);
    ASSERT_EQ(local_fp8.exit_code, 0) << local_fp8.output;
    EXPECT_NE(local_fp8.output.find("no GEMM runs in FP8"), std::string::npos) << local_fp8.output;
    EXPECT_EQ(loss_at(local_fp8.output, 4), loss_at(local_bf16.output, 4));
}

// --fp8-recipe delayed (Megatron's default recipe): trains, with FP8 parameters too, apart from
// tensorwise; its refusals name what is missing, and a checkpointing run says that the scaling
// state is not saved. mxfp8 and blockwise train.
TEST(Train, Fp8DelayedAndBlockScaledRecipesTrain) {
    TempDir dir;
    const std::string tool = mt::test::tool_path("megatron-train").string();
    const std::string flags = std::string(kTinyMockModel) +
                              " --num-layers 2 --global-batch-size 4 --lr 1e-3 --train-iters 3"
                              " --log-interval 1 --eval-iters 0 --bf16 --fp8-format hybrid";
    auto delayed = run_command(tool + flags +
                               " --fp8-amax-history-len 16"
                               " --fp8-amax-compute-algo max --fp8-margin 0"
                               " --save " +
                               q(dir / "ckpt"));
    ASSERT_EQ(delayed.exit_code, 0) << delayed.output;
    EXPECT_NE(delayed.output.find("iteration        3/"), std::string::npos) << delayed.output;
    EXPECT_NE(delayed.output.find("checkpoints do not hold the FP8 scaling state"),
              std::string::npos)
        << delayed.output;
    // With FP8 parameters (quantized from the distributed optimizer's f32 main params with
    // each weight's delayed scale).
    auto gathered = run_command(tool + flags + " --use-distributed-optimizer --fp8-param-gather");
    ASSERT_EQ(gathered.exit_code, 0) << gathered.output;
    EXPECT_NE(gathered.output.find("iteration        3/"), std::string::npos) << gathered.output;
    // The block-scaled recipes train too (the tiny model's dimensions are multiples of 32).
    for (const std::string recipe : {"mxfp8", "blockwise"}) {
        auto blocks = run_command(tool + flags + " --fp8-recipe " + recipe);
        ASSERT_EQ(blocks.exit_code, 0) << recipe << "\n" << blocks.output;
    }
    auto tensorwise = run_command(tool + flags + " --fp8-recipe tensorwise");
    ASSERT_EQ(tensorwise.exit_code, 0) << tensorwise.output;
    EXPECT_FALSE(loss_at(delayed.output, 1).empty()) << delayed.output;
    EXPECT_NE(loss_at(delayed.output, 1), loss_at(tensorwise.output, 1));
    expect_each_refused(
        tool + flags,
        {{" --first-last-layers-bf16",
          "Delayed scaling does not support first / last layer in BF16."},
         {" --recompute-granularity full --recompute-method uniform --recompute-num-layers 1",
          "not supported yet: FP8's delayed scaling with recomputed linears"},
         {" --fp8-amax-compute-algo mean", "--fp8-amax-compute-algo"},
         {" --fp8-recipe mxfp8 --use-distributed-optimizer --fp8-param-gather",
          "not supported yet: FP8 parameters in blocks"},
         {" --fp8-amax-history-len 0", "--fp8-amax-history-len must be positive"}});
}

// --mock-data: Megatron's MockGPTDataset instead of files (its even split, so all three
// evaluations run); it is one data source among --data-path and the per-split paths.
TEST(Train, MockData) {
    TempDir dir;
    const std::string tool = mt::test::tool_path("megatron-train").string();
    const std::string flags = std::string(kTinyMockModel) +
                              " --lr 1e-3 --train-iters 3 --log-interval 1 --eval-interval 3"
                              " --eval-iters 1";
    // With two more of Megatron's training flags: the decoupled rate gets its own log field.
    auto r = run_command(tool + flags + " --calculate-per-token-loss --decoupled-lr 2e-3");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("iteration        3/       3"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("| decoupled learning rate: "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("validation loss at iteration 3 on test set"), std::string::npos)
        << r.output;
    // --exit-on-missing-checkpoint: an empty --load ends the run before training (exit 0).
    auto missing =
        run_command(tool + flags + " --load " + q(dir.path()) + " --exit-on-missing-checkpoint");
    EXPECT_EQ(missing.exit_code, 0) << missing.output;
    EXPECT_NE(missing.output.find(">> '--exit-on-missing-checkpoint' set ... exiting. <<"),
              std::string::npos)
        << missing.output;
    EXPECT_EQ(missing.output.find("iteration        1/"), std::string::npos) << missing.output;
    // A learning rate that blows the model up: Megatron's NaN check stops the run; with
    // --no-check-for-nan-in-loss-and-grad it goes on and the log counts the NaN iterations.
    const std::string blow_up = " --lr 1e37 --clip-grad 0 --train-iters 4 --log-interval 4";
    auto stopped = run_command(tool + flags + blow_up);
    EXPECT_EQ(stopped.exit_code, 1) << stopped.output;
    EXPECT_NE(stopped.output.find("NaN or Inf in the loss at iteration"), std::string::npos)
        << stopped.output;
    auto on = run_command(tool + flags + blow_up + " --no-check-for-nan-in-loss-and-grad");
    EXPECT_EQ(on.exit_code, 0) << on.output;
    EXPECT_NE(on.output.find("grad norm: nan | number of skipped iterations:   0 | number of "
                             "nan iterations:   3 |"),
              std::string::npos)
        << on.output;
    // --rampup-batch-size 2 2 16 to a global batch of 8 over --train-samples 48: Megatron's
    // RampupBatchsizeNumMicroBatches (2, 2, 2, 4, 4, 6, then 8: 9 iterations by its
    // update_train_iters), the schedule counted in samples.
    std::string by_samples = flags;
    by_samples.erase(by_samples.find(" --train-iters 3"), std::string(" --train-iters 3").size());
    auto ramp = run_command(tool + by_samples +
                            " --global-batch-size 8 --rampup-batch-size 2 2 16 --train-samples 48"
                            " --eval-iters 0");
    ASSERT_EQ(ramp.exit_code, 0) << ramp.output;
    std::string sizes;
    static const std::regex batch(R"(iteration +\d+/ +9 \|.*global batch size: +(\d+) \|)");
    for (auto it = std::sregex_iterator(ramp.output.begin(), ramp.output.end(), batch);
         it != std::sregex_iterator(); ++it)
        sizes += (*it)[1].str() + " ";
    EXPECT_EQ(sizes, "2 2 2 4 4 6 8 8 8 ") << ramp.output;
    EXPECT_NE(ramp.output.find("consumed samples:            2 |"), std::string::npos);
    EXPECT_NE(ramp.output.find("learning rate: 9.583333E-04"), std::string::npos) << ramp.output;
    auto by_iterations =
        run_command(tool + flags + " --global-batch-size 8 --rampup-batch-size 2 2 16");
    EXPECT_NE(
        by_iterations.output.find("expected no batch-size rampup for iteration-based training"),
        std::string::npos)
        << by_iterations.output;
    // --skip-train: the final evaluations of the model as it is.
    auto skipped = run_command(tool + flags + " --skip-train");
    EXPECT_EQ(skipped.exit_code, 0) << skipped.output;
    EXPECT_NE(skipped.output.find("skipping training (--skip-train is on) ...\n"),
              std::string::npos)
        << skipped.output;
    EXPECT_EQ(skipped.output.find("iteration        1/"), std::string::npos) << skipped.output;
    EXPECT_NE(skipped.output.find("validation loss at iteration 0 on test set"), std::string::npos)
        << skipped.output;
    auto both = run_command(tool + flags + " --data-path " + q(dir / "x"));
    EXPECT_EQ(both.exit_code, 1) << both.output;
    EXPECT_NE(both.output.find("give exactly one data source"), std::string::npos) << both.output;
}

// core_v0.19's batch-size schedule and checkpoint retention: --step-batch-size-schedule
// "0:2 64:4, 0.2k:8" counts tokens (32 a sample: batches of 2, 4 and 8 from 0, 2 and 6 samples),
// which over --train-samples 30 megatron-core's StepBatchsizeNumMicroBatchesCalculator runs as
// 2, 4, 8, 8, 8 (5 iterations; core_v0.19, update_train_iters' loop:
//   c = StepBatchsizeNumMicroBatchesCalculator(2, 1, False, 1, "0:2 64:4, 0.2k:8", 32)
//   n = 0; while n < 30: c.update(n, False); print(c.get_current_global_batch_size());
//   n += c.get_current_global_batch_size()
// ); --save-retain-interval 2 deletes each previous save but the even ones (checkpointing.py's
// iter_finalize_fn).
TEST(Train, StepBatchSizeScheduleAndSaveRetainInterval) {
    TempDir dir;
    const std::string tool = mt::test::tool_path("megatron-train").string();
    const std::string flags =
        std::string(kTinyMockModel) + " --lr 1e-3 --log-interval 1 --eval-iters 0";
    const std::string save = " --save " + q(dir / "ckpt") + " --save-interval 1";
    auto stepped = run_command(tool + flags + save +
                               " --train-samples 30 --step-batch-size-schedule '0:2 64:4, 0.2k:8'"
                               " --save-retain-interval 2");
    ASSERT_EQ(stepped.exit_code, 0) << stepped.output;
    std::string sizes;
    static const std::regex batch(R"(iteration +\d+/ +5 \|.*global batch size: +(\d+) \|)");
    for (auto it = std::sregex_iterator(stepped.output.begin(), stepped.output.end(), batch);
         it != std::sregex_iterator(); ++it)
        sizes += (*it)[1].str() + " ";
    EXPECT_EQ(sizes, "2 4 8 8 8 ") << stepped.output;
    // Linear decay over the 30 samples, as the samples are consumed.
    EXPECT_NE(stepped.output.find("learning rate: 9.333333E-04"), std::string::npos)
        << stepped.output;
    EXPECT_NE(stepped.output.find("consumed samples:           30 |"), std::string::npos)
        << stepped.output;
    for (int iteration = 1; iteration <= 5; ++iteration) {
        const bool kept = iteration % 2 == 0 || iteration == 5;
        EXPECT_EQ(std::filesystem::exists(dir / "ckpt" / mt::iteration_dir_name(iteration)), kept)
            << iteration;
    }
    EXPECT_NE(stepped.output.find("  successfully deleted checkpoint from iteration       3 at "),
              std::string::npos)
        << stepped.output;
    // Megatron's refusals: a schedule beside --global-batch-size, a first threshold above 0,
    // a retention interval that is no multiple of --save-interval.
    auto both = run_command(
        tool + flags + " --train-iters 2 --global-batch-size 4 --step-batch-size-schedule 0:2");
    EXPECT_NE(both.exit_code, 0);
    EXPECT_NE(both.output.find("Cannot specify both --step-batch-size-schedule and "
                               "--global-batch-size"),
              std::string::npos)
        << both.output;
    auto late = run_command(tool + flags + " --train-iters 2 --step-batch-size-schedule 64:2");
    EXPECT_NE(late.exit_code, 0);
    EXPECT_NE(late.output.find("the first threshold must be 0 (in samples of 32 tokens), got 2"),
              std::string::npos)
        << late.output;
    auto odd = run_command(tool + flags + " --train-iters 2 --save " + q(dir / "other") +
                           " --save-interval 2 --save-retain-interval 3");
    EXPECT_NE(odd.exit_code, 0);
    EXPECT_NE(odd.output.find("--save-retain-interval (3) must be a positive multiple of "
                              "--save-interval"),
              std::string::npos)
        << odd.output;
}

// --verify-integrity (core_v0.19, torch_dist): each save writes integrity.json beside the
// checkpoint's files (megatron-core's manifest, tests/unit/checkpoint), a resume re-hashes them
// first and stops naming a file that changed.
TEST(Train, VerifyIntegrityWritesAndChecksTheManifest) {
    TempDir dir;
    const std::string tool = mt::test::tool_path("megatron-train").string();
    const std::string flags = std::string(kTinyMockModel) +
                              " --lr 1e-3 --log-interval 1 --eval-iters 0"
                              " --override-opt_param-scheduler --verify-integrity"
                              " --save-interval 2 --save " +
                              q(dir / "ckpt") + " --load " + q(dir / "ckpt");
    auto first = run_command(tool + flags + " --train-iters 2");
    ASSERT_EQ(first.exit_code, 0) << first.output;
    const fs::path saved = dir / "ckpt" / "iter_0000002";
    ASSERT_TRUE(fs::exists(saved / "integrity.json")) << first.output;
    EXPECT_NE(mt::test::read_file(saved / "integrity.json").find("\"common.pt\": \""),
              std::string::npos);
    auto resumed = run_command(tool + flags + " --train-iters 4");
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    EXPECT_NE(resumed.output.find("iteration        3/       4"), std::string::npos)
        << resumed.output;
    // The save at 4 is checked next: one changed byte in its common state stops the resume.
    const fs::path common = dir / "ckpt" / "iter_0000004" / "common.pt";
    std::string bytes = mt::test::read_file(common);
    bytes[bytes.size() / 2] ^= 1;
    mt::test::write_file(common, bytes);
    auto broken = run_command(tool + flags + " --train-iters 6");
    EXPECT_NE(broken.exit_code, 0) << broken.output;
    EXPECT_NE(broken.output.find("Checkpoint integrity verification failed for 1 file(s)"),
              std::string::npos)
        << broken.output;
    EXPECT_NE(broken.output.find("common.pt: hash mismatch"), std::string::npos) << broken.output;
    auto torch = run_command(tool + flags + " --train-iters 2 --ckpt-format torch");
    EXPECT_NE(torch.exit_code, 0);
    EXPECT_NE(torch.output.find("`verify_integrity` is only supported with torch_dist checkpoint "
                                "format."),
              std::string::npos)
        << torch.output;
}

// --eval-micro-batch-size / --eval-global-batch-size (core_v0.19): evaluation reads its own
// batches. Untrained (--skip-train), evaluating 8 samples in micro-batches of 1 gives the loss
// of evaluating them as a global batch of 8 in micro-batches of 2.
TEST(Train, EvaluationBatchSizes) {
    TempDir dir;
    const std::string tool = mt::test::tool_path("megatron-train").string();
    const std::string flags =
        std::string(kTinyMockModel) + " --lr 1e-3 --train-iters 2 --eval-iters 2 --skip-train";
    static const std::regex loss(
        R"(validation loss at iteration 0 on test set \| lm loss value: ([0-9.E+-]+))");
    const auto test_loss = [&](const std::string& more) {
        auto r = run_command(tool + flags + more);
        EXPECT_EQ(r.exit_code, 0) << r.output;
        std::smatch m;
        EXPECT_TRUE(std::regex_search(r.output, m, loss)) << r.output;
        return m.empty() ? 0.0 : std::stod(m[1]);
    };
    const double own =
        test_loss(" --global-batch-size 4 --eval-global-batch-size 8 --eval-micro-batch-size 1");
    const double trained = test_loss(" --global-batch-size 8");
    EXPECT_NEAR(own, trained, 1e-6 * trained);
    EXPECT_NE(own, test_loss(" --global-batch-size 4"));  // 4 samples an iteration: others
    auto r = run_command(tool + flags + " --global-batch-size 4 --eval-global-batch-size 3");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("eval_global_batch_size (3) must be divisible by "
                            "eval_micro_batch_size (2) * data_parallel_size (1)"),
              std::string::npos)
        << r.output;
}

// --iterations-to-skip (1-based, as core_v0.19): the skipped iteration reads past its batch
// with no update and no log line; the next one trains on the batch it would have had (with no
// learning rate and no dropout: the loss of the run that skips nothing), the log and the
// checkpoint count the skipped samples, and a resumed run goes on counting them.
TEST(Train, IterationsToSkip) {
    TempDir dir;
    const std::string tool = mt::test::tool_path("megatron-train").string();
    const std::string flags = std::string(kTinyMockModel) +
                              " --lr 0 --train-iters 4 --log-interval 1 --eval-iters 0"
                              " --global-batch-size 4 --hidden-dropout 0 --attention-dropout 0";
    const fs::path save = dir.path() / "ckpt";
    auto skipping = run_command(tool + flags + " --iterations-to-skip 2 --save " + q(save) +
                                " --save-interval 4");
    ASSERT_EQ(skipping.exit_code, 0) << skipping.output;
    auto plain = run_command(tool + flags);
    ASSERT_EQ(plain.exit_code, 0) << plain.output;
    static const std::regex line(R"(iteration +(\d+)/ +\d+ \| consumed samples: +(\d+) \|(?: )"
                                 R"(skipped samples: +(\d+) \|)?.*lm loss: ([0-9.E+-]+))");
    struct Line {
        std::string consumed, skipped, loss;
    };
    const auto lines = [](const std::string& output) {
        std::map<int, Line> out;
        for (auto it = std::sregex_iterator(output.begin(), output.end(), line);
             it != std::sregex_iterator(); ++it)
            out[std::stoi((*it)[1])] = {(*it)[2], (*it)[3], (*it)[4]};
        return out;
    };
    const auto skipped = lines(skipping.output), all = lines(plain.output);
    EXPECT_EQ(skipped.count(2), 0u) << skipping.output;
    ASSERT_EQ(skipped.count(3), 1u) << skipping.output;
    ASSERT_EQ(all.count(3), 1u) << plain.output;
    EXPECT_EQ(skipped.at(3).loss, all.at(3).loss);
    EXPECT_EQ(skipped.at(1).skipped, "");
    EXPECT_EQ(skipped.at(3).skipped, "4");
    EXPECT_EQ(skipped.at(4).consumed, "16");
    EXPECT_EQ(all.at(3).skipped, "");
    auto resumed = run_command(tool + flags + " --load " + q(save) +
                               " --train-iters 5 --override-opt_param-scheduler");
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    const auto after = lines(resumed.output);
    ASSERT_EQ(after.count(5), 1u) << resumed.output;
    EXPECT_EQ(after.at(5).skipped, "4");
    EXPECT_EQ(after.at(5).consumed, "20");
    auto zero = run_command(tool + flags + " --iterations-to-skip 0");
    EXPECT_NE(zero.exit_code, 0);
    EXPECT_NE(zero.output.find("--iterations-to-skip: iterations count from 1, got 0"),
              std::string::npos)
        << zero.output;
}

// Megatron's re-run engine (--rerun-mode validate_results): results that pass change nothing;
// a NaN loss (a learning rate that blows the model up) is re-run, repeats, and the run saves
// the state before the step and exits 16; an injected transient error is not repeated by the
// re-run: exit 17, nothing saved. Under mpirun the ranks agree (the injecting rank's line).
TEST(Train, RerunEngineValidatesResults) {
    TempDir dir;
    const std::string tool = mt::test::tool_path("megatron-train").string();
    const std::string flags =
        std::string(kTinyMockModel) + " --lr 1e-3 --train-iters 3 --log-interval 1 --eval-iters 0";
    static const std::regex loss(R"(lm loss: ([0-9.E+-]+))");
    const auto losses = [](const std::string& output) {
        std::vector<std::string> out;
        for (auto it = std::sregex_iterator(output.begin(), output.end(), loss);
             it != std::sregex_iterator(); ++it)
            out.push_back((*it)[1]);
        return out;
    };
    auto plain = run_command(tool + flags);
    ASSERT_EQ(plain.exit_code, 0) << plain.output;
    auto checked = run_command(tool + flags +
                               " --rerun-mode validate_results --check-for-spiky-loss"
                               " --check-for-large-grads");
    ASSERT_EQ(checked.exit_code, 0) << checked.output;
    EXPECT_EQ(losses(checked.output), losses(plain.output));
    EXPECT_EQ(losses(plain.output).size(), 3u) << plain.output;
    EXPECT_NE(checked.output.find("WARNING:megatron.core.rerun_state_machine:Result validation "
                                  "enabled"),
              std::string::npos)
        << checked.output;

    const fs::path save = dir.path() / "ckpt";
    auto blown = run_command(tool + flags +
                             " --lr 1e37 --clip-grad 0 --rerun-mode validate_results --save " +
                             q(save) + " --save-interval 100");
    EXPECT_EQ(blown.exit_code, 16) << blown.output;
    for (const char* line :
         {"ERROR:megatron.core.rerun_state_machine:Unexpected result nan on rank 0 at iteration "
          "#2 invocation #1 (message='found NaN in local forward loss calculation')",
          "Need to rerun step to check reproducibility of initial result",
          "iteration #2: First rerun: unexpected result is reproducible within the tolerance "
          "(nan = nan). Need to rerun on a different GPU to verify correctness.!",
          "Saving a checkpoint and exiting now."})
        EXPECT_NE(blown.output.find(line), std::string::npos) << line << "\n" << blown.output;
    EXPECT_EQ(mt::test::read_file(save / "latest_checkpointed_iteration.txt"), "1");
    EXPECT_TRUE(fs::exists(save / "iter_0000001"));
    EXPECT_FALSE(fs::exists(save / "iter_0000002"));

    const fs::path none = dir.path() / "none";
    const std::string transient =
        " --rerun-mode validate_results --error-injection-rate 1"
        " --error-injection-type transient_error --save " +
        q(none) + " --save-interval 100";
    auto injected = run_command(tool + flags + transient);
    EXPECT_EQ(injected.exit_code, 17) << injected.output;
    for (const char* line :
         {"WARNING:megatron.core.rerun_state_machine:Injecting error type Transient error",
          "iteration #2: Possible transient error!!",
          "Exiting now. The job can be resumed from a previous checkpoint"})
        EXPECT_NE(injected.output.find(line), std::string::npos) << line << "\n" << injected.output;
    EXPECT_FALSE(fs::exists(none / "latest_checkpointed_iteration.txt"));
    EXPECT_NE(injected.output.find("iteration        1/"), std::string::npos) << injected.output;
    EXPECT_EQ(injected.output.find("iteration        2/"), std::string::npos) << injected.output;

    if (!mt::test::mpiexec_available()) GTEST_SKIP() << "built without MPI: no 2-rank run";
    // Data parallel: each bucket's local grad norm is checked before the reduction too.
    auto dp2 = run_command(mt::test::mpiexec_prefix(2) + tool + flags +
                           " --global-batch-size 4 --rerun-mode validate_results");
    ASSERT_EQ(dp2.exit_code, 0) << dp2.output;
    EXPECT_EQ(losses(dp2.output).size(), 3u) << dp2.output;
    auto dp2_injected = run_command(mt::test::mpiexec_prefix(2) + tool + flags +
                                    " --global-batch-size 4" + transient);
    EXPECT_NE(dp2_injected.exit_code, 0) << dp2_injected.output;
    EXPECT_NE(dp2_injected.output.find("Possible transient error!!"), std::string::npos)
        << dp2_injected.output;
    EXPECT_EQ(dp2_injected.output.find("iteration        2/"), std::string::npos)
        << dp2_injected.output;
}

}  // namespace
