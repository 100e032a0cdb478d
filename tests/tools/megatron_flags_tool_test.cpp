// Every flag of Megatron-LM's arguments.py through the tool binaries: each is known to
// megatron-train, megatron-generate and megatron-eval (implemented, accepted or refused, never
// an unrecognised option), docs/flags.md is the table the tools print, accepted flags change
// nothing in a tiny training run, and refused ones name what is missing.
//
// docs/flags.md is written by this test when MT_UPDATE_FLAGS_DOC=1:
//   MT_UPDATE_FLAGS_DOC=1 ctest --test-dir build -R MegatronFlagsDoc
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "test_support.h"

namespace fs = std::filesystem;
using mt::test::run_command;
using mt::test::TempDir;

namespace {

const char* const kTools[] = {"megatron-train", "megatron-generate", "megatron-eval"};

struct MegatronFlagRow {
    std::string flag, group, versions;
};

// One of tests/fixtures/megatron_flags' lists: its flags and their groups, and its version.
std::vector<MegatronFlagRow> flag_list(const char* file, std::string* version) {
    std::ifstream in(mt::test::fixtures_dir() / "megatron_flags" / file);
    std::vector<MegatronFlagRow> rows;
    bool columns = false;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("# Megatron-LM ", 0) == 0) {
            std::istringstream s(line.substr(14));
            s >> *version;
        }
        if (line.rfind("# Megatron-DeepSpeed ", 0) == 0) *version = "DS";
        if (line.empty() || line[0] == '#') continue;
        if (!columns) {
            columns = true;
            continue;
        }
        const size_t tab = line.find('\t');
        rows.push_back({line.substr(0, tab),
                        line.substr(tab + 1, line.find('\t', tab + 1) - tab - 1), *version});
    }
    return rows;
}

// The flags as the tools know them: core_v0.13's (megatron_flags.tsv) in its order, then those
// only core_v0.19 has (megatron_flags_0.19.tsv), then those only Megatron-DeepSpeed has
// (megatron_flags_deepspeed.tsv, "DS"); each with the versions that have it.
std::vector<MegatronFlagRow> megatron_flag_rows(std::string* older, std::string* newer) {
    std::vector<MegatronFlagRow> rows = flag_list("megatron_flags.tsv", older);
    std::map<std::string, size_t> at;
    for (size_t i = 0; i < rows.size(); ++i) at[rows[i].flag] = i;
    std::string deepspeed;
    for (const auto& [more, version] : {std::pair{"megatron_flags_0.19.tsv", newer},
                                        std::pair{"megatron_flags_deepspeed.tsv", &deepspeed}}) {
        for (const MegatronFlagRow& row : flag_list(more, version)) {
            if (auto it = at.find(row.flag); it != at.end()) {
                rows[it->second].versions += ", " + row.versions;
            } else {
                at[row.flag] = rows.size();
                rows.push_back(row);
            }
        }
    }
    return rows;
}

// The tool's --print-megatron-flags: flag -> status.
std::map<std::string, std::string> statuses(const std::string& tool) {
    const auto r = run_command(mt::test::tool_path(tool).string() + " --print-megatron-flags");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::map<std::string, std::string> out;
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) {
        const size_t tab = line.find('\t');
        if (line.rfind("--", 0) == 0 && tab != std::string::npos)
            out[line.substr(0, tab)] = line.substr(tab + 1);
    }
    return out;
}

std::string cell(std::string text) {
    std::string out;
    for (char c : text) {
        if (c == '|' || c == '*' || c == '<' || c == '>') out += '\\';
        out += c;
    }
    return out;
}

std::string status_kind(const std::string& status) {
    return status.substr(0, status.find_first_of(":( "));
}

std::string flags_doc() {
    std::string version, newer;
    const auto rows = megatron_flag_rows(&version, &newer);
    std::map<std::string, std::map<std::string, std::string>> by_tool;
    for (const char* tool : kTools) by_tool[tool] = statuses(tool);
    std::map<std::string, std::map<std::string, int>> counts;
    for (const auto& row : rows)
        for (const char* tool : kTools) ++counts[tool][status_kind(by_tool[tool][row.flag])];

    std::ostringstream md;
    md << "# Megatron-LM flags\n\n"
       << "<!-- Generated from the code by tests/tools/megatron_flags_tool_test.cpp; do not edit.\n"
       << "     Regenerate (after building the tools and the test) with:\n"
       << "     MT_UPDATE_FLAGS_DOC=1 ctest --test-dir build -R MegatronFlagsDoc -->\n\n"
       << "megatron-train, megatron-generate and megatron-eval parse every flag of Megatron-LM "
       << version << "'s and " << newer
       << "'s\n`megatron/training/arguments.py`, the arguments of `pretrain_gpt.py`, "
       << "`tools/run_text_generation_server.py`\nand `tasks/main.py` alike, so a launch script "
       << "ports by changing the program's name. Each flag is\n\n"
       << "- **implemented**: the tool does what Megatron does (`--help` says how);\n"
       << "- **accepted**: parsed and checked as Megatron's parser checks it (type, choices), "
       << "and it changes\n  nothing here, for the reason given;\n"
       << "- **refused**: an error, `error: --flag [value]: not supported yet: <capability>`; a "
       << "value flag given\n  with Megatron's default (or another value the row names) changes "
       << "nothing and is accepted;\n"
       << "- **invalid**: an error in Megatron too, with Megatron's message.\n\n"
       << "A flag that would change results if it were honoured is never accepted. Flags only "
       << "training reads\nare accepted by megatron-generate and megatron-eval. The flags the "
       << "entry points add themselves\n(`--task`, `--temperature`, ...) are the tools' own; "
       << "see their `--help`.\n\n"
       << "A flag both versions have takes the choices and lists either takes; a flag " << newer
       << " renamed\n(`--no-tp-comm-bulk-wgrad` for `--disable-tp-comm-bulk-wgrad`) does what "
       << "its other name does.\n\n"
       << "Megatron-DeepSpeed's flags (DS: `megatron/arguments.py` of microsoft/Megatron-DeepSpeed "
       << "with DeepSpeed's\n`--deepspeed` and `--deepspeed_config`) are known too, so its launch "
       << "scripts port the same way: its\nspellings of Megatron-LM's flags "
       << "(`--num-key-value-heads`, `--layernorm-epsilon`,\n`--rotary-position-embeddings-theta`, "
       << "`--normalization rmsnorm`) do what those do, and `--deepspeed`\nreads the DeepSpeed "
       << "configuration (`megatron-train --help`, section Megatron-DeepSpeed).\n\n"
       << "The lists of flags are `tests/fixtures/megatron_flags/megatron_flags.tsv` (written by "
       << "its\n`extract_flags.py` from Megatron " << version << "'s source) and `megatron_flags_"
       << newer << ".tsv` (`extract_live_flags.py`,\nfrom Megatron " << newer
       << "'s parser); what each tool does with them is "
       << "what the tool itself\nreports (`megatron-train --print-megatron-flags`): its own "
       << "flags, then the catalogue of the others\n(`core/src/cli/megatron_flag_catalogue.cpp`, "
       << "`megatron_flag_catalogue_0_19.cpp` for the flags " << newer << " added,\n"
       << "`megatron_flag_catalogue_deepspeed.cpp` for Megatron-DeepSpeed's own, from "
       << "`megatron_flags_deepspeed.tsv`\nwritten by `extract_deepspeed_flags.py`)."
       << "\n\n| | implemented | accepted | refused | invalid |\n|---|---|---|---|---|\n";
    for (const char* tool : kTools)
        md << "| " << tool << " | " << counts[tool]["implemented"] << " | "
           << counts[tool]["accepted"] << " | " << counts[tool]["refused"] << " | "
           << counts[tool]["invalid"] << " |\n";
    md << "\n| Flag | Megatron | Megatron group | megatron-train | megatron-generate / "
          "megatron-eval (where different) |\n|---|---|---|---|---|\n";
    for (const auto& row : rows) {
        const std::string& train = by_tool["megatron-train"][row.flag];
        const std::string& generate = by_tool["megatron-generate"][row.flag];
        const std::string& eval = by_tool["megatron-eval"][row.flag];
        std::string inference;
        if (generate == eval) {
            if (generate != train) inference = cell(generate);
        } else {
            inference = "generate: " + cell(generate) + "<br>eval: " + cell(eval);
        }
        md << "| `" << row.flag << "` | " << row.versions << " | " << row.group << " | "
           << cell(train) << " | " << inference << " |\n";
    }
    return md.str();
}

fs::path flags_doc_path() {
    return mt::test::fixtures_dir().parent_path().parent_path() / "docs" / "flags.md";
}

TEST(MegatronFlagsDoc, EveryMegatronFlagIsKnownToEveryTool) {
    std::string version, newer;
    const auto rows = megatron_flag_rows(&version, &newer);
    ASSERT_GT(rows.size(), 850u);
    for (const char* tool : kTools) {
        const auto status = statuses(tool);
        EXPECT_EQ(status.size(), rows.size()) << tool;
        for (const auto& row : rows) {
            auto it = status.find(row.flag);
            ASSERT_NE(it, status.end()) << tool << " does not list " << row.flag;
            EXPECT_NE(it->second, "unknown")
                << row.flag << " would be an unrecognised option of " << tool
                << ": define it in the tool, or add it to core/src/cli/megatron_flag_catalogue.cpp";
        }
    }
}

TEST(MegatronFlagsDoc, MatchesTheCode) {
    const std::string doc = flags_doc();
    const fs::path path = flags_doc_path();
    const char* update = std::getenv("MT_UPDATE_FLAGS_DOC");
    if (update && std::string(update) == "1") {
        mt::test::write_file(path, doc);
        std::printf("wrote %s\n", path.string().c_str());
    }
    ASSERT_TRUE(fs::exists(path)) << path;
    EXPECT_TRUE(mt::test::read_file(path) == doc)
        << path.string() << " differs from what the tools report; regenerate it with\n"
        << "  MT_UPDATE_FLAGS_DOC=1 ctest --test-dir <build> -R MegatronFlagsDoc";
}

std::string q(const fs::path& p) {
    return mt::test::shell_quote(p);
}

std::string make_dataset(const TempDir& dir) {
    std::string jsonl;
    for (int d = 0; d < 200; ++d)
        jsonl += "{\"text\": \"Document " + std::to_string(d) + " talks about the number " +
                 std::to_string(d * 7 % 13) + ". Sentence two of document " + std::to_string(d) +
                 ".\"}\n";
    return mt::test::tiny_gpt2_dataset(dir, jsonl);
}

std::string train_command(const TempDir& dir, const std::string& data) {
    const fs::path vocab = mt::test::fixtures_dir() / "gpt2-tiny";
    return mt::test::tool_path("megatron-train").string() +
           " --num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 16"
           " --max-position-embeddings 16 --micro-batch-size 2 --lr 1e-3 --train-iters 4"
           " --log-interval 1 --eval-iters 0 --tokenizer-type GPT2BPETokenizer --vocab-file " +
           q(vocab / "vocab.json") + " --merge-file " + q(vocab / "merges.txt") + " --data-path " +
           q(data) + " --split 90,8,2 --data-cache-path " + q(dir / "cache");
}

std::vector<std::string> losses(const std::string& output) {
    static const std::regex loss(R"(lm loss: ([0-9.]+E[-+][0-9]+) \|)");
    std::vector<std::string> out;
    for (auto it = std::sregex_iterator(output.begin(), output.end(), loss);
         it != std::sregex_iterator(); ++it)
        out.push_back((*it)[1]);
    return out;
}

TEST(MegatronFlagsTool, AcceptedFlagsChangeNothingInATrainingRun) {
    TempDir dir;
    const std::string data = make_dataset(dir);
    const auto plain = run_command(train_command(dir, data));
    ASSERT_EQ(plain.exit_code, 0) << plain.output;
    const auto with_flags = run_command(
        train_command(dir, data) +
        " --no-masked-softmax-fusion --num-workers 2 --use-mcore-models --no-mmap-bin-files"
        " --no-bias-dropout-fusion --no-gradient-accumulation-fusion --deterministic-mode"
        " --timing-log-level 2 --log-timers-to-tensorboard --dist-ckpt-strictness log_all"
        " --ckpt-fully-parallel-load --async-save --manual-gc --cross-entropy-loss-fusion"
        " --moe-router-topk 2 --encoder-tensor-model-parallel-size 0 --dataloader-type single"
        " --cp-comm-type p2p --dist-ckpt-optim-fully-reshardable --wandb-entity me"
        " --no-tp-comm-bulk-wgrad --async-strategy mcore --rerun-mode validate_results"
        " --data-path " +
        q(data));
    ASSERT_EQ(with_flags.exit_code, 0) << with_flags.output;
    EXPECT_EQ(losses(plain.output).size(), 4u) << plain.output;
    EXPECT_EQ(losses(with_flags.output), losses(plain.output)) << with_flags.output;
}

TEST(MegatronFlagsTool, RefusedFlagsNameWhatIsMissing) {
    TempDir dir;
    const std::string data = make_dataset(dir);
    for (const auto& [flag, message] : std::vector<std::pair<std::string, std::string>>{
             {"--moe-use-upcycling",
              "error: --moe-use-upcycling: not supported yet: this MoE (Mixture of Experts) "
              "option"},
             {"--encoder-num-layers 2",
              "error: --encoder-num-layers is read by T5 models (pretrain_t5.py): give --model "
              "t5"},
             {"--hybrid-override-pattern M-M", "not supported yet: Mamba hybrid models"},
             {"--fp8-format hybrid --fp8-recipe custom",
              "--fp8-recipe custom: not supported yet: FP8 with a custom recipe"},
             {"--moe-upcycling-granularity 4",
              "--moe-upcycling-granularity 4: not supported yet: this MoE (Mixture"},
             {"--warmup 10", "error: --warmup argument is no longer valid"},
             {"--optimizer lion", "--optimizer lion: not supported yet: the lion optimizer"},
             {"--optimizer muon --fp16", "--optimizer muon with --fp16: Megatron does not support"},
             {"--optimizer muon --muon-coefficient-type custom",
              "--muon-coefficient-type custom: supported are simple, quintic, polar_express"},
             {"--optimizer muon --muon-scalar-optimizer lion",
              "not supported yet: Lion beside Muon"},
             {"--use-megatron-fsdp", "--use-megatron-fsdp: not supported yet: FSDP"},
             {"--num-experts 2 --moe-router-load-balancing-type global_aux_loss",
              "not supported yet: the global-batch auxiliary load-balancing loss"},
             {"--fp8-amax-compute-algo nope",
              "--fp8-amax-compute-algo nope: supported are most_recent, max"},
             {"--fp8-recipe nope",
              "--fp8-recipe nope: invalid choice (choose from "
              "'tensorwise', 'delayed', 'mxfp8', 'blockwise', 'custom')"}}) {
        const auto r = run_command(train_command(dir, data) + " " + flag);
        EXPECT_NE(r.exit_code, 0) << flag;
        EXPECT_NE(r.output.find(message), std::string::npos) << flag << "\n" << r.output;
        EXPECT_EQ(r.output.find("unrecognised"), std::string::npos) << r.output;
    }
}

TEST(MegatronFlagsTool, InferenceToolsAcceptTrainingFlags) {
    TempDir dir;
    for (const std::string tool : {"megatron-generate", "megatron-eval"}) {
        const std::string base = mt::test::tool_path(tool).string() + " --load " +
                                 q(dir / "missing") +
                                 (tool == "megatron-eval" ? " --task LAMBADA --valid-data x" : "");
        // Training flags pass the parser: the run gets as far as the missing checkpoint.
        auto r = run_command(base +
                             " --lr 1e-4 --train-iters 10 --data-path a b --save x"
                             " --use-distributed-optimizer --rampup-batch-size 1 1 10"
                             " --no-masked-softmax-fusion --tensor-model-parallel-size 2");
        EXPECT_NE(r.exit_code, 0) << tool;
        EXPECT_EQ(r.output.find("unrecognised"), std::string::npos) << tool << "\n" << r.output;
        EXPECT_EQ(r.output.find("not supported yet"), std::string::npos) << tool << "\n"
                                                                         << r.output;
        r = run_command(base + " --moe-layer-recompute");
        EXPECT_EQ(r.exit_code, 1) << tool;
        EXPECT_NE(r.output.find(
                      "--moe-layer-recompute: not supported yet: this MoE (Mixture of Experts)"),
                  std::string::npos)
            << tool << "\n"
            << r.output;
        // bf16 inference is implemented; fp32 residuals in it are not.
        r = run_command(base + " --bf16 --fp16-lm-cross-entropy");
        EXPECT_EQ(r.output.find("not supported yet"), std::string::npos) << tool << "\n"
                                                                         << r.output;
        r = run_command(base + " --bf16 --fp32-residual-connection");
        EXPECT_NE(r.output.find("--fp32-residual-connection: not supported yet: fp32 residual"),
                  std::string::npos)
            << tool << "\n"
            << r.output;
    }
}

}  // namespace
