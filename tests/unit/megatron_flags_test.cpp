// The catalogue of Megatron-LM's flags (mt/cli/megatron_flags.h): its list is the committed one
// of tests/fixtures/megatron_flags, its rows name Megatron flags, the flags parse with
// Megatron's arity, and a tool built on run_tool accepts, refuses and checks them as argparse
// and the catalogue say.
#include <gtest/gtest.h>

#include <boost/program_options.hpp>
#include <fstream>
#include <set>
#include <sstream>

#include "mt/cli/megatron_flags.h"
#include "mt/cli/tool.h"
#include "test_support.h"

namespace {

namespace po = boost::program_options;
using mt::cli::describe;
using mt::cli::FlagStatus;
using mt::cli::MegatronFlag;
using mt::cli::MegatronTool;

std::vector<std::vector<std::string>> tsv_rows(std::string* header,
                                               const char* file = "megatron_flags.tsv") {
    std::ifstream in(mt::test::fixtures_dir() / "megatron_flags" / file);
    std::vector<std::vector<std::string>> rows;
    bool columns = false;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("#", 0) == 0) {
            *header += line + "\n";
            continue;
        }
        if (!columns) {  // the column names
            columns = true;
            continue;
        }
        std::vector<std::string> fields;
        std::istringstream s(line);
        for (std::string f; std::getline(s, f, '\t');) fields.push_back(f);
        if (!line.empty() && line.back() == '\t') fields.push_back("");
        rows.push_back(fields);
    }
    return rows;
}

void expect_committed_list(std::span<const MegatronFlag> flags, std::string_view version,
                           const char* file, const char* script) {
    std::string header;
    const auto rows = tsv_rows(&header, file);
    EXPECT_NE(header.find("Megatron-LM " + std::string(version) + " "), std::string::npos)
        << header;
    ASSERT_EQ(rows.size(), flags.size())
        << "rerun tests/fixtures/megatron_flags/" << script << " (it writes both)";
    for (size_t i = 0; i < rows.size(); ++i) {
        const MegatronFlag& f = flags[i];
        const std::vector<std::string> code{std::string(f.flag),          std::string(f.group),
                                            std::string(f.kind),          std::string(f.nargs),
                                            std::string(f.type),          std::string(f.choices),
                                            std::string(f.default_value), std::string(f.dest)};
        EXPECT_EQ(rows[i], code) << file << " row " << i;
    }
}

TEST(MegatronFlags, TheListIsTheCommittedOne) {
    expect_committed_list(mt::cli::megatron_flags(), mt::cli::megatron_version(),
                          "megatron_flags.tsv", "extract_flags.py");
}

// core_v0.19's flags (its live parser), read for checkpoints' args.
TEST(MegatronFlags, TheNewerListIsTheCommittedOne) {
    expect_committed_list(mt::cli::newer_megatron_flags(), mt::cli::newer_megatron_version(),
                          "megatron_flags_0.19.tsv", "extract_live_flags.py");
    EXPECT_EQ(mt::cli::newer_megatron_version(), "0.19");
}

// Both versions' flags, core_v0.13's first; each once.
TEST(MegatronFlags, TheKnownFlagsAreBothVersions) {
    const auto known = mt::cli::known_megatron_flags();
    std::set<std::string_view> flags;
    for (const MegatronFlag& f : known) EXPECT_TRUE(flags.insert(f.flag).second) << f.flag;
    for (const MegatronFlag& f : mt::cli::megatron_flags()) EXPECT_TRUE(flags.count(f.flag));
    for (const MegatronFlag& f : mt::cli::newer_megatron_flags()) EXPECT_TRUE(flags.count(f.flag));
    EXPECT_EQ(known.front().flag, mt::cli::megatron_flags().front().flag);
    auto row = [&](std::string_view flag) {
        for (const MegatronFlag& f : known)
            if (f.flag == flag) return f;
        ADD_FAILURE() << flag;
        return MegatronFlag{};
    };
    // core_v0.19 added choices and lists; the dest stays core_v0.13's.
    EXPECT_EQ(row("--fp8-recipe").choices, "tensorwise|delayed|mxfp8|blockwise|custom");
    EXPECT_EQ(row("--cuda-graph-scope").choices, "");  // core_v0.19 takes any value
    EXPECT_EQ(row("--moe-aux-loss-coeff").nargs, "+");
    EXPECT_EQ(row("--rampup-batch-size").nargs, "*");
    EXPECT_EQ(row("--norm-epsilon").dest, "norm_epsilon");
    EXPECT_EQ(row("--use-megatron-fsdp").group, "distributed init");
}

TEST(MegatronFlags, TheCatalogueNamesMegatronFlagsOnce) {
    std::set<std::string_view> megatron, seen;
    for (const MegatronFlag& f : mt::cli::known_megatron_flags()) megatron.insert(f.flag);
    const auto rows = mt::cli::catalogue_flags();
    EXPECT_GT(rows.size(), 650u);
    for (std::string_view flag : rows) {
        EXPECT_TRUE(megatron.count(flag)) << flag << " is no flag of Megatron's arguments.py";
        EXPECT_TRUE(seen.insert(flag).second) << flag << " has two rows";
    }
}

TEST(MegatronFlags, EveryVerdictSaysWhy) {
    for (const MegatronFlag& f : mt::cli::known_megatron_flags())
        for (MegatronTool tool : {MegatronTool::training, MegatronTool::inference}) {
            const auto v = mt::cli::catalogue_verdict(f.flag, tool);
            if (v.status == FlagStatus::unknown) continue;  // left to the tools
            EXPECT_FALSE(v.text.empty()) << f.flag;
            if (!v.unless.empty()) {
                EXPECT_NE(v.unless.find('='), std::string::npos) << f.flag;
            }
        }
    // Switches have no values to be harmless with; value flags their Megatron default.
    EXPECT_TRUE(mt::cli::catalogue_verdict("--moe-use-upcycling", MegatronTool::training)
                    .harmless_values.empty());
    EXPECT_EQ(mt::cli::catalogue_verdict("--moe-upcycling-granularity", MegatronTool::training)
                  .harmless_values,
              std::vector<std::string>{"1"});
    EXPECT_EQ(mt::cli::catalogue_verdict("--encoder-pipeline-model-parallel-size",
                                         MegatronTool::training)
                  .harmless_values,
              std::vector<std::string>{"0"});
}

TEST(MegatronFlags, OptionsTakeMegatronsArity) {
    const po::options_description none;
    const auto options = mt::cli::megatron_options(MegatronTool::training, none);
    int checked = 0;
    for (const MegatronFlag& f : mt::cli::known_megatron_flags()) {
        const auto* o = options.find_nothrow(std::string(f.flag.substr(2)), false);
        const auto v = mt::cli::catalogue_verdict(f.flag, MegatronTool::training);
        if (v.status == FlagStatus::unknown) {
            EXPECT_EQ(o, nullptr) << f.flag;
            continue;
        }
        ASSERT_NE(o, nullptr) << f.flag;
        const auto* semantic = o->semantic().get();
        if (f.kind != "value") {
            EXPECT_EQ(semantic->max_tokens(), 0u) << f.flag;
        } else if (f.nargs.empty()) {
            EXPECT_EQ(semantic->min_tokens(), 1u) << f.flag;
            EXPECT_EQ(semantic->max_tokens(), 1u) << f.flag;
        } else {
            EXPECT_EQ(semantic->min_tokens(), f.nargs == "*" ? 0u : 1u) << f.flag;
            EXPECT_GT(semantic->max_tokens(), 1u) << f.flag;
        }
        ++checked;
    }
    EXPECT_GT(checked, 600);
}

TEST(MegatronFlags, Describe) {
    mt::cli::FlagVerdict v;
    v.status = FlagStatus::implemented;
    EXPECT_EQ(describe(v), "implemented");
    v.status = FlagStatus::accepted;
    v.text = "why";
    EXPECT_EQ(describe(v), "accepted: why");
    EXPECT_EQ(
        describe(mt::cli::catalogue_verdict("--moe-upcycling-granularity", MegatronTool::training)),
        "refused: this MoE (Mixture of Experts) option (accepted with the value 1)");
    EXPECT_EQ(
        describe(mt::cli::catalogue_verdict("--no-position-embedding", MegatronTool::inference)),
        "invalid: --no-position-embedding is deprecated, use --position-embedding-type "
        "(accepted with --position-embedding-type rope)");
    EXPECT_EQ(describe({}), "unknown");
}

// A small tool on run_tool standing for a Megatron entry point.
struct FakeTool {
    MegatronTool kind = MegatronTool::training;
    po::variables_map seen;
    bool ran = false;
    std::string err;

    int operator()(std::vector<std::string> args) {
        ran = false;
        seen.clear();
        mt::cli::ToolSpec spec;
        spec.name = "megatron-fake";
        spec.megatron_args = kind;
        spec.options.add_options()("lr", po::value<double>()->required(), "learning rate")(
            "save-interval", po::value<int>(), "iterations between saves")(
            "position-embedding-type", po::value<std::string>()->default_value("learned_absolute"),
            "")("use-flash-attn", po::bool_switch(), "accepted: flash-style already")(
            "data-path", po::value<std::vector<std::string>>()->multitoken(), "");
        spec.run = [&](const po::variables_map& vm) {
            ran = true;
            seen = vm;
            return 0;
        };
        args.insert(args.begin(), "megatron-fake");
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        testing::internal::CaptureStderr();
        testing::internal::CaptureStdout();
        const int rc = mt::cli::run_tool(int(argv.size()), argv.data(), spec);
        err = testing::internal::GetCapturedStderr();
        out = testing::internal::GetCapturedStdout();
        return rc;
    }
    std::string out;
};

TEST(MegatronFlags, AcceptedFlagsParseWithTheirArity) {
    FakeTool tool;
    EXPECT_EQ(tool({"--lr", "1", "--no-masked-softmax-fusion", "--num-workers", "4",
                    "--use-mcore-models", "--cp-comm-type", "p2p", "a2a", "--data-path", "A",
                    "--cross-entropy-fusion-impl=te", "--lr", "2"}),
              0)
        << tool.err;
    ASSERT_TRUE(tool.ran);
    EXPECT_EQ(tool.seen["lr"].as<double>(), 2.0);
    EXPECT_EQ(tool.seen["num-workers"].as<std::string>(), "4");
    EXPECT_EQ(tool.seen["cp-comm-type"].as<std::vector<std::string>>(),
              (std::vector<std::string>{"p2p", "a2a"}));
    EXPECT_EQ(tool.seen["data-path"].as<std::vector<std::string>>(), std::vector<std::string>{"A"});
    // The last occurrence wins for catalogue flags too.
    EXPECT_EQ(tool({"--lr", "1", "--num-workers", "4", "--num-workers", "8"}), 0) << tool.err;
    EXPECT_EQ(tool.seen["num-workers"].as<std::string>(), "8");
}

TEST(MegatronFlags, RefusedFlagsAreErrorsUnlessHarmless) {
    FakeTool tool;
    EXPECT_EQ(tool({"--lr", "1", "--moe-upcycling-granularity", "8"}), 1);
    EXPECT_FALSE(tool.ran);
    EXPECT_EQ(tool.err,
              "error: --moe-upcycling-granularity 8: not supported yet: this MoE (Mixture of "
              "Experts) option\n");
    // Before the required flags are checked.
    EXPECT_EQ(tool({"--encoder-num-layers", "2"}), 1);
    EXPECT_NE(tool.err.find("--encoder-num-layers is read by T5 models (pretrain_t5.py): give "
                            "--model t5"),
              std::string::npos)
        << tool.err;
    EXPECT_EQ(tool({"--lr", "1", "--moe-use-upcycling"}), 1);
    EXPECT_EQ(
        tool.err,
        "error: --moe-use-upcycling: not supported yet: this MoE (Mixture of Experts) option\n");
    // Megatron's defaults change nothing (numbers compare as numbers).
    EXPECT_EQ(tool({"--lr", "1", "--moe-upcycling-granularity", "1",
                    "--encoder-tensor-model-parallel-size", "0",
                    "--encoder-pipeline-model-parallel-size", "0"}),
              0)
        << tool.err;
    EXPECT_EQ(tool({"--lr", "1", "--moe-upcycling-granularity", "4"}), 1);
    // Refused unless the tool's own flag says so.
    EXPECT_EQ(tool({"--lr", "1", "--use-rotary-position-embeddings"}), 1);
    EXPECT_EQ(tool({"--lr", "1", "--use-rotary-position-embeddings", "--position-embedding-type",
                    "rope"}),
              0)
        << tool.err;
    // Megatron's own refusals, in its words.
    EXPECT_EQ(tool({"--lr", "1", "--batch-size", "4"}), 1);
    EXPECT_EQ(tool.err,
              "error: --batch-size argument is no longer valid, use --micro-batch-size "
              "instead\n");
}

TEST(MegatronFlags, ValuesAreCheckedAsArgparseChecksThem) {
    FakeTool tool;
    EXPECT_EQ(tool({"--lr", "1", "--num-workers", "two"}), 2);
    EXPECT_NE(tool.err.find("argument --num-workers: invalid int value: 'two'"), std::string::npos)
        << tool.err;
    EXPECT_EQ(tool({"--lr", "1", "--optimizer-offload-fraction", "x"}), 2);
    EXPECT_NE(tool.err.find("invalid float value: 'x'"), std::string::npos) << tool.err;
    EXPECT_EQ(tool({"--lr", "1", "--optimizer-offload-fraction", "0.5"}), 0) << tool.err;
    EXPECT_EQ(tool({"--lr", "1", "--empty-unused-memory-level", "3"}), 2);
    EXPECT_NE(tool.err.find("argument --empty-unused-memory-level: invalid choice: '3' (choose "
                            "from '0', '1', '2')"),
              std::string::npos)
        << tool.err;
    EXPECT_EQ(tool({"--lr", "1", "--cp-comm-type"}), 2);  // nargs '+': one value at least
    EXPECT_EQ(tool({"--lr", "1", "--no-such-flag"}), 2);  // not Megatron's: unrecognised
}

TEST(MegatronFlags, AliasesAndTheToolsOwnFlags) {
    FakeTool tool;
    // argparse's second name of --save-interval.
    EXPECT_EQ(tool({"--lr", "1", "--persistent-save-interval", "7"}), 0) << tool.err;
    EXPECT_EQ(tool.seen["save-interval"].as<int>(), 7);
    EXPECT_EQ(tool({"--lr", "1", "--persistent-save-interval=9"}), 0) << tool.err;
    EXPECT_EQ(tool.seen["save-interval"].as<int>(), 9);
    // The statuses: the tool's own flags (or its "accepted: ..." ones), then the catalogue's.
    EXPECT_EQ(tool({"--print-megatron-flags"}), 0);
    EXPECT_FALSE(tool.ran);
    EXPECT_NE(tool.out.find("--save-interval\timplemented\n"), std::string::npos);
    EXPECT_NE(tool.out.find("--persistent-save-interval\timplemented (as --save-interval)\n"),
              std::string::npos);
    EXPECT_NE(tool.out.find("--use-flash-attn\taccepted: flash-style already\n"),
              std::string::npos);
    EXPECT_NE(tool.out.find("--moe-use-upcycling\trefused: this MoE (Mixture of Experts) option"),
              std::string::npos);
    // A flag the catalogue leaves to the tools, which this one lacks.
    EXPECT_NE(tool.out.find("--num-layers\tunknown\n"), std::string::npos);
    // --help shows the tool's own flags only, and where the others are listed.
    EXPECT_EQ(tool({"--help"}), 0);
    EXPECT_EQ(tool.out.find("moe-use-upcycling"), std::string::npos);
    EXPECT_EQ(tool.out.find("  --print-megatron-flags"), std::string::npos) << tool.out;
    EXPECT_NE(tool.out.find("megatron-fake --print-megatron-flags lists them"), std::string::npos)
        << tool.out;
}

// A core_v0.19 script: its new flags parse with their arity and are accepted or refused by the
// catalogue, its second names of core_v0.13 flags do what those do, and a core_v0.13 flag takes
// the choices core_v0.19 added.
TEST(MegatronFlags, CoreV019FlagsAreKnown) {
    FakeTool tool;
    EXPECT_EQ(
        tool({"--lr", "1", "--distrib-optim-fully-reshardable-mem-efficient", "--wandb-entity",
              "me", "--inference-logging-step-interval", "5", "--async-strategy", "mcore",
              "--no-tp-comm-bulk-wgrad", "--disable-manual-gc-eval", "--cuda-graph-modules", "attn",
              "mlp", "--lion-beta1", "0.95"}),
        0)
        << tool.err;
    EXPECT_EQ(tool.seen["cuda-graph-modules"].as<std::vector<std::string>>(),
              (std::vector<std::string>{"attn", "mlp"}));
    EXPECT_EQ(tool({"--lr", "1", "--use-megatron-fsdp"}), 1);
    EXPECT_EQ(tool.err,
              "error: --use-megatron-fsdp: not supported yet: FSDP (fully sharded data "
              "parallelism)\n");
    EXPECT_EQ(tool({"--lr", "1", "--grpo-group-size", "4"}), 1);
    EXPECT_NE(tool.err.find("--grpo-group-size 4: not supported yet: reinforcement learning"),
              std::string::npos)
        << tool.err;
    // Megatron's default of either version changes nothing.
    EXPECT_EQ(tool({"--lr", "1", "--data-parallel-sharding-strategy", "optim_grads_params",
                    "--grpo-group-size", "2"}),
              0)
        << tool.err;
    EXPECT_EQ(tool({"--lr", "1", "--data-parallel-sharding-strategy", "no_shard"}), 0) << tool.err;
    EXPECT_EQ(tool({"--lr", "1", "--data-parallel-sharding-strategy", "optim"}), 1);
    // Negative numbers are values, as argparse reads them.
    EXPECT_EQ(tool({"--lr", "-2", "--rl-default-top-k=-1",
                    "--inference-dynamic-batching-num-cuda-graphs", "-1"}),
              0)
        << tool.err;
    EXPECT_EQ(tool.seen["lr"].as<double>(), -2.0);
    EXPECT_EQ(tool({"--lr", "1", "--rl-default-top-k", "-2"}), 1);
    EXPECT_NE(tool.err.find("--rl-default-top-k -2: not supported yet"), std::string::npos)
        << tool.err;
    // A choice only core_v0.19 has is refused by capability, not as an invalid choice.
    EXPECT_EQ(tool({"--lr", "1", "--fp8-recipe", "custom"}), 1);
    EXPECT_EQ(tool.err, "error: --fp8-recipe custom: not supported yet: FP8 training\n");
    EXPECT_EQ(tool({"--lr", "1", "--num-speculative-tokens", "x"}), 2);
    EXPECT_NE(tool.err.find("argument --num-speculative-tokens: invalid int value: 'x'"),
              std::string::npos)
        << tool.err;
    // The same row for the second name as for the first.
    for (MegatronTool kind : {MegatronTool::training, MegatronTool::inference})
        EXPECT_EQ(describe(mt::cli::catalogue_verdict("--no-tp-comm-bulk-wgrad", kind)),
                  describe(mt::cli::catalogue_verdict("--disable-tp-comm-bulk-wgrad", kind)));
    // Inference tools accept what only core_v0.19's training reads, and refuse its inference
    // capabilities.
    tool.kind = MegatronTool::inference;
    EXPECT_EQ(tool({"--lr", "1", "--grpo-group-size", "4", "--enable-chunked-prefill"}), 0)
        << tool.err;
    EXPECT_EQ(tool({"--lr", "1", "--num-speculative-tokens", "2"}), 1);
    EXPECT_EQ(tool.err,
              "error: --num-speculative-tokens 2: not supported yet: speculative "
              "decoding\n");
}

TEST(MegatronFlags, TrainingFlagsAreAcceptedByInferenceTools) {
    FakeTool tool;
    tool.kind = MegatronTool::inference;
    EXPECT_EQ(tool({"--lr", "1", "--train-iters", "10", "--rampup-batch-size", "1", "2", "3",
                    "--use-distributed-optimizer"}),
              0)
        << tool.err;
    EXPECT_EQ(tool({"--lr", "1", "--ict-head-size", "4"}), 1);
    EXPECT_NE(tool.err.find("--ict-head-size 4: not supported yet: "), std::string::npos)
        << tool.err;
    tool.kind = MegatronTool::training;
    EXPECT_EQ(tool({"--lr", "1", "--rampup-batch-size", "1", "2", "3"}), 1);
}

}  // namespace
