// scripts/quickstart.sh, the README's main command, without its install/build step
// (QUICKSTART_SKIP_SETUP) on the binaries of this build tree, with a few training iterations:
// every stage runs and leaves its output, a re-run in the same directory works, and a failure
// names the stage it happened in.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "test_support.h"

namespace fs = std::filesystem;
using mt::test::run_command;
using mt::test::TempDir;

namespace {

const fs::path kScript =
    mt::test::fixtures_dir().parent_path().parent_path() / "scripts" / "quickstart.sh";

std::string quickstart(const fs::path& build_dir, const fs::path& out, int iters) {
    return "QUICKSTART_SKIP_SETUP=1 BUILD_DIR=" + mt::test::shell_quote(build_dir) +
           " QUICKSTART_OUT=" + mt::test::shell_quote(out) +
           " QUICKSTART_TRAIN_ITERS=" + std::to_string(iters) + " bash " +
           mt::test::shell_quote(kScript) + " 2>&1";
}

TEST(Quickstart, RunsTheWholeChainOnTheBuiltBinaries) {
    TempDir dir;
    const fs::path out = dir / "out";
    auto r = run_command(quickstart(mt::test::binary_dir(), out, 4));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const char* header :
         {"[1/6] setup: skipped", "[2/6] preprocess: ", "[3/6] train: ", "[4/6] generate: ",
          "[5/6] eval: ", "[6/6] convert: ", "[6/6] convert: done in ", "quickstart: done in "})
        EXPECT_NE(r.output.find(header), std::string::npos) << header << "\n" << r.output;
    // The tools' own progress lines come through.
    EXPECT_NE(r.output.find("iteration        4/       4 |"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(" validation results on LAMBADA | "), std::string::npos) << r.output;

    for (const char* file :
         {"demo_corpus.jsonl", "demo_text_document.bin", "demo_text_document.idx",
          "checkpoint/iter_0000004/metadata.json", "generations.txt", "lambada_demo.jsonl",
          "lambada_demo_results.json", "hf/config.json", "hf/model.safetensors", "hf/vocab.json",
          "hf/merges.txt"}) {
        ASSERT_TRUE(fs::is_regular_file(out / file)) << file;
        EXPECT_GT(fs::file_size(out / file), 0u) << file;
    }
    EXPECT_EQ(mt::test::read_file(out / "checkpoint" / "latest_checkpointed_iteration.txt"), "4");
    EXPECT_NE(mt::test::read_file(out / "generations.txt").find("Context:This program is free"),
              std::string::npos);
    const std::string results = mt::test::read_file(out / "lambada_demo_results.json");
    EXPECT_NE(results.find("\"total_examples\": 50"), std::string::npos) << results;
    EXPECT_NE(mt::test::read_file(out / "hf" / "config.json").find("\"model_type\": \"gpt2\""),
              std::string::npos);
    EXPECT_NE(r.output.find("LAMBADA-style on 50 lines"), std::string::npos) << r.output;

    // The Hugging Face folder is a model the tools load back.
    auto hf = run_command(mt::test::tool_path("megatron-generate").string() + " --load " +
                          mt::test::shell_quote(out / "hf") +
                          " --greedy --out-seq-length 4 --prompts 'This program' 2>&1");
    EXPECT_EQ(hf.exit_code, 0) << hf.output;

    // Idempotent: a second run in the same directory starts afresh and succeeds.
    auto again = run_command(quickstart(mt::test::binary_dir(), out, 2));
    ASSERT_EQ(again.exit_code, 0) << again.output;
    EXPECT_EQ(mt::test::read_file(out / "checkpoint" / "latest_checkpointed_iteration.txt"), "2");
    EXPECT_FALSE(fs::exists(out / "checkpoint" / "iter_0000004"));
    EXPECT_TRUE(fs::is_regular_file(out / "hf" / "model.safetensors"));
}

TEST(Quickstart, FailsNamingTheStage) {
    TempDir dir;
    fs::create_directories(dir / "empty-build");
    auto r = run_command(quickstart(dir / "empty-build", dir / "out", 2));
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("megatron-preprocess is missing"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("quickstart: FAILED at stage [1/6] setup"), std::string::npos)
        << r.output;

    auto bad = run_command(quickstart(mt::test::binary_dir(), dir / "out", 0));
    EXPECT_EQ(bad.exit_code, 2) << bad.output;
    EXPECT_NE(bad.output.find("QUICKSTART_TRAIN_ITERS"), std::string::npos) << bad.output;
}

}  // namespace
