// Megatron-DeepSpeed's launch flags through megatron-train: its spellings of Megatron-LM's model
// flags, --deepspeed with a DeepSpeed configuration, its token-based schedule and stop, and a
// run of Megatron-DeepSpeed itself continued.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "mpiexec_launch.h"
#include "test_support.h"

namespace {

using mt::test::TempDir;

std::string q(const std::filesystem::path& p) {
    return mt::test::shell_quote(p);
}

struct DeepSpeedRun : ::testing::Test {
    TempDir dir;
    std::string data;

    void SetUp() override {
        data = mt::test::tiny_gpt2_dataset(dir, mt::test::hello_documents(300));
    }
    // A tiny Llama-like GPT for 6 iterations of 4 sequences of 32 tokens.
    std::string train(const std::string& flags) const {
        return mt::test::tool_path("megatron-train").string() +
               " --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32"
               " --max-position-embeddings 32 --micro-batch-size 2 --global-batch-size 4"
               " --train-iters 6 --lr 1e-2 --min-lr 1e-3 --lr-decay-style cosine"
               " --lr-warmup-iters 1 --log-interval 1 --eval-iters 0 --swiglu"
               " --disable-bias-linear --untie-embeddings-and-output-weights --seed 7" +
               mt::test::tiny_gpt2_tokenizer_flags() + " --data-path " + q(data) +
               " --split 100,0,0 --data-cache-path " + q(dir / "cache") + " " + flags + " 2>&1";
    }
    std::string config(const std::string& name, const std::string& json) const {
        const auto path = dir / name;
        mt::test::write_file(path, json);
        return q(path);
    }
};

// The llama2 example's spellings and --deepspeed (ZeRO 1, clipping 0.05 from the configuration)
// train exactly as their Megatron-LM names do (--clip-grad 1.0 is DeepSpeed's to ignore, and so
// is the configuration's optimizer: Megatron-DeepSpeed gives the engine its own).
TEST_F(DeepSpeedRun, TrainsAsTheMegatronNames) {
    const std::string ds_config = config("ds.json", R"({
        "train_batch_size": 4, "train_micro_batch_size_per_gpu": 2,
        "gradient_accumulation_steps": 2, "steps_per_print": 1,
        "zero_optimization": {"stage": 1, "reduce_bucket_size": 5e8},
        "gradient_clipping": 0.05, "prescale_gradients": false,
        "fp16": {"enabled": false},
        "curriculum_learning": {"enabled": false, "curriculum_type": "seqlen"},
        "optimizer": {"type": "Adam", "params": {"lr": 0.5, "betas": [0.5, 0.5]}},
        "wall_clock_breakdown": false})");
    const auto deepspeed = mt::test::run_command(
        train("--num-key-value-heads 2 --normalization rmsnorm --layernorm-epsilon 1e-6"
              " --use-rotary-position-embeddings --rotary-position-embeddings-theta 500000"
              " --clip-grad 1.0 --deepspeed --deepspeed_config " +
              ds_config +
              " --zero-stage 1 --no-pipeline-parallel --data-impl mmap --checkpoint-activations"
              " --deepspeed-activation-checkpointing --no-query-key-layer-scaling"));
    ASSERT_EQ(deepspeed.exit_code, 0) << deepspeed.output;
    const auto megatron = mt::test::run_command(
        train("--group-query-attention --num-query-groups 2 --normalization RMSNorm"
              " --norm-epsilon 1e-6 --position-embedding-type rope --rotary-base 500000"
              " --clip-grad 0.05 --use-distributed-optimizer --recompute-granularity full"
              " --recompute-method uniform --recompute-num-layers 1"));
    ASSERT_EQ(megatron.exit_code, 0) << megatron.output;
    const auto losses = mt::test::logged_values(deepspeed.output, "lm loss");
    ASSERT_EQ(losses.size(), 6u) << deepspeed.output;
    EXPECT_EQ(losses, mt::test::logged_values(megatron.output, "lm loss"));
    EXPECT_EQ(mt::test::logged_values(deepspeed.output, "grad norm"),
              mt::test::logged_values(megatron.output, "grad norm"));
    // The clipping matters here: Megatron-LM's 1.0 trains otherwise.
    const auto unclipped = mt::test::run_command(
        train("--group-query-attention --num-query-groups 2 --normalization RMSNorm"
              " --norm-epsilon 1e-6 --position-embedding-type rope --rotary-base 500000"));
    ASSERT_EQ(unclipped.exit_code, 0) << unclipped.output;
    EXPECT_NE(losses, mt::test::logged_values(unclipped.output, "lm loss"));
}

// --lr-warmup-tokens / --lr-decay-tokens (the schedule itself is checked against
// Megatron-DeepSpeed's in LrSchedule.TokenSchedulesEqualMegatronDeepSpeedBitForBit) and
// --train-tokens: 128 tokens an iteration, so 640 tokens stop after 5 of the 6 iterations.
TEST_F(DeepSpeedRun, TokenScheduleAndTokenStop) {
    const auto r = mt::test::run_command(
        train("--lr-warmup-tokens 128 --lr-decay-tokens 512 --train-tokens 640"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto lr = mt::test::logged_values(r.output, "learning rate");
    // After iteration i the schedule has seen the tokens of the i - 1 before it.
    const std::vector<double> expected{0.0, 1e-2, 1e-3 + 0.75 * 9e-3, 1e-3 + 0.25 * 9e-3, 1e-3};
    ASSERT_EQ(lr.size(), expected.size()) << r.output;
    for (size_t i = 0; i < lr.size(); ++i) EXPECT_NEAR(lr[i], expected[i], 1e-9) << i;
}

// A token-based schedule resumes where it stopped (its tokens and a warmup's end in tokens are
// in the checkpoint's scheduler state, under Megatron-DeepSpeed's keys), in both formats.
TEST_F(DeepSpeedRun, TokenScheduleResumes) {
    const std::string schedule = "--lr-decay-tokens 700 ";
    const auto whole = mt::test::run_command(train(schedule));
    ASSERT_EQ(whole.exit_code, 0) << whole.output;
    const auto lr = mt::test::logged_values(whole.output, "learning rate");
    const auto loss = mt::test::logged_values(whole.output, "lm loss");
    ASSERT_EQ(lr.size(), 6u);
    for (const char* format : {"torch", "torch_dist"}) {
        const auto ckpt = dir / (std::string("ckpt_") + format);
        const std::string save = "--ckpt-format " + std::string(format) + " --save " + q(ckpt);
        const auto first = mt::test::run_command(train(schedule + save + " --exit-interval 3"));
        ASSERT_EQ(first.exit_code, 0) << first.output;
        const auto second = mt::test::run_command(train(schedule + save + " --load " + q(ckpt)));
        ASSERT_EQ(second.exit_code, 0) << second.output;
        EXPECT_EQ(mt::test::logged_values(second.output, "learning rate"),
                  std::vector<double>(lr.begin() + 3, lr.end()))
            << format;
        EXPECT_EQ(mt::test::logged_values(second.output, "lm loss"),
                  std::vector<double>(loss.begin() + 3, loss.end()))
            << format;
    }
}

// --kill-switch-file: a file present at the start ends the run before training; one that appears
// ends it after the iteration, with a checkpoint of that iteration (one already saved there
// counts).
TEST_F(DeepSpeedRun, KillSwitchFileStopsAndSaves) {
    const auto kill = dir / "kill";
    mt::test::write_file(kill, "");
    auto r = mt::test::run_command(train("--kill-switch-file " + q(kill)));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("Detected kill switch at " + kill.string() + ". Exiting"),
              std::string::npos)
        << r.output;
    EXPECT_TRUE(mt::test::logged_values(r.output, "lm loss").empty()) << r.output;
    std::filesystem::remove(kill);
    // The checkpoint tracker written by --save-interval 2 as the kill switch: it appears with
    // iteration 2's save, after which the run stops (saving nothing more).
    const auto ckpt = dir / "ckpt";
    const auto tracker = ckpt / "latest_checkpointed_iteration.txt";
    r = mt::test::run_command(train("--kill-switch-file " + q(tracker) + " --save " + q(ckpt) +
                                    " --save-interval 2 --ckpt-format torch"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(
        r.output.find("Detected kill switch at " + tracker.string() + ", iteration=2. Exiting"),
        std::string::npos)
        << r.output;
    EXPECT_EQ(mt::test::logged_values(r.output, "lm loss").size(), 2u) << r.output;
    EXPECT_EQ(mt::test::read_file(tracker), "2");
}

// megatron-train with the flags and DeepSpeed configuration of a run of Megatron-DeepSpeed itself
// (an entry of tests/fixtures/megatron_deepspeed/expected.json), its paths in `work` and `data`.
std::string megatron_deepspeed_run(const simdjson::dom::element& run,
                                   const std::filesystem::path& data, const TempDir& work) {
    mt::test::write_file(work / "ds_config.json", simdjson::to_string(run["ds_config"]));
    std::string command = mt::test::tool_path("megatron-train").string();
    for (auto word : run["flags"].get_array()) {
        std::string w{std::string_view(word)};
        for (const auto& [from, to] : {std::pair<std::string, std::string>{"<data>", data.string()},
                                       {"<work>", work.path().string()}})
            if (w.rfind(from, 0) == 0) w = to + w.substr(from.size());
        command += " " + q(w);
    }
    return command + " --data-cache-path " + q(work / "cache");
}

std::vector<double> doubles(const simdjson::dom::element& list) {
    std::vector<double> out;
    for (auto v : list.get_array()) out.push_back(double(v));
    return out;
}

// Runs of Megatron-DeepSpeed itself (tests/fixtures/megatron_deepspeed/make_fixture.py), their
// first checkpoints continued by megatron-train.
struct DeepSpeedResume : ::testing::Test {
    std::optional<std::filesystem::path> data;
    const std::filesystem::path root = mt::test::fixtures_dir() / "megatron_deepspeed";
    simdjson::dom::parser parser;
    simdjson::dom::element expected;
    TempDir work;

    void SetUp() override {
        data = mt::test::test_data("megatron_indexed");
        if (!data) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: no Megatron-DeepSpeed run's data";
        expected = parser.load((root / "expected.json").string());
    }
    // megatron-train with the flags and configuration of expected.json's run `key`.
    std::string command(const char* key) const {
        return megatron_deepspeed_run(expected[key], *data, work);
    }
};

// Megatron-DeepSpeed's own run (tests/fixtures/megatron_deepspeed/make_fixture.py step 5: its
// pretrain_gpt.py with DeepSpeed, Adam, gradient_clipping 0.5, a checkpoint each iteration):
// megatron-train with its flags and DeepSpeed configuration, resuming from its first checkpoint
// (weights, Adam's moments, the schedule), logs the losses it logged next (iteration 3's after an
// update clipped by the configuration).
TEST_F(DeepSpeedResume, ContinuesMegatronDeepSpeedsOwnRun) {
    const std::string train = command("resume");
    // --load-tag names the tag folder to resume, as DeepSpeed's load_checkpoint(tag=...) does.
    const auto missing = mt::test::run_command(
        train + " --load " + q(root / "deepspeed_gpt_resume") + " --load-tag global_step7 2>&1");
    EXPECT_NE(missing.output.find("--load-tag global_step7: no such DeepSpeed checkpoint tag"),
              std::string::npos)
        << missing.output;
    const auto r = mt::test::run_command(train + " --load " + q(root / "deepspeed_gpt_resume") +
                                         " --load-tag global_step1 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::vector<double> theirs = doubles(expected["resume"]["lm_loss"]);
    ASSERT_EQ(theirs.size(), 3u);
    const auto ours = mt::test::logged_values(r.output, "lm loss");
    ASSERT_EQ(ours.size(), 2u) << r.output;
    // (Iteration 3 follows an Adam step: its normalised update turns rounding-level differences
    // of near-zero gradient elements into whole steps of those elements, about 3e-6 of the loss
    // here; a step without the loaded moments, or with L2 in place of decoupled weight decay,
    // moves it by 1e-3.)
    for (size_t i = 0; i < 2; ++i)
        EXPECT_NEAR(ours[i], theirs[i + 1], 1e-5 * theirs[i + 1]) << "iteration " << i + 2;
}

// Megatron-DeepSpeed's runs with ZeRO stage 1 (make_fixture.py steps 7 and 8) and 2 (step 9,
// without the pipeline engine): its Adam moments and fp32 weights are a flat shard per
// data-parallel rank, model-parallel rank and param group.
// Joined, megatron-train resumes from them and logs the losses those runs logged next: from 2
// data-parallel shards at one process and at 2 under mpirun (ZeRO 1 as the distributed
// optimizer), and from a tensor-parallel 2 x pipeline-parallel 2 run (its last stage's copy of
// the tied embedding among its shards) at that layout and at one process; and from ZeRO 2's
// shards, named by the module's own parameter names.
TEST_F(DeepSpeedResume, ContinuesFromZeroShards) {
    const bool mpi = mt::test::mpiexec_available();
    struct Case {
        const char *run, *folder;
        int ranks;
    };
    for (const Case& c : {Case{"zero1_dp2", "deepspeed_gpt_zero1_dp2", 1},
                          Case{"zero1_dp2", "deepspeed_gpt_zero1_dp2", 2},
                          Case{"zero1_tp2_pp2", "deepspeed_gpt_zero1_tp2_pp2", 4},
                          Case{"zero1_tp2_pp2", "deepspeed_gpt_zero1_tp2_pp2", 1},
                          Case{"zero2", "deepspeed_gpt_zero2", 1}}) {
        if (c.ranks > 1 && !mpi) continue;
        const std::vector<double> theirs = doubles(expected[c.run]["lm_loss"]);
        ASSERT_EQ(theirs.size(), 3u);
        // (One process: the same model, its later flags winning as in argparse.)
        const std::string train =
            command(c.run) +
            (c.ranks == 1 ? " --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1"
                          : "");
        const std::string launcher = c.ranks > 1 ? mt::test::mpiexec_prefix(c.ranks) : "";
        const auto r =
            mt::test::run_command(launcher + train + " --load " + q(root / c.folder) + " 2>&1");
        ASSERT_EQ(r.exit_code, 0) << c.run << " on " << c.ranks << " ranks\n" << r.output;
        const auto ours = mt::test::logged_values(r.output, "lm loss");
        ASSERT_EQ(ours.size(), 2u) << r.output;
        for (size_t i = 0; i < 2; ++i)
            EXPECT_NEAR(ours[i], theirs[i + 1], 1e-5 * theirs[i + 1])
                << c.run << " on " << c.ranks << " ranks, iteration " << i + 2;
    }
}

// Megatron-DeepSpeed's MoE run with ZeRO stage 2 on 2 ranks at expert parallelism 2
// (make_fixture.py step 14: the optimizer state in ZeRO's shards, the experts' "moe" groups each
// rank's own, named by the shards' param_slice_mappings): resuming with its optimizer gives
// Megatron-DeepSpeed's next losses, and its validation's.
TEST_F(DeepSpeedResume, ContinuesFromMoeZeroShards) {
    if (!mt::test::mpiexec_available()) GTEST_SKIP() << "no mpiexec";
    const std::string train = mt::test::mpiexec_prefix(2) + command("moe_zero") + " --load " +
                              q(root / "deepspeed_gpt_moe_zero") + " --save " + q(work / "ours");
    const auto r = mt::test::run_command(train + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto ours = mt::test::logged_values(r.output, "lm loss");
    const std::vector<double> theirs = doubles(expected["moe_zero"]["lm_loss"]);
    ASSERT_EQ(ours.size(), 2u) << r.output;
    // (Iteration 2's gradients are clipped: DeepSpeed's ZeRO norm is over every rank's experts.)
    for (size_t i = 0; i < 2; ++i)
        EXPECT_NEAR(ours[i], theirs[i + 1], 1e-5 * theirs[i + 1]) << "iteration " << i + 2;
    const auto validation = mt::test::logged_values(r.output, "lm loss value");
    ASSERT_EQ(validation.size(), 3u) << r.output;
    for (size_t i = 0; i < 3; ++i) {
        const double v = double(expected["moe_zero"]["validation"].at(i + 1)["lm loss"]);
        EXPECT_NEAR(validation[i], v, 1e-5 * v) << "validation " << i + 2;
    }
    // Without the shards' moments the third loss is another one.
    const auto fresh = mt::test::run_command(train + " --no-load-optim 2>&1");
    ASSERT_EQ(fresh.exit_code, 0) << fresh.output;
    const auto without = mt::test::logged_values(fresh.output, "lm loss");
    ASSERT_EQ(without.size(), 2u) << fresh.output;
    EXPECT_GT(std::abs(without[1] - theirs[2]), 1e-4);
}

// megatron-convert reads Megatron-DeepSpeed's MoE checkpoint (PR-MoE's: two layers of 2 and 4
// experts) into torch_dist, from which megatron-train's next loss is Megatron-DeepSpeed's; the
// Hugging Face saver refuses it by name (no transformers architecture has DeepSpeed's MoE).
TEST_F(DeepSpeedResume, MoeCheckpointConvertsToTorchDist) {
    const std::string convert = mt::test::tool_path("megatron-convert").string() +
                                " --model-type GPT --loader deepspeed --load-dir " +
                                q(root / "deepspeed_gpt_pr_moe");
    const auto converted = mt::test::run_command(convert + " --saver torch_dist --save-dir " +
                                                 q(work / "td") + " 2>&1");
    ASSERT_EQ(converted.exit_code, 0) << converted.output;
    const auto r = mt::test::run_command(command("pr_moe") + " --load " + q(work / "td") +
                                         " --no-load-optim --no-load-rng --exit-interval 2 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto ours = mt::test::logged_values(r.output, "lm loss");
    ASSERT_EQ(ours.size(), 1u) << r.output;
    const double theirs = doubles(expected["pr_moe"]["lm_loss"])[1];
    EXPECT_NEAR(ours[0], theirs, 1e-5 * theirs);
    const auto hf =
        mt::test::run_command(convert + " --saver hf --save-dir " + q(work / "hf") + " 2>&1");
    EXPECT_NE(hf.exit_code, 0);
    EXPECT_NE(hf.output.find("not supported yet: num_experts=a list (Megatron-DeepSpeed's MoE"),
              std::string::npos)
        << hf.output;
}

// PR-MoE's layers (top-2, tokens over capacity dropped by position, the residual MLP) trained
// from scratch log the same losses at pipeline-parallel 2 and data-parallel 2 as at one process
// (each micro-batch is routed by itself).
TEST_F(DeepSpeedResume, MoeLayersEqualOneProcessAtPipelineAndDataParallel) {
    if (!mt::test::mpiexec_available()) GTEST_SKIP() << "no mpiexec";
    std::string flags = command("pr_moe");
    // (The pipeline engine, as Megatron-DeepSpeed's GPTModelPipe runs MoE layers too.)
    const std::string engine = " " + q("--no-pipeline-parallel");
    const size_t at = flags.find(engine);
    ASSERT_NE(at, std::string::npos) << flags;
    flags.erase(at, engine.size());
    const std::string train = flags + " --train-iters 3 --save-interval 100";
    const auto one = mt::test::run_command(train + " --save " + q(work / "one") + " 2>&1");
    ASSERT_EQ(one.exit_code, 0) << one.output;
    for (const std::string layout : {"--pipeline-model-parallel-size 2", ""}) {
        const auto two = mt::test::run_command(mt::test::mpiexec_prefix(2) + train + " " + layout +
                                               " --save " + q(work / "two") + " 2>&1");
        ASSERT_EQ(two.exit_code, 0) << layout << "\n" << two.output;
        for (const char* key : {"lm loss", "moe loss"})
            EXPECT_EQ(mt::test::logged_values(two.output, key),
                      mt::test::logged_values(one.output, key))
                << key << " " << layout;
    }
    EXPECT_EQ(mt::test::logged_values(one.output, "moe loss").size(), 3u) << one.output;
}

// Megatron-DeepSpeed's MoE layers train in fp16 under expert parallelism too (Megatron-LM refuses
// it): with DeepSpeed's loss scaling, 2 expert-parallel ranks log what one process logs, the
// steps skipped for an overflow included (the scale starts at 2^22: the first two overflow).
// (Unclipped: DeepSpeed clips by each rank's own gradient norm averaged over the ranks, which
// under expert parallelism is not one process's norm.)
TEST_F(DeepSpeedResume, Fp16MoeLayersUnderExpertParallelismEqualOneProcess) {
    if (!mt::test::mpiexec_available()) GTEST_SKIP() << "no mpiexec";
    const std::string train = command("moe_ep") + " --fp16 --train-iters 4 --save-interval 100";
    mt::test::write_file(work / "ds_config.json",
                         R"({"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2,
                             "gradient_clipping": 0, "zero_optimization": {"stage": 0},
                             "fp16": {"enabled": true, "loss_scale": 0,
                                      "initial_scale_power": 22, "hysteresis": 1}})");
    const auto two = mt::test::run_command(mt::test::mpiexec_prefix(2) + train + " 2>&1");
    ASSERT_EQ(two.exit_code, 0) << two.output;
    const auto one = mt::test::run_command(train + " --moe-expert-parallel-size 1 --save " +
                                           q(work / "one") + " 2>&1");
    ASSERT_EQ(one.exit_code, 0) << one.output;
    for (const char* key : {"lm loss", "loss scale"})
        EXPECT_EQ(mt::test::logged_values(two.output, key),
                  mt::test::logged_values(one.output, key))
            << key;
    // (Halved after each skipped step; the last two train.)
    EXPECT_EQ(mt::test::logged_values(one.output, "loss scale"),
              (std::vector<double>{2097152, 1048576, 1048576, 1048576}))
        << one.output;
    EXPECT_EQ(mt::test::logged_values(one.output, "lm loss").size(), 2u) << one.output;
}

// Megatron-DeepSpeed's MoE layers (make_fixture.py steps 11 to 13: DeepSpeed's MoE module, its
// experts and their optimizer state in files of their own): top-1 over 4 experts in every second
// layer without token dropping; PR-MoE (a residual MLP mixed in by a learned coefficient, top-2
// with the second expert by argmax, 2 then 4 experts, tokens over capacity dropped by position);
// and the top-1 run with its experts split over 2 expert-parallel ranks. megatron-train resumes
// each from its first checkpoint for one iteration, saves (torch_dist: its layers keyed one by
// one, each MoE layer's expert axis its own), resumes that for the last, and logs the lm loss and
// moe loss (the layers' load-balancing losses times --moe-loss-coeff, summed) those runs logged,
// and their evaluations' lm loss (after every iteration: the evaluation's capacity, routing
// without random numbers).
TEST_F(DeepSpeedResume, ContinuesMegatronDeepSpeedsMoeRuns) {
    const bool mpi = mt::test::mpiexec_available();
    struct Case {
        const char* run;
        int ranks;
    };
    for (const Case& c : {Case{"moe", 1}, Case{"pr_moe", 1}, Case{"moe_ep", 2}}) {
        if (c.ranks > 1 && !mpi) continue;
        const std::string train = (c.ranks > 1 ? mt::test::mpiexec_prefix(c.ranks) : "") +
                                  command(c.run) + " --save " + q(work / c.run);
        const auto first = mt::test::run_command(train + " --load " +
                                                 q(root / (std::string("deepspeed_gpt_") + c.run)) +
                                                 " --exit-interval 2 2>&1");
        ASSERT_EQ(first.exit_code, 0) << c.run << "\n" << first.output;
        const auto second = mt::test::run_command(train + " --load " + q(work / c.run) + " 2>&1");
        ASSERT_EQ(second.exit_code, 0) << c.run << "\n" << second.output;
        // Its evaluations after iterations 2 and 3 and at the end (its validation lines leave the
        // moe loss out, as megatron-train's do).
        std::vector<double> validation = mt::test::logged_values(first.output, "lm loss value");
        for (double v : mt::test::logged_values(second.output, "lm loss value"))
            validation.push_back(v);
        ASSERT_EQ(validation.size(), 3u) << first.output << second.output;
        for (size_t i = 0; i < 3; ++i) {
            const double theirs = double(expected[c.run]["validation"].at(i + 1)["lm loss"]);
            EXPECT_NEAR(validation[i], theirs, 1e-5 * theirs) << c.run << " validation " << i + 2;
        }
        EXPECT_EQ(first.output.find("moe loss value"), std::string::npos) << first.output;
        for (const char* loss : {"lm loss", "moe loss"}) {
            const std::string key = loss == std::string("lm loss") ? "lm_loss" : "moe_loss";
            const std::vector<double> theirs = doubles(expected[c.run][key]);
            std::vector<double> ours = mt::test::logged_values(first.output, loss);
            for (double v : mt::test::logged_values(second.output, loss)) ours.push_back(v);
            ASSERT_EQ(theirs.size(), 3u);
            ASSERT_EQ(ours.size(), 2u) << first.output << second.output;
            // Megatron-DeepSpeed logs the last rank's moe loss, megatron-train the mean over
            // the data-parallel ranks: compared at one process only.
            if (c.ranks > 1 && key == "moe_loss") continue;
            // (Under expert parallelism DeepSpeed clips by the mean over the data-parallel
            // ranks of each one's norm of the dense weights' and its own experts' gradients, as
            // megatron-train does with --deepspeed: iteration 3 is clipped.)
            for (size_t i = 0; i < 2; ++i)
                EXPECT_NEAR(ours[i], theirs[i + 1], 1e-5 * theirs[i + 1])
                    << c.run << " " << loss << ", iteration " << i + 2;
        }
    }
}

// A universal checkpoint (make_fixture.py step 10: DeepSpeed's ds_to_universal.py over step 7's
// ZeRO shards, one folder of fp32 weights and moments per parameter, the vocabulary's padding
// cut): megatron-train --universal-checkpoint resumes the folder --load's latest_universal names
// and logs the losses Megatron-DeepSpeed logged resuming it (the padded rows come back as zeros,
// as DeepSpeed pads them: not the losses of the ZeRO run), at one process and at tensor-parallel
// 2. Without latest_universal it fails as DeepSpeed does.
TEST_F(DeepSpeedResume, ContinuesFromAUniversalCheckpoint) {
    const std::vector<double> theirs = doubles(expected["universal"]["lm_loss"]);
    ASSERT_EQ(theirs.size(), 2u);
    EXPECT_GT(std::abs(theirs[0] - doubles(expected["zero1_dp2"]["lm_loss"])[1]), 1e-4);
    // (Its flags load <work>/ds; the later --load wins, as in argparse.)
    const std::string train = command("universal");
    const auto missing =
        mt::test::run_command(train + " --load " + q(root / "deepspeed_gpt_zero1_dp2") + " 2>&1");
    EXPECT_NE(missing.output.find("Invalid for universal checkpoint: "), std::string::npos)
        << missing.output;
    std::vector<bool> layouts{false};  // tensor-parallel 2 under mpirun too
    if (mt::test::mpiexec_available()) layouts.push_back(true);
    for (const bool tp2 : layouts) {
        const auto r =
            mt::test::run_command((tp2 ? mt::test::mpiexec_prefix(2) : std::string()) + train +
                                  " --load " + q(root / "deepspeed_gpt_universal") +
                                  (tp2 ? " --tensor-model-parallel-size 2" : "") + " 2>&1");
        ASSERT_EQ(r.exit_code, 0) << r.output;
        const auto ours = mt::test::logged_values(r.output, "lm loss");
        ASSERT_EQ(ours.size(), 2u) << r.output;
        for (size_t i = 0; i < 2; ++i)
            EXPECT_NEAR(ours[i], theirs[i], 1e-5 * theirs[i])
                << (tp2 ? "TP2" : "one process") << ", iteration " << i + 2;
    }
}

// The same with DeepSpeed's legacy seqlen curriculum in the configuration (make_fixture.py step
// 6: 8, 16, 24, 32 positions at steps 1 to 4) and a learning rate warmed up and decayed in
// tokens: resumed after step 1, each step trains on as many positions as Megatron-DeepSpeed's
// did, at the learning rate its token count gave (the curriculum's tokens, read back from its
// checkpoint), and logs its losses, rates and sequence lengths.
TEST_F(DeepSpeedResume, FollowsTheSeqlenCurriculumOfMegatronDeepSpeedsOwnRun) {
    const simdjson::dom::element run = expected["curriculum"];
    const auto r = mt::test::run_command(command("curriculum") + " --load " +
                                         q(root / "deepspeed_gpt_curriculum") + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::vector<double> loss = doubles(run["lm_loss"]), lr = doubles(run["learning_rate"]),
                              seqlen = doubles(run["curriculum_seqlen"]);
    ASSERT_EQ(loss.size(), 4u);
    ASSERT_EQ(seqlen, (std::vector<double>{8, 16, 24, 32}));
    const auto ours = mt::test::logged_values(r.output, "lm loss");
    const auto our_lr = mt::test::logged_values(r.output, "learning rate");
    // (Megatron-DeepSpeed's field is right-aligned: " curriculum seqlen:    16 |".)
    std::vector<double> our_seqlen;
    const std::regex field("curriculum seqlen: +([0-9]+) \\|");
    for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), field);
         it != std::sregex_iterator(); ++it)
        our_seqlen.push_back(std::stod((*it)[1]));
    ASSERT_EQ(ours.size(), 3u) << r.output;
    ASSERT_EQ(our_lr.size(), 3u) << r.output;
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_NEAR(ours[i], loss[i + 1], 1e-5 * loss[i + 1]) << "iteration " << i + 2;
        // (The log prints 7 significant digits.)
        EXPECT_NEAR(our_lr[i], lr[i + 1], 1e-6 * lr[i + 1]) << "iteration " << i + 2;
        EXPECT_EQ(our_seqlen.at(i), seqlen[i + 1]) << "iteration " << i + 2;
    }
    // Resumed from our own checkpoint of iteration 2 (its flags save every iteration), the run
    // logs the same: the curriculum's token count comes back with it (counting 32 tokens a
    // sample would give iteration 4 another learning rate).
    mt::test::write_file(work / "ds" / "latest_checkpointed_iteration.txt", "2");
    const auto again =
        mt::test::run_command(command("curriculum") + " --load " + q(work / "ds") + " 2>&1");
    ASSERT_EQ(again.exit_code, 0) << again.output;
    const auto resumed = mt::test::logged_values(again.output, "lm loss");
    const auto resumed_lr = mt::test::logged_values(again.output, "learning rate");
    ASSERT_EQ(resumed.size(), 2u) << again.output;
    for (size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(resumed[i], ours[i + 1]) << "iteration " << i + 3;
        EXPECT_EQ(resumed_lr.at(i), our_lr[i + 1]) << "iteration " << i + 3;
    }
}

// What DeepSpeed would do differently from megatron-train is refused, naming the file and key.
TEST_F(DeepSpeedRun, RefusesWhatItCannotDoNamingTheKey) {
    struct Case {
        std::string json, flags, message;
    };
    const std::vector<Case> cases{
        {R"({"zero_optimization": {"stage": 3}})", "",
         "\"zero_optimization.stage 3\": not supported yet: ZeRO stage 3"},
        {R"({"curriculum_learning": {"enabled": true}})", "",
         "curriculum learning requires \"curriculum_learning.curriculum_type\""},
        {R"({"curriculum_learning": {"enabled": true, "curriculum_type": "seqlen",
             "min_difficulty": 8, "max_difficulty": 32, "schedule_type": "fixed_linear",
             "schedule_config": {"total_curriculum_step": 4, "difficulty_step": 8}}})",
         "--context-parallel-size 2",
         "not supported yet: the seqlen curriculum with context parallelism"},
        {R"({"bf16": {"enabled": true}})", "", "must agree with the flags (fp32)"},
        {R"({"train_micro_batch_size_per_gpu": 4})", "",
         "train_micro_batch_size_per_gpu 4 differs from --micro-batch-size 2"},
        {R"({"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2,
             "gradient_accumulation_steps": 2})",
         "", "train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step"},
        {R"({"some_new_key": 1})", "",
         "\"some_new_key\": not supported yet: this DeepSpeed configuration key"},
        {R"({"fp16": {"enabled": false}})", "--num-experts 8 8 8",
         "num_experts must be either a single value or a list of the same length as the number "
         "of MoE layers (--num-experts gives 3 values for 1 MoE layers"},
        {R"({"fp16": {"enabled": false}})", "--num-experts 4 --topk 3",
         "--topk 3: not supported yet: DeepSpeed's top-k gating above 2"},
        {"{", "", "not a DeepSpeed JSON configuration"},
    };
    int n = 0;
    for (const Case& c : cases) {
        const std::string path = config("bad" + std::to_string(n++) + ".json", c.json);
        const auto r =
            mt::test::run_command(train("--deepspeed --deepspeed_config " + path + " " + c.flags));
        EXPECT_NE(r.exit_code, 0) << c.json;
        EXPECT_NE(r.output.find(c.message), std::string::npos) << c.json << "\n" << r.output;
    }
    const auto no_config = mt::test::run_command(train("--deepspeed"));
    EXPECT_NE(no_config.output.find("--deepspeed needs --deepspeed_config"), std::string::npos)
        << no_config.output;
    const auto zero3 = mt::test::run_command(train("--zero-stage 3"));
    EXPECT_NE(zero3.output.find("--zero-stage 3: not supported yet"), std::string::npos)
        << zero3.output;
}

}  // namespace
