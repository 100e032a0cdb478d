// megatron-train under mpirun through its binary: TP2 x DP2 with sequence parallelism and the
// distributed optimizer, CP2 and TP2 x CP2 print the one-process loss curve (once, on the last
// rank); a checkpoint
// saved at TP2 x DP2 resumes at TP1 with the uninterrupted one-process losses and the reverse,
// in both formats (torch_dist written by every rank, the distributed optimizer's state as
// megatron-core's fully_sharded_model_space; torch with distrib_optim.pt); the ranks
// agree on when to stop; an error stops every rank with the rank named; MoE models under expert
// parallelism print the one-process numbers and their checkpoints resume across layouts;
// sliding-window attention with sinks split over tensor and pipeline ranks gives the one-process
// losses;
// Hugging Face Qwen folders converted to a split checkpoint fine-tune there with a falling loss.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <tuple>

#include "mpiexec_launch.h"
#include "test_support.h"

namespace fs = std::filesystem;
using mt::test::run_command;
using mt::test::TempDir;

namespace {

std::string q(const fs::path& p) {
    return mt::test::shell_quote(p);
}

std::string make_dataset(const TempDir& dir) {
    std::string jsonl;
    for (int d = 0; d < 120; ++d)
        jsonl += "{\"text\": \"Document " + std::to_string(d) + " says " +
                 std::to_string(d * 7 % 13) + " and then " + std::to_string(d % 5) +
                 " again, twice over, and once more for the " + std::to_string(d % 3) +
                 " readers.\"}\n";
    return mt::test::tiny_gpt2_dataset(dir, jsonl);
}

// Llama style: RMSNorm, SwiGLU (whose fc1 a tensor rank holds as two boxes of the whole), GQA,
// RoPE, untied output.
const char* kLlama =
    " --normalization RMSNorm --swiglu --ffn-hidden-size 64 --group-query-attention"
    " --num-query-groups 2 --disable-bias-linear --position-embedding-type rope"
    " --untie-embeddings-and-output-weights";

// Dropout off: tensor-parallel ranks draw their own dropout masks. The padded vocabulary is a
// multiple of --make-vocab-size-divisible-by x tp (Megatron's rule), 256 rows at TP1 and TP2.
std::string train(const TempDir& dir, const std::string& data, int ranks, int tp) {
    const fs::path vocab = mt::test::fixtures_dir() / "gpt2-tiny";
    std::string launcher = ranks > 1 ? mt::test::mpiexec_prefix(ranks) : std::string();
    std::string cmd = launcher + mt::test::tool_path("megatron-train").string() +
                      " --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16"
                      " --max-position-embeddings 16 --micro-batch-size 2 --global-batch-size 8"
                      " --lr 3e-3 --min-lr 1e-4 --lr-decay-style cosine --lr-warmup-iters 1"
                      " --hidden-dropout 0 --attention-dropout 0 --tokenizer-type GPT2BPETokenizer"
                      " --vocab-file " +
                      q(vocab / "vocab.json") + " --merge-file " + q(vocab / "merges.txt") +
                      " --data-path " + q(data) + " --split 98,1,1 --data-cache-path " +
                      q(dir / "cache") + " --log-interval 1 --eval-iters 0 --train-iters 6";
    if (tp > 1)
        cmd += " --tensor-model-parallel-size " + std::to_string(tp) +
               " --sequence-parallel --make-vocab-size-divisible-by " + std::to_string(256 / tp);
    else
        cmd += " --make-vocab-size-divisible-by 256";
    if (ranks > tp) cmd += " --use-distributed-optimizer --overlap-grad-reduce";
    return cmd;
}

// iteration -> lm loss, each printed once.
std::map<int, double> losses(const std::string& output) {
    static const std::regex line(R"(iteration +(\d+)/ +\d+ \|.*\| lm loss: ([0-9.E+-]+) \|)");
    std::map<int, double> out;
    for (auto it = std::sregex_iterator(output.begin(), output.end(), line);
         it != std::sregex_iterator(); ++it) {
        const int iteration = std::stoi((*it)[1]);
        EXPECT_EQ(out.count(iteration), 0u) << "iteration " << iteration << " printed twice";
        out[iteration] = std::stod((*it)[2]);
    }
    return out;
}

void expect_same(const std::map<int, double>& got, const std::map<int, double>& want,
                 const std::string& output) {
    ASSERT_FALSE(got.empty()) << output;
    for (const auto& [iteration, loss] : got) {
        ASSERT_TRUE(want.count(iteration)) << iteration;
        EXPECT_NEAR(loss, want.at(iteration), 1e-5 * want.at(iteration))
            << "iteration " << iteration << "\n"
            << output;
    }
}

// The six losses of `command`, a megatron-train command line that must run to its end.
std::map<int, double> curve(const std::string& command) {
    auto r = run_command(command);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const auto got = losses(r.output);
    EXPECT_EQ(got.size(), 6u) << r.output;
    return got;
}

// `command` (another layout) runs to its end and prints `want`'s six losses.
void expect_curve(const std::string& command, const std::map<int, double>& want) {
    auto r = run_command(command);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto got = losses(r.output);
    EXPECT_EQ(got.size(), 6u) << r.output;
    expect_same(got, want, r.output);
}

// `saving` (a megatron-train command line) saves at iteration 3 to `dir` and stops; `resuming`
// loads it and must print `want`'s losses for iterations 4 to 6.
void expect_resumes(const std::string& saving, const std::string& resuming, const fs::path& dir,
                    const std::map<int, double>& want) {
    auto save = run_command(saving + " --save " + q(dir) + " --save-interval 3 --exit-interval 3");
    ASSERT_EQ(save.exit_code, 0) << save.output;
    auto resumed = run_command(resuming + " --load " + q(dir));
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    const auto got = losses(resumed.output);
    EXPECT_EQ(got.size(), 3u) << resumed.output;
    expect_same(got, want, resumed.output);
}

class ParallelTrain : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!mt::test::mpiexec_available()) GTEST_SKIP() << "built without MPI";
        data_ = make_dataset(dir_);
        auto single = run_command(train(dir_, data_, 1, 1));
        ASSERT_EQ(single.exit_code, 0) << single.output;
        single_ = losses(single.output);
        ASSERT_EQ(single_.size(), 6u) << single.output;
    }
    TempDir dir_;
    std::string data_;
    std::map<int, double> single_;
};

TEST_F(ParallelTrain, TensorSequenceDataParallelGiveTheOneProcessLosses) {
    auto r = run_command(train(dir_, data_, 4, 2));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto got = losses(r.output);
    EXPECT_EQ(got.size(), 6u) << r.output;
    expect_same(got, single_, r.output);
}

// FP8's delayed scaling (--fp8-recipe delayed, a history of 4, max): the amaxes are reduced over
// the tensor- and data-parallel ranks before each scale update (Transformer Engine's amax
// reduction group), so TP2 with sequence parallelism, whose row-parallel inputs, weights and
// gradients each rank quantizes in part, scales them as one process does and gives its losses;
// PP2 updates each stage's own.
TEST_F(ParallelTrain, Fp8DelayedScalingGivesTheOneProcessLossesSplit) {
    const std::string fp8 =
        " --fp8-format hybrid --fp8-amax-history-len 4"
        " --fp8-amax-compute-algo max";
    const auto want = curve(train(dir_, data_, 1, 1) + fp8);
    ASSERT_EQ(want.size(), 6u);
    // Not the curve without FP8: the GEMMs did run in FP8.
    EXPECT_NE(want.at(2), single_.at(2));
    expect_curve(train(dir_, data_, 2, 2) + fp8, want);
    expect_curve(train(dir_, data_, 2, 1) + fp8 + " --pipeline-model-parallel-size 2", want);
}

// Sliding-window attention (--window-size, the second layer full by --window-attn-skip-freq 2)
// with learned attention sinks (--softmax-type learnable, split with the heads): TP2 x DP2 with
// sequence parallelism and PP2 (each stage's layers windowed by their number in the whole
// model) give the one-process losses.
TEST_F(ParallelTrain, SlidingWindowAndSinksGiveTheOneProcessLossesSplit) {
    const std::string flags = std::string(kLlama) +
                              " --window-size '(3, 0)' --window-attn-skip-freq 2"
                              " --softmax-type learnable";
    const auto want = curve(train(dir_, data_, 1, 1) + flags);
    ASSERT_EQ(want.size(), 6u);
    // The window and the sinks change the model: not the full-attention curve.
    EXPECT_NE(want.at(6), curve(train(dir_, data_, 1, 1) + kLlama).at(6));
    for (const std::string& layout :
         {train(dir_, data_, 4, 2), train(dir_, data_, 2, 1) + " --pipeline-model-parallel-size 2"})
        expect_curve(layout + flags, want);
}

// --log-params-norm and --log-num-zeros-in-grad (Megatron's calc_params_l2_norm and
// count_zeros_fp32): the same numbers at TP2 x DP2 with SP and the distributed optimizer as in
// one process, each element counted once.
TEST_F(ParallelTrain, ParamsNormAndZeroGradsAreTheOneProcessNumbers) {
    // Untied (Llama style): the input embedding's unused rows get zero gradients.
    const std::string flags = std::string(kLlama) + " --log-params-norm --log-num-zeros-in-grad";
    auto one = run_command(train(dir_, data_, 1, 1) + flags);
    ASSERT_EQ(one.exit_code, 0) << one.output;
    auto wide = run_command(train(dir_, data_, 4, 2) + flags);
    ASSERT_EQ(wide.exit_code, 0) << wide.output;
    static const std::regex line(
        R"(iteration +(\d+)/.*num zeros: ([0-9.]+) \| params norm: ([0-9.]+) \|)");
    auto stats = [&](const std::string& out) {
        std::map<int, std::pair<double, double>> m;
        for (auto it = std::sregex_iterator(out.begin(), out.end(), line);
             it != std::sregex_iterator(); ++it)
            m[std::stoi((*it)[1])] = {std::stod((*it)[2]), std::stod((*it)[3])};
        return m;
    };
    const auto want = stats(one.output), got = stats(wide.output);
    ASSERT_EQ(want.size(), 6u) << one.output;
    ASSERT_EQ(got.size(), 6u) << wide.output;
    for (const auto& [iteration, w] : want) {
        EXPECT_EQ(got.at(iteration).first, w.first) << "num zeros at iteration " << iteration;
        EXPECT_GT(w.first, 0) << "unused embedding rows have zero gradients";
        EXPECT_NEAR(got.at(iteration).second, w.second, 2e-3)
            << "params norm at iteration " << iteration;  // printed to 3 decimals
    }
}

// A Llama-style MoE (4 experts, top-2, load-balancing and z losses): expert parallelism over 2
// ranks (with the distributed optimizer for the dense weights, overlapped), EP2 x TP2 with each
// expert whole (--expert-tensor-parallel-size 1) or split over the tensor ranks, by the allgather
// and the alltoall dispatcher, and EP4, print the one-process lm loss, routers' losses, grad
// norm, params norm and zero count at every iteration.
TEST_F(ParallelTrain, ExpertParallelGivesTheOneProcessNumbers) {
    const std::string moe = std::string(kLlama) +
                            " --num-experts 4 --moe-router-topk 2 --moe-ffn-hidden-size 32"
                            " --moe-aux-loss-coeff 1e-2 --moe-z-loss-coeff 1e-3"
                            " --log-params-norm --log-num-zeros-in-grad";
    static const std::regex line(
        R"(iteration +(\d+)/.*lm loss: ([0-9.E+-]+) \| load_balancing_loss: ([0-9.E+-]+) \| )"
        R"(z_loss: ([0-9.E+-]+) \|.*grad norm: ([0-9.]+) \| num zeros: ([0-9.]+) \| )"
        R"(params norm: ([0-9.]+) \|)");
    auto numbers = [&](const std::string& out) {
        std::map<int, std::vector<double>> m;
        for (auto it = std::sregex_iterator(out.begin(), out.end(), line);
             it != std::sregex_iterator(); ++it)
            for (size_t k = 2; k <= 7; ++k) m[std::stoi((*it)[1])].push_back(std::stod((*it)[k]));
        return m;
    };
    auto one = run_command(train(dir_, data_, 1, 1) + moe);
    ASSERT_EQ(one.exit_code, 0) << one.output;
    const auto want = numbers(one.output);
    ASSERT_EQ(want.size(), 6u) << one.output;
    for (const auto& [ranks, layout] :
         {std::pair{2, " --expert-model-parallel-size 2"},
          std::pair{4, " --expert-model-parallel-size 2 --expert-tensor-parallel-size 1"},
          std::pair{4, " --expert-model-parallel-size 2"},
          std::pair{4, " --expert-model-parallel-size 2 --moe-token-dispatcher-type alltoall"},
          std::pair{4,
                    " --expert-model-parallel-size 4 --expert-tensor-parallel-size 1"
                    " --moe-token-dispatcher-type alltoall"}}) {
        auto r = run_command(train(dir_, data_, ranks, ranks / 2) + moe + layout);
        ASSERT_EQ(r.exit_code, 0) << layout << "\n" << r.output;
        const auto got = numbers(r.output);
        ASSERT_EQ(got.size(), 6u) << r.output;
        for (const auto& [iteration, w] : want)
            for (size_t k = 0; k < w.size(); ++k)  // printed to 7 digits, norms to 3 decimals
                EXPECT_NEAR(got.at(iteration)[k], w[k], 1e-5 * w[k] + (k >= 3 ? 2e-3 : 0.0))
                    << layout << ": number " << k << " at iteration " << iteration;
    }
    // Tensor parallelism without sequence parallelism is refused, as Megatron's MoELayer does.
    std::string no_sp = train(dir_, data_, 2, 2) + moe;
    no_sp.erase(no_sp.find(" --sequence-parallel"), std::string(" --sequence-parallel").size());
    auto r = run_command(no_sp);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("MoE layers with tensor parallelism need --sequence-parallel"),
              std::string::npos)
        << r.output;
}

// --moe-router-enable-expert-bias (sigmoid routing, DeepSeek-V3's bias moved after every
// iteration by the tokens each expert got, counted over the tensor- and data-parallel ranks):
// EP2 and EP2 x TP2 (sequence shards) print the one-process losses, which differ from those of
// a bias that stays 0; the bias is saved and restored (torch and torch_dist from EP2, torch from
// the distributed optimizer at DP2, each resumed in one process).
// A hybrid model with a Mamba layer and a MoE layer (core_v0.19's 'E'): expert parallelism,
// and tensor parallelism of both layers with it, print the one-process numbers.
TEST_F(ParallelTrain, HybridMoeLayersGiveTheOneProcessNumbers) {
    const std::string hybrid =
        " --model hybrid --hybrid-layer-pattern ME --mamba-state-dim 8 --mamba-head-dim 8"
        " --mamba-num-groups 2 --normalization RMSNorm --disable-bias-linear"
        " --position-embedding-type none --untie-embeddings-and-output-weights"
        " --num-experts 4 --moe-router-topk 2 --moe-ffn-hidden-size 32 --moe-aux-loss-coeff 1e-2";
    static const std::regex line(
        R"(iteration +(\d+)/.*lm loss: ([0-9.E+-]+) \| load_balancing_loss: ([0-9.E+-]+) \|.*)"
        R"(grad norm: ([0-9.]+) \|)");
    auto numbers = [&](const std::string& out) {
        std::map<int, std::vector<double>> m;
        for (auto it = std::sregex_iterator(out.begin(), out.end(), line);
             it != std::sregex_iterator(); ++it)
            for (size_t k = 2; k <= 4; ++k) m[std::stoi((*it)[1])].push_back(std::stod((*it)[k]));
        return m;
    };
    auto one = run_command(train(dir_, data_, 1, 1) + hybrid);
    ASSERT_EQ(one.exit_code, 0) << one.output;
    const auto want = numbers(one.output);
    ASSERT_EQ(want.size(), 6u) << one.output;
    for (const auto& [ranks, tp] : {std::pair{2, 1}, std::pair{4, 2}}) {
        auto r =
            run_command(train(dir_, data_, ranks, tp) + hybrid + " --expert-model-parallel-size 2");
        ASSERT_EQ(r.exit_code, 0) << ranks << " ranks, tp " << tp << "\n" << r.output;
        const auto got = numbers(r.output);
        ASSERT_EQ(got.size(), 6u) << r.output;
        for (const auto& [iteration, w] : want)
            for (size_t k = 0; k < w.size(); ++k)
                EXPECT_NEAR(got.at(iteration)[k], w[k], 1e-5 * w[k] + (k == 2 ? 2e-3 : 0.0))
                    << ranks << " ranks, tp " << tp << ": number " << k << " at iteration "
                    << iteration;
    }
}

// A core_v0.19 run whose distributed optimizer's state core_v0.19's default bucket layout is not
// written for here (a Mamba mixer's, --hybrid-layer-pattern being core_v0.19's flag; SGD's
// momentum) saves it in the other layout core_v0.19 loads, fully_reshardable, says why, and
// resumes from it.
TEST_F(ParallelTrain, DistributedOptimizerSavesFullyReshardableWhereBucketsAreNotWritten) {
    const std::string hybrid =
        " --model hybrid --hybrid-layer-pattern M- --mamba-state-dim 8 --mamba-head-dim 8"
        " --mamba-num-groups 2 --normalization RMSNorm --disable-bias-linear"
        " --position-embedding-type none --untie-embeddings-and-output-weights";
    const std::string sgd = " --optimizer sgd --fused-residual-rmsnorm";
    for (const auto& [name, flags, why] :
         {std::tuple{"hybrid", hybrid, "(its place among Megatron's parameters)"},
          std::tuple{"sgd", sgd, "state of the sgd optimizer"}}) {
        const fs::path ckpt = dir_ / (std::string(name) + "_fr");
        const std::string run = train(dir_, data_, 2, 1) + flags;
        auto saved =
            run_command(run + " --save " + q(ckpt) + " --save-interval 3 --exit-interval 3");
        ASSERT_EQ(saved.exit_code, 0) << saved.output;
        EXPECT_NE(saved.output.find("saved in core_v0.19's fully_reshardable layout, not its "
                                    "default dp_reshardable (not supported yet"),
                  std::string::npos)
            << saved.output;
        EXPECT_NE(saved.output.find(why), std::string::npos) << saved.output;
        const std::string index = mt::test::read_file(ckpt / "iter_0000003" / ".metadata");
        EXPECT_NE(index.find("optimizer.state."), std::string::npos) << name;
        EXPECT_EQ(index.find("optimizer.distributed."), std::string::npos) << name;
        auto resumed = run_command(run + " --load " + q(ckpt));
        ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
        EXPECT_EQ(losses(resumed.output).size(), 3u) << resumed.output;
    }
}

// core_v0.19's '|' in --hybrid-layer-pattern: each segment a pipeline stage's model chunk
// (uneven stages "M|*-M", and virtual stages "M|*|-|M": stage 0 holds layers 0 and 2, and
// TP2 x PP2), each giving the one-process losses; checkpoints saved with virtual stages (torch)
// and at TP2 x PP2 (torch_dist) resume in one process.
TEST_F(ParallelTrain, HybridPipelineSegmentsGiveTheOneProcessLosses) {
    const std::string hybrid =
        " --model hybrid --mamba-state-dim 8 --mamba-head-dim 8 --mamba-num-groups 2"
        " --normalization RMSNorm --disable-bias-linear --position-embedding-type none"
        " --untie-embeddings-and-output-weights --hybrid-layer-pattern ";
    auto command = [&](int ranks, const std::string& pattern, int tp = 1) {
        std::string c = train(dir_, data_, ranks, tp) + hybrid + "'" + pattern + "'";
        c.replace(c.find(" --num-layers 2"), std::string(" --num-layers 2").size(),
                  " --num-layers 4");
        if (ranks > 1) c += " --pipeline-model-parallel-size 2";
        return c;
    };
    auto one = run_command(command(1, "M*-M"));
    ASSERT_EQ(one.exit_code, 0) << one.output;
    const auto want = losses(one.output);
    ASSERT_EQ(want.size(), 6u) << one.output;
    for (const std::string pattern : {"M|*-M", "M|*|-|M"}) {
        auto r = run_command(command(2, pattern));
        ASSERT_EQ(r.exit_code, 0) << pattern << "\n" << r.output;
        EXPECT_EQ(losses(r.output).size(), 6u) << r.output;
        expect_same(losses(r.output), want, r.output);
    }
    expect_resumes(command(2, "M|*|-|M") + " --ckpt-format torch", command(1, "M*-M"),
                   dir_ / "segments", want);
    // TP2 x PP2 (the Mamba layers split by heads and groups, uneven stages), and its torch_dist
    // checkpoint resumed in one process.
    auto tp_pp = run_command(command(4, "M|*-M", 2));
    ASSERT_EQ(tp_pp.exit_code, 0) << tp_pp.output;
    expect_same(losses(tp_pp.output), want, tp_pp.output);
    expect_resumes(command(4, "M|*-M", 2), command(1, "M*-M"), dir_ / "tp_pp", want);
    // Megatron's checks: the segments divide over the stages, and give the virtual stages.
    auto r = run_command(command(2, "M|*|-M"));
    EXPECT_NE(r.output.find("must be evenly divisible by --pipeline-model-parallel-size (2)"),
              std::string::npos)
        << r.output;
    r = run_command(command(2, "M|*|-|M") + " --num-virtual-stages-per-pipeline-rank 2");
    EXPECT_NE(r.output.find("its '|' segments give the virtual stages"), std::string::npos)
        << r.output;
    // One stage: Megatron's segments become virtual stages its no-pipelining schedule refuses.
    r = run_command(command(1, "M|*-M"));
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("non-pipeline-parallel schedule does not support model chunking"),
              std::string::npos)
        << r.output;
}

TEST_F(ParallelTrain, ExpertBiasGivesTheOneProcessLossesAndResumes) {
    const std::string moe = std::string(kLlama) +
                            " --num-experts 4 --moe-router-topk 2 --moe-ffn-hidden-size 32"
                            " --moe-aux-loss-coeff 1e-2 --moe-router-score-function sigmoid"
                            " --moe-router-enable-expert-bias --moe-router-bias-update-rate 2e-2";
    const std::string one = train(dir_, data_, 1, 1) + moe;
    auto full = run_command(one);
    ASSERT_EQ(full.exit_code, 0) << full.output;
    const auto want = losses(full.output);
    ASSERT_EQ(want.size(), 6u) << full.output;
    auto still = run_command(one + " --moe-router-bias-update-rate 0");
    ASSERT_EQ(still.exit_code, 0) << still.output;
    EXPECT_GT(std::fabs(losses(still.output).at(6) - want.at(6)), 1e-4 * want.at(6))
        << "the expert bias changes nothing";
    for (const auto& [ranks, tp] : {std::pair{2, 1}, std::pair{4, 2}}) {
        auto r =
            run_command(train(dir_, data_, ranks, tp) + moe + " --expert-model-parallel-size 2");
        ASSERT_EQ(r.exit_code, 0) << r.output;
        const auto got = losses(r.output);
        EXPECT_EQ(got.size(), 6u) << r.output;
        expect_same(got, want, r.output);
    }
    // (The torch format keeps a MoE model's optimizer state without the distributed optimizer.)
    std::string ep2 = train(dir_, data_, 2, 1) + moe + " --expert-model-parallel-size 2";
    const std::string dist = " --use-distributed-optimizer --overlap-grad-reduce";
    ep2.erase(ep2.find(dist), dist.size());
    for (const std::string format : {"torch", "torch_dist"}) {
        const std::string fmt = " --ckpt-format " + format;
        expect_resumes(ep2 + fmt, one + fmt, dir_ / (format + "_bias"), want);
    }
    // The distributed optimizer's distrib_optim.pt holds no state of the buffer.
    const std::string dp2 = train(dir_, data_, 2, 1) + moe + " --ckpt-format torch";
    expect_resumes(dp2, one + " --ckpt-format torch", dir_ / "torch_bias_dp2", want);
}

// GPT-OSS's MoE as core_v0.19 builds it: biases everywhere (the router's, each expert's fc1 and
// fc2, attention's), quick GeGLU experts with --glu-linear-offset and
// --activation-func-clamp-value, learned sinks: EP2, TP2 x EP2 with whole experts, and TP2 with
// the experts split over the tensor ranks give the one-process losses; an EP2 torch_dist
// checkpoint (the experts' numbered biases on Megatron's expert axis) resumes in one process
// with them.
TEST_F(ParallelTrain, BiasedQuickGegluExpertsGiveTheOneProcessLossesAndResume) {
    const std::string moe =
        " --normalization RMSNorm --position-embedding-type rope --group-query-attention"
        " --num-query-groups 2 --untie-embeddings-and-output-weights --softmax-type learnable"
        " --num-experts 4 --moe-router-topk 2 --moe-ffn-hidden-size 32 --moe-grouped-gemm"
        " --moe-aux-loss-coeff 1e-2 --quick-geglu --glu-linear-offset 1.0"
        " --activation-func-clamp-value 7.0 --ffn-hidden-size 64";
    const std::string one = train(dir_, data_, 1, 1) + moe;
    const auto want = curve(one);
    ASSERT_EQ(want.size(), 6u);
    EXPECT_LT(want.at(6), want.at(1));
    for (const auto& [ranks, tp] : {std::pair{2, 1}, std::pair{4, 2}})
        expect_curve(train(dir_, data_, ranks, tp) + moe +
                         " --expert-model-parallel-size 2 --expert-tensor-parallel-size 1",
                     want);
    const std::string fmt = " --ckpt-format torch_dist";
    expect_resumes(train(dir_, data_, 2, 1) + moe + " --expert-model-parallel-size 2" + fmt,
                   one + fmt, dir_ / "gpt_oss_moe", want);
    // Each expert split over the tensor ranks (--expert-tensor-parallel-size 2): fc1's bias split
    // with its columns, fc2's added once to the partial sums, by both dispatchers.
    for (const char* dispatcher : {"allgather", "alltoall"})
        expect_curve(train(dir_, data_, 2, 2) + moe + " --moe-token-dispatcher-type " + dispatcher,
                     want);
}

// MoE checkpoints of expert-parallel runs: EP2 (each rank its experts) saves Megatron's layout in
// both formats (torch: an mp_rank_00_00E file per expert-parallel rank, each with its experts'
// state in the chained optimizer; torch_dist: every rank its experts' pieces) and resumes at EP2
// and in one process with the one-process losses; torch_dist also from EP2 x TP2 with whole
// experts (--expert-tensor-parallel-size 1) and with the distributed optimizer.
TEST_F(ParallelTrain, ExpertParallelCheckpointsResumeAcrossLayouts) {
    const std::string moe = std::string(kLlama) +
                            " --num-experts 4 --moe-router-topk 2 --moe-ffn-hidden-size 32"
                            " --moe-aux-loss-coeff 1e-2";
    auto without_distributed_optimizer = [](std::string cmd) {
        const std::string dist = " --use-distributed-optimizer --overlap-grad-reduce";
        if (auto at = cmd.find(dist); at != std::string::npos) cmd.erase(at, dist.size());
        return cmd;
    };
    const std::string one = train(dir_, data_, 1, 1) + moe;
    auto full = run_command(one);
    ASSERT_EQ(full.exit_code, 0) << full.output;
    const auto want = losses(full.output);
    ASSERT_EQ(want.size(), 6u) << full.output;
    const std::string ep2 = without_distributed_optimizer(train(dir_, data_, 2, 1)) + moe +
                            " --expert-model-parallel-size 2";
    for (const std::string format : {"torch", "torch_dist"}) {
        const std::string fmt = " --ckpt-format " + format;
        expect_resumes(ep2 + fmt, ep2 + fmt, dir_ / (format + "_ep2"), want);
        if (format == "torch")
            EXPECT_TRUE(fs::exists(dir_ / "torch_ep2/iter_0000003/mp_rank_00_001"));
        expect_resumes(ep2 + fmt, one + fmt, dir_ / (format + "_ep2_to_1"), want);
    }
    const std::string etp1 = train(dir_, data_, 4, 2) + moe +
                             " --expert-model-parallel-size 2 --expert-tensor-parallel-size 1";
    expect_resumes(without_distributed_optimizer(etp1) + " --ckpt-format torch_dist", one,
                   dir_ / "etp1", want);
    // The distributed optimizer (the dense state sharded over the data-parallel ranks, the
    // experts' over the expert-data-parallel ranks, each rank writing its ranges of
    // megatron-core's fully_sharded_model_space), in torch_dist: at EP2 (chained) and at EP1
    // over DP2, resumed there and in one process. The torch format's distrib_optim.pt: at EP1
    // over DP2 one buffer, resumed there, in one process and at EP2; at EP2 Megatron's chained
    // list in each expert-parallel rank's file (the dense state in rank 0's), resumed there and
    // in one process. With --dist-ckpt-optim-fully-reshardable the state is gathered into
    // core_v0.19's per-parameter layout instead, resumed the same ways; and a run given a flag
    // only core_v0.19 has (a script for it) keeps core_v0.19's default, the buckets, each
    // data-parallel rank writing its range (its chained parts' keys behind "chained_<i>.").
    const std::string dist_ep2 = train(dir_, data_, 2, 1) + moe + " --expert-model-parallel-size 2";
    const std::string dist_dp2 = train(dir_, data_, 2, 1) + moe;
    const std::string fr = " --dist-ckpt-optim-fully-reshardable";
    const std::string v019 = " --fused-residual-rmsnorm";
    for (const auto& [name, run] :
         {std::pair{"dist_ep2", dist_ep2}, std::pair{"dist_dp2", dist_dp2},
          std::pair{"dist_ep2_fr", dist_ep2 + fr}, std::pair{"dist_dp2_fr", dist_dp2 + fr},
          std::pair{"dist_ep2_dpr", dist_ep2 + v019}, std::pair{"dist_dp2_dpr", dist_dp2 + v019}}) {
        expect_resumes(run + " --ckpt-format torch_dist", run, dir_ / name, want);
        expect_resumes(run + " --ckpt-format torch_dist", one, dir_ / (std::string(name) + "_to_1"),
                       want);
        // (The DCP index names each stored tensor; the expert chain's keys are plain there.)
        const std::string index = mt::test::read_file(dir_ / name / "iter_0000003" / ".metadata");
        const bool fully_reshardable = run.ends_with(fr), buckets = run.ends_with(v019);
        EXPECT_EQ(index.find("optimizer.state.param.decoder") != std::string::npos,
                  fully_reshardable)
            << name;
        EXPECT_EQ(index.find("optimizer.state.fp32_param.") != std::string::npos,
                  !fully_reshardable && !buckets)
            << name;
        EXPECT_EQ(
            index.find("optimizer.distributed.dp_group_idx_0.gbuf_idx_0") != std::string::npos,
            buckets)
            << name;
        EXPECT_EQ(index.find("chained_1.") != std::string::npos,
                  name == std::string("dist_ep2") || name == std::string("dist_ep2_dpr"))
            << name;
    }
    const std::string torch_dp2 = dist_dp2 + " --ckpt-format torch";
    expect_resumes(torch_dp2, torch_dp2, dir_ / "torch_dp2", want);
    EXPECT_TRUE(fs::exists(dir_ / "torch_dp2/iter_0000003/mp_rank_00/distrib_optim.pt"));
    expect_resumes(torch_dp2, one + " --ckpt-format torch", dir_ / "torch_dp2_to_1", want);
    expect_resumes(torch_dp2, dist_ep2 + " --ckpt-format torch", dir_ / "torch_dp2_to_ep2", want);
    const std::string torch_ep2 = dist_ep2 + " --ckpt-format torch";
    expect_resumes(torch_ep2, torch_ep2, dir_ / "torch_ep2", want);
    for (const char* rank : {"mp_rank_00_000", "mp_rank_00_001"})
        EXPECT_TRUE(fs::exists(dir_ / "torch_ep2/iter_0000003" / rank / "distrib_optim.pt"));
    expect_resumes(torch_ep2, one + " --ckpt-format torch", dir_ / "torch_ep2_to_1", want);
}

TEST_F(ParallelTrain, CheckpointsResumeAcrossLayouts) {
    // (torch_dist_v019: a flag only core_v0.19 has, so the distributed optimizer's state is kept
    // in its default layout, the gradient buffers' buckets, which reshard on load too.)
    for (const std::string format : {"torch_dist", "torch", "torch_dist_v019"}) {
        const bool v019 = format == "torch_dist_v019";
        const std::string fmt = v019 ? " --ckpt-format torch_dist --fused-residual-rmsnorm"
                                     : " --ckpt-format " + format;
        // TP2 x DP2 -> TP1.
        const fs::path wide = dir_ / (std::string("wide_") + format);
        auto save = run_command(train(dir_, data_, 4, 2) + fmt + " --save " + q(wide) +
                                " --save-interval 3 --exit-interval 3");
        ASSERT_EQ(save.exit_code, 0) << save.output;
        if (format != "torch") {
            // Each tensor rank's data-parallel rank 0 (global ranks 0 and 1) writes its model
            // pieces, and every rank the distributed optimizer's ranges it updates.
            const fs::path iter = wide / "iter_0000003";
            for (const char* file :
                 {"__0_0.distcp", "__1_0.distcp", "__2_0.distcp", "__3_0.distcp"})
                EXPECT_TRUE(fs::exists(iter / file)) << file;
            const std::string index = mt::test::read_file(iter / ".metadata");
            EXPECT_EQ(
                index.find("optimizer.distributed.dp_group_idx_1.gbuf_idx_0") != std::string::npos,
                v019);
        }
        if (format == "torch") {
            EXPECT_TRUE(fs::exists(wide / "iter_0000003" / "mp_rank_00" / "model_optim_rng.pt"));
            EXPECT_TRUE(fs::exists(wide / "iter_0000003" / "mp_rank_01" / "model_optim_rng.pt"));
            // The distributed optimizer's state in Megatron's file beside each rank's.
            EXPECT_TRUE(fs::exists(wide / "iter_0000003" / "mp_rank_00" / "distrib_optim.pt"));
            EXPECT_TRUE(fs::exists(wide / "iter_0000003" / "mp_rank_01" / "distrib_optim.pt"));
        }
        auto narrow = run_command(train(dir_, data_, 1, 1) + fmt + " --load " + q(wide));
        ASSERT_EQ(narrow.exit_code, 0) << narrow.output;
        auto resumed = losses(narrow.output);
        EXPECT_EQ(resumed.size(), 3u) << narrow.output;
        expect_same(resumed, single_, narrow.output);

        // TP1 -> TP2 x DP2.
        const fs::path one = dir_ / (std::string("one_") + format);
        auto save1 = run_command(train(dir_, data_, 1, 1) + fmt + " --save " + q(one) +
                                 " --save-interval 3 --exit-interval 3");
        ASSERT_EQ(save1.exit_code, 0) << save1.output;
        auto back = run_command(train(dir_, data_, 4, 2) + fmt + " --load " + q(one));
        ASSERT_EQ(back.exit_code, 0) << back.output;
        auto resumed_wide = losses(back.output);
        EXPECT_EQ(resumed_wide.size(), 3u) << back.output;
        expect_same(resumed_wide, single_, back.output);
    }
}

// --fim-data on two pipeline stages: each stage's dataset draws the same permutations (the first
// reads the tokens, the last the labels), so the losses and evaluations are the one process's.
// (Over data-parallel ranks they are not, as in Megatron: each rank's loader workers draw for the
// samples that rank reads.)
TEST_F(ParallelTrain, FillInTheMiddleSamplesAgreeAcrossPipelineStages) {
    const std::string fim =
        " --fim-data --fim-rate 0.9 --fim-spm-rate 0.5 --eval-iters 2"
        " --eval-interval 3";
    static const std::regex eval_line(R"(lm loss value: ([0-9.E+-]+))");
    auto evaluations = [](const std::string& out) {
        std::vector<std::string> v;
        for (auto it = std::sregex_iterator(out.begin(), out.end(), eval_line);
             it != std::sregex_iterator(); ++it)
            v.push_back((*it)[1]);
        return v;
    };
    auto one = run_command(train(dir_, data_, 1, 1) + fim);
    ASSERT_EQ(one.exit_code, 0) << one.output;
    const auto want = losses(one.output);
    ASSERT_EQ(want.size(), 6u) << one.output;
    EXPECT_NE(one.output.find("GPTFIMDataset"), std::string::npos) << one.output;
    EXPECT_NE(want, single_) << "the samples were not permuted";
    auto staged = run_command(train(dir_, data_, 2, 1) + " --pipeline-model-parallel-size 2" + fim);
    ASSERT_EQ(staged.exit_code, 0) << staged.output;
    expect_same(losses(staged.output), want, staged.output);
    EXPECT_EQ(evaluations(staged.output), evaluations(one.output)) << staged.output;
    EXPECT_EQ(evaluations(one.output).size(), 4u) << one.output;
}

// core_v0.19's bucket layout saved by two distributed-optimizer instances over four data-parallel
// ranks (each instance's ranks hold the same shards; the first's are written) resumes in one
// process with the one-process losses.
TEST_F(ParallelTrain, DpReshardableOfSeveralOptimizerInstancesResumes) {
    const std::string instances = train(dir_, data_, 4, 1) +
                                  " --num-distributed-optimizer-instances 2 "
                                  "--fused-residual-rmsnorm --ckpt-format torch_dist";
    expect_resumes(instances, train(dir_, data_, 1, 1), dir_ / "instances", single_);
    const std::string index =
        mt::test::read_file(dir_ / "instances" / "iter_0000003" / ".metadata");
    EXPECT_NE(index.find("optimizer.distributed.dp_group_idx_0.gbuf_idx_0"), std::string::npos);
}

// --context-parallel-size 2 (each sequence in four chunks, two per rank, attention as a ring):
// CP2 with the distributed optimizer sharded over the two ranks, and TP2 x CP2 with sequence
// parallelism, GPT-2 and Llama style, give the one-process losses; a CP2 checkpoint resumes in
// one process with them, in both formats.
TEST_F(ParallelTrain, ContextParallelGivesTheOneProcessLossesAndResumesAtOneRank) {
    const std::string cp = " --context-parallel-size 2";
    for (const std::string style : {std::string(), std::string(kLlama)}) {
        const auto want = style.empty() ? single_ : [&] {
            auto one = run_command(train(dir_, data_, 1, 1) + style);
            EXPECT_EQ(one.exit_code, 0) << one.output;
            return losses(one.output);
        }();
        for (auto [ranks, tp] : {std::pair{2, 1}, std::pair{4, 2}}) {
            auto r = run_command(train(dir_, data_, ranks, tp) + style + cp);
            ASSERT_EQ(r.exit_code, 0) << r.output;
            const auto got = losses(r.output);
            EXPECT_EQ(got.size(), 6u) << r.output;
            expect_same(got, want, r.output);
        }
    }
    for (const char* format : {"torch_dist", "torch"}) {
        const std::string fmt = std::string(" --ckpt-format ") + format;
        expect_resumes(train(dir_, data_, 2, 1) + cp + fmt, train(dir_, data_, 1, 1) + fmt,
                       dir_ / (std::string("cp_") + format), single_);
    }
}

// A hybrid model (a Mamba layer, an attention layer, an MLP) under --context-parallel-size 2:
// the Mamba mixer's convolution and scan run along the whole sequence the ranks gather, and CP2
// and TP2 x CP2 print the one-process losses and grad norms (the mixer's own parameters' grads
// counted once: a rank adding them twice moves the third decimal of every norm).
TEST_F(ParallelTrain, MambaContextParallelGivesTheOneProcessNumbers) {
    const std::string hybrid =
        " --model hybrid --hybrid-layer-pattern 'M*-' --mamba-state-dim 8 --mamba-head-dim 8"
        " --mamba-num-groups 2 --normalization RMSNorm --disable-bias-linear"
        " --position-embedding-type rope --untie-embeddings-and-output-weights";
    static const std::regex norm_line(R"(iteration +(\d+)/.*\| grad norm: ([0-9.]+) \|)");
    auto norms = [](const std::string& out) {
        std::map<int, std::string> m;
        for (auto it = std::sregex_iterator(out.begin(), out.end(), norm_line);
             it != std::sregex_iterator(); ++it)
            m[std::stoi((*it)[1])] = (*it)[2];
        return m;
    };
    auto one = run_command(train(dir_, data_, 1, 1) + hybrid);
    ASSERT_EQ(one.exit_code, 0) << one.output;
    const auto want = losses(one.output);
    ASSERT_EQ(want.size(), 6u) << one.output;
    ASSERT_EQ(norms(one.output).size(), 6u) << one.output;
    for (auto [ranks, tp] : {std::pair{2, 1}, std::pair{4, 2}}) {
        auto r = run_command(train(dir_, data_, ranks, tp) + hybrid + " --context-parallel-size 2");
        ASSERT_EQ(r.exit_code, 0) << r.output;
        expect_same(losses(r.output), want, r.output);
        EXPECT_EQ(norms(r.output), norms(one.output)) << r.output;
    }
}

// A sliding window on the first layer and learned attention sinks (GPT-OSS's attention) under
// --context-parallel-size 2: each rank gathers the sequence's keys and values, and CP2 and
// TP2 x CP2 give the one-process losses (seq-length 16: the window of 5 cuts across the chunks).
TEST_F(ParallelTrain, ContextParallelWithWindowsAndSinksGivesTheOneProcessLosses) {
    const std::string attention = std::string(kLlama) +
                                  " --window-size '(5, 0)' --window-attn-skip-freq '[1,0]'"
                                  " --softmax-type learnable";
    auto one = run_command(train(dir_, data_, 1, 1) + attention);
    ASSERT_EQ(one.exit_code, 0) << one.output;
    const auto want = losses(one.output);
    ASSERT_EQ(want.size(), 6u) << one.output;
    for (auto [ranks, tp] : {std::pair{2, 1}, std::pair{4, 2}}) {
        auto r =
            run_command(train(dir_, data_, ranks, tp) + attention + " --context-parallel-size 2");
        ASSERT_EQ(r.exit_code, 0) << r.output;
        const auto got = losses(r.output);
        EXPECT_EQ(got.size(), 6u) << r.output;
        expect_same(got, want, r.output);
    }
}

// --pipeline-model-parallel-size (1F1B): PP2 with the distributed optimizer, PP2 x TP2 with
// sequence parallelism, PP4 and uneven stages give the one-process losses, GPT-2 style (the
// tied word embeddings on the first and last stage) and Llama style.
TEST_F(ParallelTrain, PipelineParallelGivesTheOneProcessLosses) {
    const std::string four = " --num-layers 4";
    for (const std::string style : {std::string(), std::string(kLlama)}) {
        auto one = run_command(train(dir_, data_, 1, 1) + style + four);
        ASSERT_EQ(one.exit_code, 0) << one.output;
        const auto want = losses(one.output);
        ASSERT_EQ(want.size(), 6u) << one.output;
        for (auto [ranks, tp, extra] :
             {std::tuple{2, 1, " --pipeline-model-parallel-size 2"},
              std::tuple{4, 2, " --pipeline-model-parallel-size 2"},
              std::tuple{4, 1, " --pipeline-model-parallel-size 4"},
              std::tuple{
                  2, 1,
                  " --pipeline-model-parallel-size 2 --decoder-first-pipeline-num-layers 1"}}) {
            auto r = run_command(train(dir_, data_, ranks, tp) + style + four + extra);
            ASSERT_EQ(r.exit_code, 0) << r.output;
            const auto got = losses(r.output);
            EXPECT_EQ(got.size(), 6u) << r.output;
            expect_same(got, want, r.output);
        }
    }
}

// Megatron core_v0.19's Muon on a Llama-style MoE model (GQA's linear_qkv orthogonalised per
// query group's query, key and value rows, SwiGLU fc1, each expert's and the router's weights
// alone, the rest Adam's): data-parallel (plain, and with --use-distributed-optimizer:
// Megatron's layer-wise optimizer, which deals the parameters' updates and state out over the
// ranks), pipeline- and expert-parallel runs print the one-process
// losses, which are not Adam's, and an expert-parallel checkpoint (Muon's and Adam's parts,
// dense and experts': four chained optimizers) resumes in one process. (Its tensor-parallel
// "blockwise" mode orthogonalises each rank's piece: another update by design.)
TEST_F(ParallelTrain, MuonGivesTheOneProcessLosses) {
    const std::string model = std::string(kLlama) +
                              " --num-layers 4 --num-experts 4 --moe-router-topk 2"
                              " --moe-ffn-hidden-size 32";
    const std::string muon = " --optimizer muon --muon-extra-scale-factor 0.2 --muon-nesterov";
    auto plain = [](std::string cmd) {
        const std::string sharded = " --use-distributed-optimizer --overlap-grad-reduce";
        if (const size_t at = cmd.find(sharded); at != std::string::npos)
            cmd.erase(at, sharded.size());
        return cmd;
    };
    const auto want = curve(train(dir_, data_, 1, 1) + model + muon);
    const auto adam = curve(train(dir_, data_, 1, 1) + model);
    ASSERT_EQ(adam.size(), 6u);
    EXPECT_GT(std::abs(adam.at(3) - want.at(3)), 1e-4);
    for (const char* layout :
         {"", " --pipeline-model-parallel-size 2", " --expert-model-parallel-size 2"})
        expect_curve(plain(train(dir_, data_, 2, 1)) + model + muon + layout, want);
    expect_curve(train(dir_, data_, 2, 1) + model + muon, want);
    // The layer-wise optimizer deals the parameters (and their state) out over the ranks.
    static const std::regex stats(R"( > rank (\d+) optimizer state: (\d+) bytes)");
    auto state_bytes = [&](const std::string& cmd) {
        const auto r = run_command(cmd + " --log-rank-stats");
        EXPECT_EQ(r.exit_code, 0) << r.output;
        std::map<int, int64_t> bytes;
        for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), stats);
             it != std::sregex_iterator(); ++it)
            bytes[std::stoi((*it)[1])] = std::stoll((*it)[2]);
        return bytes;
    };
    const auto whole = state_bytes(train(dir_, data_, 1, 1) + model + muon);
    const auto dealt = state_bytes(train(dir_, data_, 2, 1) + model + muon);
    ASSERT_EQ(whole.size(), 1u);
    ASSERT_EQ(dealt.size(), 2u);
    EXPECT_EQ(dealt.at(0) + dealt.at(1), whole.at(0));
    EXPECT_GT(dealt.at(0), 0);
    EXPECT_GT(dealt.at(1), 0);
    expect_resumes(
        plain(train(dir_, data_, 2, 1)) + model + muon + " --expert-model-parallel-size 2",
        train(dir_, data_, 1, 1) + model + muon, dir_.path() / "muon_ep2", want);
}

// Muon's --muon-tp-mode on a GPT model (QKV split per head group): "duplicated" gathers each
// tensor-parallel piece and orthogonalises the whole matrix, so TP2 x SP prints the one-process
// losses; "distributed" sums the norm and X X^T over the pieces and whitens along the cut
// dimension, at any tensor-parallel size alike (so its TP2 run prints its one-process losses).
TEST_F(ParallelTrain, MuonTensorParallelModesGiveTheOneProcessLosses) {
    const std::string muon = " --optimizer muon --muon-extra-scale-factor 0.2";
    for (const char* mode : {" --muon-tp-mode duplicated", " --muon-tp-mode distributed"}) {
        const auto want = curve(train(dir_, data_, 1, 1) + muon + mode);
        expect_curve(train(dir_, data_, 2, 2) + muon + mode, want);
    }
    // (blockwise orthogonalises each piece alone: TP2 is another update.)
    const auto one = curve(train(dir_, data_, 1, 1) + muon);
    const auto blockwise = curve(train(dir_, data_, 2, 2) + muon);
    ASSERT_EQ(blockwise.size(), 6u);
    EXPECT_GT(std::abs(blockwise.at(4) - one.at(4)), 1e-5);
}

// DeepSpeed's seqlen curriculum (--deepspeed, 4, 8, 12 and then 16 positions): pipeline stages
// exchange the shortened sequences, and PP2 and TP2 x DP2 with sequence parallelism give the
// one-process losses (which are not those of the whole sequences).
TEST_F(ParallelTrain, SeqlenCurriculumGivesTheOneProcessLosses) {
    const fs::path config = dir_ / "ds_curriculum.json";
    mt::test::write_file(config, R"({"curriculum_learning": {"enabled": true,
        "curriculum_type": "seqlen", "min_difficulty": 4, "max_difficulty": 16,
        "schedule_type": "fixed_linear",
        "schedule_config": {"total_curriculum_step": 4, "difficulty_step": 4}}})");
    const std::string flags = " --num-layers 4 --deepspeed --deepspeed_config " + q(config);
    auto one = run_command(train(dir_, data_, 1, 1) + flags);
    ASSERT_EQ(one.exit_code, 0) << one.output;
    EXPECT_NE(one.output.find("curriculum seqlen:     4 |"), std::string::npos) << one.output;
    const auto want = losses(one.output);
    ASSERT_EQ(want.size(), 6u) << one.output;
    EXPECT_NE(want.at(1), curve(train(dir_, data_, 1, 1) + " --num-layers 4").at(1));
    for (const std::string& layout :
         {train(dir_, data_, 2, 1) + " --pipeline-model-parallel-size 2", train(dir_, data_, 4, 2)})
        expect_curve(layout + flags, want);
}

// core_v0.19's --pipeline-model-parallel-layout: each segment one model chunk (here 8 chunks on
// 2 stages, the last holding only the loss; with a multi-token prediction layer beside the
// loss) gives the one-process losses; Megatron's checks of the layout.
TEST_F(ParallelTrain, PipelineLayoutGivesTheOneProcessLosses) {
    auto command = [&](int ranks) {
        std::string c =
            train(dir_, data_, ranks, 1) + " --position-embedding-type rope --mtp-num-layers 1";
        c.replace(c.find(" --num-layers 2"), std::string(" --num-layers 2").size(),
                  " --num-layers 13");
        if (ranks > 1) c += " --pipeline-model-parallel-size 2";
        return c;
    };
    const auto want = curve(command(1));
    expect_curve(command(2) + " --pipeline-model-parallel-layout 'Et|(tt|)*6,mL'", want);
    for (const auto& [layout, message] : std::vector<std::pair<std::string, std::string>>{
             {"Et|(tt|)*5,ttmL",
              "The length of pipeline_model_parallel_layout must be divisible "
              "by pipeline_model_parallel_size (num_stages=7"},
             {"Et|(tt|)*5,t|mL", "Number of decoder layers 12 must match num_layers 13"},
             {"Et|(tt|)*5,tm|tL", "decoder layers must be placed before MTP layers"},
             {"Et|(tt|)*6,mmL", "Number of mtp layers in layout must match mtp_num_layers"},
             {"E|t|(tt|)*5,t|tm|L", "not supported yet: MTP layers outside the loss's pipeline"},
             {"Et|(tt|)*6,xL", "Invalid layer character: x"}}) {
        auto r = run_command(command(2) + " --pipeline-model-parallel-layout '" + layout + "'");
        EXPECT_NE(r.exit_code, 0) << layout;
        EXPECT_NE(r.output.find(message), std::string::npos) << layout << "\n" << r.output;
    }
}

// --calculate-per-token-loss: every stage's grads are divided by the batch's tokens, which only
// the last stage's losses count (Megatron's finalize_model_grads broadcasts them); with
// --eod-mask-loss the micro-batches hold different counts.
TEST_F(ParallelTrain, PerTokenLossAtPipelineParallelGivesTheOneProcessLosses) {
    const std::string flags = " --num-layers 4 --calculate-per-token-loss --eod-mask-loss";
    auto one = run_command(train(dir_, data_, 1, 1) + flags);
    ASSERT_EQ(one.exit_code, 0) << one.output;
    const auto want = losses(one.output);
    ASSERT_EQ(want.size(), 6u) << one.output;
    for (int ranks : {2, 4}) {
        SCOPED_TRACE(ranks);
        auto r =
            run_command(train(dir_, data_, ranks, 1) + flags + " --pipeline-model-parallel-size 2");
        ASSERT_EQ(r.exit_code, 0) << r.output;
        expect_same(losses(r.output), want, r.output);
    }
}

// PP2 x CP2 at --seq-length 12: each stage's 6 tokens are its two chunks already (the hidden
// states a stage receives are not split again).
TEST_F(ParallelTrain, PipelineWithContextParallelGivesTheOneProcessLosses) {
    const std::string flags = " --num-layers 4 --seq-length 12";
    auto one = run_command(train(dir_, data_, 1, 1) + flags);
    ASSERT_EQ(one.exit_code, 0) << one.output;
    auto r = run_command(train(dir_, data_, 4, 1) + flags +
                         " --pipeline-model-parallel-size 2 --context-parallel-size 2");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto got = losses(r.output);
    EXPECT_EQ(got.size(), 6u) << r.output;
    expect_same(got, losses(one.output), r.output);
}

// --schedule-trace-dir: each rank's Chrome trace shows 1F1B's order at PP2 (4 micro-batches):
// the first stage warms up with one forward, the last alternates from the start; and
// --timing-log-level 2 prints Megatron's timers with the pipeline's send/recv.
TEST_F(ParallelTrain, PipelineScheduleTraceShowsOneForwardOneBackward) {
    const fs::path traces = dir_ / "traces";
    auto r =
        run_command(train(dir_, data_, 2, 1) + " --num-layers 4 --pipeline-model-parallel-size 2" +
                    " --schedule-trace-dir " + q(traces) + " --timing-log-level 2");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // --timing-log-level 2: Megatron's timers block, with the pipeline's exchanges.
    EXPECT_NE(r.output.find("(min, max) time across ranks (ms):\n    forward-backward ....."),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("    forward-recv ....."), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("    backward-send ....."), std::string::npos) << r.output;
    static const std::regex event(R"re("name": "(forward|backward) (\d+)".*"iteration": 1,)re");
    const std::string expected[] = {"F0 F1 B0 F2 B1 F3 B2 B3", "F0 B0 F1 B1 F2 B2 F3 B3"};
    for (int rank = 0; rank < 2; ++rank) {
        const std::string json =
            mt::test::read_file(traces / ("schedule_rank" + std::to_string(rank) + ".json"));
        EXPECT_NE(json.find("\"name\": \"wait"), std::string::npos) << json;
        EXPECT_NE(json.find("\"name\": \"send"), std::string::npos) << json;
        std::string order;
        for (auto it = std::sregex_iterator(json.begin(), json.end(), event);
             it != std::sregex_iterator(); ++it)
            order += std::string(order.empty() ? "" : " ") + ((*it)[1] == "forward" ? "F" : "B") +
                     std::string((*it)[2]);
        EXPECT_EQ(order, expected[rank]) << "stage " << rank;
    }
}

// Checkpoints saved by pipeline stages resume in another layout with the uninterrupted losses:
// torch_dist (each stage's layers under their numbers in the whole model) and Megatron's torch
// files (mp_rank_TT_PPP, each stage's layers from 0; the last stage with its copy of the tied
// word embeddings), PP2 and TP2 x PP2 into one process and back.
TEST_F(ParallelTrain, PipelineCheckpointsResumeAcrossLayouts) {
    const std::string four = " --num-layers 4", pp2 = " --pipeline-model-parallel-size 2";
    auto one = run_command(train(dir_, data_, 1, 1) + four);
    ASSERT_EQ(one.exit_code, 0) << one.output;
    const auto want = losses(one.output);
    for (const std::string format : {"torch_dist", "torch"}) {
        const std::string fmt = " --ckpt-format " + format;
        expect_resumes(train(dir_, data_, 2, 1) + four + pp2 + fmt,
                       train(dir_, data_, 1, 1) + four + fmt, dir_ / ("pp_" + format), want);
        expect_resumes(train(dir_, data_, 1, 1) + four + fmt,
                       train(dir_, data_, 4, 2) + four + pp2 + fmt, dir_ / ("whole_" + format),
                       want);
        expect_resumes(train(dir_, data_, 4, 2) + four + pp2 + fmt,
                       train(dir_, data_, 1, 1) + four + fmt, dir_ / ("tp_pp_" + format), want);
        // In its own layout: the last stage's copy of the tied word embeddings is cut over the
        // tensor-parallel ranks as Megatron's files hold it (it was saved whole in torch files).
        expect_resumes(train(dir_, data_, 4, 2) + four + pp2 + fmt,
                       train(dir_, data_, 4, 2) + four + pp2 + fmt, dir_ / ("same_" + format),
                       want);
    }
    const fs::path iter = dir_ / "tp_pp_torch" / "iter_0000003";
    for (const char* rank :
         {"mp_rank_00_000", "mp_rank_01_000", "mp_rank_00_001", "mp_rank_01_001"})
        EXPECT_TRUE(fs::exists(iter / rank / "model_optim_rng.pt")) << rank;
}

// Dropout under pipeline parallelism: each stage draws from its own stream (Megatron's seed +
// 100 x the pipeline rank) and all stages go on from the furthest counter, so that the one RNG
// state a checkpoint keeps resumes every stage exactly, in both formats.
TEST_F(ParallelTrain, PipelineDropoutResumesExactly) {
    const std::string pp2 = train(dir_, data_, 2, 1) +
                            " --num-layers 4 --pipeline-model-parallel-size 2"
                            " --hidden-dropout 0.1 --attention-dropout 0.1";
    auto whole = run_command(pp2);
    ASSERT_EQ(whole.exit_code, 0) << whole.output;
    const auto want = losses(whole.output);
    ASSERT_EQ(want.size(), 6u) << whole.output;
    for (const std::string format : {"torch_dist", "torch"})
        expect_resumes(pp2 + " --ckpt-format " + format, pp2 + " --ckpt-format " + format,
                       dir_ / ("dropout_" + format), want);
}

// Megatron's torch files of virtual stages (model0, model1 in each stage's file) with uneven
// stages resume in one process, and a one-process checkpoint resumes in chunks.
TEST_F(ParallelTrain, InterleavedTorchCheckpointsResumeAcrossLayouts) {
    const std::string flags = " --num-layers 6 --ckpt-format torch";
    auto one = run_command(train(dir_, data_, 1, 1) + flags);
    ASSERT_EQ(one.exit_code, 0) << one.output;
    const auto want = losses(one.output);
    const std::string interleaved = train(dir_, data_, 2, 1) + flags +
                                    " --pipeline-model-parallel-size 2"
                                    " --num-virtual-stages-per-pipeline-rank 2"
                                    " --decoder-first-pipeline-num-layers 4";
    expect_resumes(interleaved, train(dir_, data_, 1, 1) + flags, dir_ / "vp", want);
    const std::string file =
        mt::test::read_file(dir_ / "vp" / "iter_0000003" / "mp_rank_00_001" / "model_optim_rng.pt");
    EXPECT_NE(file.find("model1"), std::string::npos);
    expect_resumes(train(dir_, data_, 1, 1) + flags, interleaved, dir_ / "to_vp", want);
    // megatron-generate reads the chunks by the split its args give: the same greedy tokens as
    // from the one-process save of the same iteration.
    auto generate = [&](const fs::path& ckpt) {
        auto r = run_command(mt::test::tool_path("megatron-generate").string() + " --load " +
                             q(ckpt) + " --greedy --out-seq-length 6 --prompts 'Document 3 says'");
        EXPECT_EQ(r.exit_code, 0) << r.output;
        const size_t at = r.output.find("\nDocument 3 says");
        return at == std::string::npos ? r.output : r.output.substr(at);
    };
    EXPECT_EQ(generate(dir_ / "vp"), generate(dir_ / "to_vp"));
}

TEST_F(ParallelTrain, LlamaDistributedOptimizerRangesResumeAtOneRank) {
    // torch_dist with the distributed optimizer's ranges (three buckets), SwiGLU's fc1 split
    // into gate and up boxes on each tensor rank.
    auto single = run_command(train(dir_, data_, 1, 1) + kLlama);
    ASSERT_EQ(single.exit_code, 0) << single.output;
    expect_resumes(train(dir_, data_, 4, 2) + kLlama + " --ddp-bucket-size 3000",
                   train(dir_, data_, 1, 1) + kLlama, dir_ / "llama", losses(single.output));
}

// --bf16 with the distributed optimizer: each rank's f32 masters of its shard are saved (torch:
// gathered into distrib_optim.pt's; torch_dist: its fp32_param ranges) and restored, so the
// resumed run continues the uninterrupted one exactly.
TEST_F(ParallelTrain, Bf16DistributedOptimizerResumesExactly) {
    const std::string bf16 = " --bf16";
    auto whole = run_command(train(dir_, data_, 2, 1) + bf16);
    ASSERT_EQ(whole.exit_code, 0) << whole.output;
    const auto want = losses(whole.output);
    ASSERT_EQ(want.size(), 6u) << whole.output;
    for (const char* format : {"torch_dist", "torch"}) {
        const std::string fmt = std::string(" --ckpt-format ") + format;
        const fs::path save = dir_ / (std::string("bf16_") + format);
        auto first = run_command(train(dir_, data_, 2, 1) + bf16 + fmt + " --save " + q(save) +
                                 " --save-interval 3 --exit-interval 3");
        ASSERT_EQ(first.exit_code, 0) << first.output;
        auto resumed = run_command(train(dir_, data_, 2, 1) + bf16 + fmt + " --load " + q(save));
        ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
        const auto got = losses(resumed.output);
        EXPECT_EQ(got.size(), 3u) << resumed.output;
        for (const auto& [iteration, loss] : got)
            EXPECT_EQ(loss, want.at(iteration)) << format << " iteration " << iteration;
    }
}

// --num-distributed-optimizer-instances 2 at DP4 (Megatron's partial distributed optimizer: the
// optimizer sharded within ranks {0, 1} and {2, 3}, each shard's gradients all-reduced across
// the two): the one-process losses, grad norm and zero count; its checkpoints (torch_dist: the
// first instance's shards; torch: distrib_optim.pt) resume in one process and at one instance.
TEST_F(ParallelTrain, DistributedOptimizerInstancesGiveTheOneProcessNumbers) {
    const std::string instances = " --num-distributed-optimizer-instances 2";
    const std::string norms = std::string(kLlama) + " --log-params-norm --log-num-zeros-in-grad";
    auto one = run_command(train(dir_, data_, 1, 1) + norms);
    ASSERT_EQ(one.exit_code, 0) << one.output;
    auto split = run_command(train(dir_, data_, 4, 1) + norms + instances);
    ASSERT_EQ(split.exit_code, 0) << split.output;
    const auto want = losses(one.output);
    EXPECT_EQ(losses(split.output).size(), 6u) << split.output;
    expect_same(losses(split.output), want, split.output);
    static const std::regex line(
        R"(iteration +(\d+)/.*\| grad norm: ([0-9.]+) \| num zeros: ([0-9.]+) \| params norm: ([0-9.]+))");
    auto numbers = [](const std::string& output) {  // each printed to 3 decimals
        std::map<int, std::tuple<double, double, double>> out;
        for (auto it = std::sregex_iterator(output.begin(), output.end(), line);
             it != std::sregex_iterator(); ++it)
            out[std::stoi((*it)[1])] = {std::stod((*it)[2]), std::stod((*it)[3]),
                                        std::stod((*it)[4])};
        return out;
    };
    const auto want_numbers = numbers(one.output), got_numbers = numbers(split.output);
    ASSERT_EQ(got_numbers.size(), 6u) << split.output;
    for (const auto& [iteration, n] : got_numbers) {
        const auto& [norm, zeros, params] = want_numbers.at(iteration);
        EXPECT_NEAR(std::get<0>(n), norm, 2e-3) << iteration;
        EXPECT_EQ(std::get<1>(n), zeros) << iteration;
        EXPECT_NEAR(std::get<2>(n), params, 2e-3) << iteration;
    }
    for (const std::string format : {"torch_dist", "torch"}) {
        const std::string fmt = " --ckpt-format " + format;
        expect_resumes(train(dir_, data_, 4, 1) + kLlama + instances + fmt,
                       train(dir_, data_, 1, 1) + kLlama + fmt, dir_ / ("instances_" + format),
                       want);
    }
    // Back into two instances from a one-instance DP4 checkpoint.
    expect_resumes(train(dir_, data_, 4, 1) + kLlama + " --ckpt-format torch_dist",
                   train(dir_, data_, 4, 1) + kLlama + instances + " --ckpt-format torch_dist",
                   dir_ / "into_instances", want);
    auto refused =
        run_command(train(dir_, data_, 4, 1) + " --num-distributed-optimizer-instances 3");
    EXPECT_NE(refused.exit_code, 0);
    EXPECT_NE(refused.output.find("Data parallel size should be divisible by partial DistOpt"),
              std::string::npos)
        << refused.output;
}

TEST_F(ParallelTrain, RanksAgreeOnStoppingAndSaveTogether) {
    // Any rank's clock past --exit-duration-in-mins stops every rank after the same iteration,
    // with one (collective) save.
    const fs::path save = dir_ / "timed";
    auto r = run_command(train(dir_, data_, 4, 2) + " --exit-duration-in-mins 0 --save " + q(save));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(losses(r.output).size(), 1u) << r.output;
    EXPECT_NE(r.output.find("exiting program after 0 minutes"), std::string::npos) << r.output;
    EXPECT_TRUE(fs::exists(save / "iter_0000001")) << r.output;
}

TEST_F(ParallelTrain, AnErrorStopsEveryRankNamingIt) {
    // Global batch 6 does not split into micro-batches of 2 on 2 data-parallel ranks.
    std::string cmd = train(dir_, data_, 2, 1);
    cmd.replace(cmd.find("--global-batch-size 8"), 21, "--global-batch-size 6");
    auto r = run_command(cmd);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_TRUE(std::regex_search(r.output, std::regex("error: rank [01]: --global-batch-size")))
        << r.output;
    // An error on one pipeline stage while the other waits for its activations (token ids past
    // a NullTokenizer vocabulary of 100 in the first stage's embedding): the waiting receive is
    // given up, not waited for, and the error stops both.
    cmd = train(dir_, data_, 2, 1) + " --pipeline-model-parallel-size 2 --tokenizer-type " +
          "NullTokenizer --vocab-size 100";
    r = run_command(cmd);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("error: rank 0: embedding_forward: id "), std::string::npos)
        << r.output;
}

// Without --global-batch-size the global batch is one micro-batch per data-parallel rank
// (Megatron's validate_args), here 2 x 2 at DP2 (TP2 x DP2 on 4 ranks).
TEST_F(ParallelTrain, GlobalBatchDefaultsToAMicroBatchPerDataParallelRank) {
    std::string cmd = train(dir_, data_, 4, 2);
    cmd.erase(cmd.find(" --global-batch-size 8"), std::string(" --global-batch-size 8").size());
    auto r = run_command(cmd);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("| consumed samples:            4 |"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("| global batch size:     4 |"), std::string::npos) << r.output;
}

}  // namespace

namespace {

// Hugging Face Qwen2 (QKV biases, a sliding window on its second layer), Qwen3-MoE and GPT-OSS
// folders (tests/fixtures/hf) converted to torch_dist split over two tensor (Qwen2) or expert
// (Qwen3-MoE, GPT-OSS) ranks fine-tune there from the folders' weights (--finetune
// --use-checkpoint-args) with a falling loss, on NullTokenizer ids below their vocabulary of 128.
TEST(ParallelTrainTool, HfFoldersFinetuneSplitWithAFallingLoss) {
    if (!mt::test::mpiexec_available()) GTEST_SKIP() << "built without MPI: no mpiexec";
    TempDir dir;
    std::string jsonl;
    for (int d = 0; d < 200; ++d) {
        std::string text;
        for (int i = 0; i < 40; ++i) text += (i ? " " : "") + std::to_string((d * 7 + i) % 100);
        jsonl += "{\"text\": \"" + text + "\"}\n";
    }
    mt::test::write_file(dir / "ids.jsonl", jsonl);
    auto r =
        run_command(mt::test::shell_quote(mt::test::tool_path("megatron-preprocess")) +
                    " --input " + q(dir / "ids.jsonl") + " --output-prefix " + q(dir / "ids") +
                    " --tokenizer-type NullTokenizer --vocab-size 127 --append-eod --workers 1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // Megatron's --use-checkpoint-args takes neither the sliding window nor core_v0.19's GPT-OSS
    // options from the checkpoint: the run gives them, as a Megatron script would.
    const std::string qwen2_window = " --window-size '(2, 0)' --window-attn-skip-freq '[0,1]'";
    const std::string gpt_oss =
        " --window-size '(3, 0)' --window-attn-skip-freq '[1,0]' --softmax-type learnable"
        " --quick-geglu --glu-linear-offset 1.0 --activation-func-clamp-value 0.15"
        " --rotary-scaling-factor 4 --yarn-original-max-position-embeddings 16"
        " --no-yarn-correction-range-round-to-int";
    // megatron.cpp's own flags for Gemma 3's layers come from the checkpoint (Megatron has none).
    const std::string gemma3 =
        " --window-size '(3, 0)' --window-attn-skip-freq '[1,1,0]'"
        " --rotary-seq-len-interpolation-factor 2 --qk-layernorm";
    for (const auto& [name, target, split] :
         {std::tuple{"gemma3", "--target-tensor-parallel-size 2",
                     "--tensor-model-parallel-size 2" + gemma3},
          std::tuple{"qwen2_swa", "--target-tensor-parallel-size 2",
                     "--tensor-model-parallel-size 2" + qwen2_window},
          std::tuple{"qwen3_moe", "--target-expert-parallel-size 2",
                     std::string("--expert-model-parallel-size 2")},
          std::tuple{"gpt_oss", "--target-expert-parallel-size 2",
                     "--expert-model-parallel-size 2" + gpt_oss}}) {
        SCOPED_TRACE(name);
        const fs::path converted = dir / name;
        r = run_command(mt::test::shell_quote(mt::test::tool_path("megatron-convert")) +
                        " --model-type GPT --loader hf --saver torch_dist " + target +
                        " --load-dir " + q(mt::test::fixtures_dir() / "hf" / name) +
                        " --save-dir " + q(converted));
        ASSERT_EQ(r.exit_code, 0) << r.output;
        r = run_command(mt::test::mpiexec_prefix(2) +
                        mt::test::tool_path("megatron-train").string() + " " + split + " --load " +
                        q(converted) +
                        " --finetune --use-checkpoint-args --tokenizer-type NullTokenizer"
                        " --vocab-size 127 --data-path " +
                        q(dir / "ids_text_document") + " --data-cache-path " + q(dir / "cache") +
                        " --micro-batch-size 2 --global-batch-size 4 --seq-length 32 --lr 1e-2"
                        " --train-iters 15 --log-interval 1 --eval-iters 0 --split 100,0,0");
        ASSERT_EQ(r.exit_code, 0) << r.output;
        const std::map<int, double> curve = losses(r.output);
        ASSERT_EQ(curve.size(), 15u) << r.output;
        EXPECT_LT(curve.at(15), 0.9 * curve.at(1)) << r.output;
    }
}

}  // namespace
