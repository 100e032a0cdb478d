// Every writer killed (SIGKILL) just before each of its renames in turn
// (MT_FAULT_KILL_AT_RENAME=1, 2, ... until a run finishes): what a kill leaves under the final
// names is the old output or the new one, complete, never a mixture or a partial file.
// megatron-preprocess over an earlier dataset, megatron-train saving torch and torch_dist
// checkpoints over an earlier one (the latest then loads and resumes), and megatron-convert
// exporting a Hugging Face folder over an earlier export.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "test_support.h"

namespace fs = std::filesystem;
using mt::test::read_file;
using mt::test::run_command;
using mt::test::shell_quote;
using mt::test::TempDir;

namespace {

// Runs `command` killed at its rename 1, 2, ... until a run finishes; `check` looks at what each
// killed run left. Returns how many renames the whole run made.
int kill_at_each_rename(const std::string& command, const std::function<void(int)>& check) {
    for (int n = 1; n <= 100; ++n) {
        SCOPED_TRACE("killed before rename " + std::to_string(n));
        const auto r = run_command("MT_FAULT_KILL_AT_RENAME=" + std::to_string(n) + " " + command);
        if (r.exit_code == 0) return n - 1;
        // The shell reports a killed child as 128 + 9 (or the status has no exit code).
        EXPECT_TRUE(r.exit_code == 137 || r.exit_code == -1) << r.output;
        check(n);
        if (::testing::Test::HasFailure()) return n;
    }
    ADD_FAILURE() << "more than 100 renames: " << command;
    return 100;
}

std::string documents(const std::string& word, int count) {
    std::string jsonl;
    for (int d = 0; d < count; ++d)
        jsonl += "{\"text\": \"Document " + std::to_string(d) + " says " + word + " " +
                 std::to_string(d * 7 % 13) + " times.\"}\n";
    return jsonl;
}

std::string preprocess(const fs::path& input, const fs::path& prefix) {
    return mt::test::tool_path("megatron-preprocess").string() + " --input " + shell_quote(input) +
           " --output-prefix " + shell_quote(prefix) + mt::test::tiny_gpt2_tokenizer_flags() +
           " --append-eod --workers 1";
}

TEST(CrashConsistency, PreprocessLeavesTheOldDatasetOrTheNewOne) {
    TempDir dir;
    mt::test::write_file(dir / "old.jsonl", documents("hello", 40));
    mt::test::write_file(dir / "new.jsonl", documents("goodbye again", 60));
    // The new dataset, written whole elsewhere: what the killed runs must end in.
    ASSERT_EQ(run_command(preprocess(dir / "new.jsonl", dir / "want")).exit_code, 0);
    const std::string want_bin = read_file(dir / "want_text_document.bin");
    const std::string want_idx = read_file(dir / "want_text_document.idx");
    auto r = run_command(preprocess(dir / "old.jsonl", dir / "out"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path bin = dir / "out_text_document.bin", idx = dir / "out_text_document.idx";
    const std::string old_bin = read_file(bin), old_idx = read_file(idx);
    ASSERT_NE(old_bin, want_bin);
    const int renames = kill_at_each_rename(preprocess(dir / "new.jsonl", dir / "out"), [&](int) {
        if (!fs::exists(idx)) return;  // no index: the dataset is refused by name, not misread
        const std::string b = read_file(bin), i = read_file(idx);
        EXPECT_TRUE((b == old_bin && i == old_idx) || (b == want_bin && i == want_idx))
            << "a .bin and .idx of different runs";
    });
    EXPECT_GE(renames, 2);
    EXPECT_EQ(read_file(bin), want_bin);
    EXPECT_EQ(read_file(idx), want_idx);
}

std::string train(const TempDir& dir, const std::string& data, const std::string& format) {
    return mt::test::tool_path("megatron-train").string() +
           " --num-layers 2 --hidden-size 16 --num-attention-heads 2 --seq-length 16"
           " --max-position-embeddings 16 --micro-batch-size 2 --global-batch-size 4"
           " --lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine --lr-warmup-iters 1"
           " --train-iters 4" +
           mt::test::tiny_gpt2_tokenizer_flags() + " --data-path " + shell_quote(data) +
           " --split 98,1,1 --data-cache-path " + shell_quote(dir / "cache") +
           " --log-interval 1 --eval-iters 0 --ckpt-format " + format;
}

TEST(CrashConsistency, ACheckpointSaveKilledAnywhereLeavesOneThatResumes) {
    TempDir dir;
    const std::string data = mt::test::tiny_gpt2_dataset(dir, mt::test::hello_documents(100));
    for (const std::string format : {"torch", "torch_dist"}) {
        SCOPED_TRACE(format);
        const fs::path ckpt = dir / format;
        const std::string base = train(dir, data, format) + " --save " + shell_quote(ckpt);
        auto first = run_command(base + " --exit-interval 2");
        ASSERT_EQ(first.exit_code, 0) << first.output;
        const int renames = kill_at_each_rename(base + " --load " + shell_quote(ckpt), [&](int) {
            const std::string latest = read_file(ckpt / "latest_checkpointed_iteration.txt");
            EXPECT_TRUE(latest == "2" || latest == "4") << latest;
            // The latest checkpoint loads, and training goes on from it.
            auto resumed = run_command(train(dir, data, format) + " --load " + shell_quote(ckpt));
            EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
            EXPECT_NE(resumed.output.find("at iteration " + latest), std::string::npos)
                << resumed.output;
        });
        EXPECT_GE(renames, 2);
        EXPECT_EQ(read_file(ckpt / "latest_checkpointed_iteration.txt"), "4");
    }
}

std::string export_hf(const fs::path& from, const fs::path& to) {
    return mt::test::tool_path("megatron-convert").string() + " --model-type GPT --load-dir " +
           shell_quote(from) + " --save-dir " + shell_quote(to) + " --loader core --saver hf";
}

TEST(CrashConsistency, AHuggingFaceExportKilledAnywhereLeavesTheOldFolderOrTheNewOne) {
    TempDir dir;
    const std::string data = mt::test::tiny_gpt2_dataset(dir, mt::test::hello_documents(100));
    const std::string base = train(dir, data, "torch");
    for (const char* iters : {"2", "4"}) {
        auto r = run_command(base + " --exit-interval " + std::string(iters) + " --save " +
                             shell_quote(dir / ("ckpt" + std::string(iters))));
        ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    ASSERT_EQ(run_command(export_hf(dir / "ckpt4", dir / "want")).exit_code, 0);
    auto r = run_command(export_hf(dir / "ckpt2", dir / "hf"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string old_weights = read_file(dir / "hf" / "model.safetensors");
    const std::string want_weights = read_file(dir / "want" / "model.safetensors");
    ASSERT_NE(old_weights, want_weights);
    const int renames = kill_at_each_rename(export_hf(dir / "ckpt4", dir / "hf"), [&](int) {
        ASSERT_TRUE(fs::exists(dir / "hf" / "config.json"));
        const std::string w = read_file(dir / "hf" / "model.safetensors");
        EXPECT_TRUE(w == old_weights || w == want_weights) << "a partial model.safetensors";
    });
    EXPECT_GE(renames, 1);
    EXPECT_EQ(read_file(dir / "hf" / "model.safetensors"), want_weights);
}

}  // namespace
