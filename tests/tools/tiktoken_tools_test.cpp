// Megatron's TikTokenizer through the tools, on the shared Tekken vocabulary: megatron-preprocess
// writes the bytes Megatron's tools/preprocess_data.py wrote (tests/fixtures/tiktoken/
// preprocess.json), megatron-train trains on them with --tiktoken-* flags other than the defaults
// and records them in the checkpoint's args, and megatron-generate and megatron-eval rebuild the
// same tokenizer from those args alone; likewise core_v0.19's TikTokenizer
// (preprocess_core_v0_19.json, --tokenizer-classes core_v0.19).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using mt::test::run_command;
using mt::test::shell_quote;
using mt::test::tool_path;

class TikTokenizerTools : public ::testing::Test {
  protected:
    void SetUp() override {
        vocab_ = mt::test::test_data("tokenizers/tiktoken/tekken-240718.tiktoken.json");
        if (!vocab_) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: no Tekken vocabulary";
        const simdjson::dom::element spec =
            parser_.load((mt::test::fixtures_dir() / "tiktoken" / "preprocess.json").string());
        spec_ = spec;
        mt::test::write_first_lines(
            *mt::test::test_data(std::string(std::string_view(spec["input"]))),
            int64_t(spec["documents"]), dir_ / "input.jsonl");
    }
    // megatron-preprocess with preprocess.json's flags and `extra`; the output prefix.
    std::string preprocess(const std::string& extra) const {
        std::string flags;
        for (auto f : spec_["flags"].get_array()) flags += " " + std::string(std::string_view(f));
        const fs::path prefix = dir_ / "tekken";
        auto r = run_command(shell_quote(tool_path("megatron-preprocess")) + " --input " +
                             shell_quote(dir_ / "input.jsonl") + " --output-prefix " +
                             shell_quote(prefix) + " --tokenizer-type TikTokenizer" +
                             " --tokenizer-model " + shell_quote(*vocab_) + flags + extra);
        EXPECT_EQ(r.exit_code, 0) << r.output;
        return prefix.string() + "_text_document";
    }

    // The .bin and .idx at `prefix` have `expected`'s sizes and CRC-32s.
    static void expect_files(const std::string& prefix, simdjson::dom::element expected) {
        for (const char* ext : {"bin", "idx"}) {
            const fs::path file = prefix + "." + ext;
            EXPECT_EQ(int64_t(fs::file_size(file)), int64_t(expected[ext]["bytes"])) << ext;
            EXPECT_EQ(mt::test::crc32_hex_of(file), std::string_view(expected[ext]["crc32"]))
                << ext;
        }
    }
    // megatron-train for 2 iterations on `data` with `tokenizer`'s flags, saved to `ckpt`.
    mt::test::RunResult train(const std::string& tokenizer, const std::string& data,
                              const fs::path& ckpt) const {
        return run_command(shell_quote(tool_path("megatron-train")) +
                           " --num-layers 1 --hidden-size 16 --num-attention-heads 2"
                           " --seq-length 32 --max-position-embeddings 32 --micro-batch-size 2"
                           " --global-batch-size 2 --lr 1e-3 --train-iters 2 --eval-iters 0"
                           " --split 100,0,0" +
                           tokenizer + " --data-path " + shell_quote(data) + " --data-cache-path " +
                           shell_quote(dir_ / "cache") + " --save " + shell_quote(ckpt));
    }

    simdjson::dom::parser parser_;
    simdjson::dom::element spec_;
    mt::test::TempDir dir_;
    std::optional<fs::path> vocab_;
};

TEST_F(TikTokenizerTools, PreprocessWritesMegatronsBytes) {
    expect_files(preprocess(""), spec_);
}

TEST_F(TikTokenizerTools, PreprocessWritesMegatronCoreV019Bytes) {
    simdjson::dom::parser parser;
    const simdjson::dom::element expected = parser.load(
        (mt::test::fixtures_dir() / "tiktoken" / "preprocess_core_v0_19.json").string());
    int runs = 0;
    for (auto [name, flags] : expected["flags"].get_object()) {
        SCOPED_TRACE(std::string(name));
        std::string command = shell_quote(tool_path("megatron-preprocess")) + " --input " +
                              shell_quote(dir_ / "input.jsonl") + " --output-prefix " +
                              shell_quote(dir_ / "v019") +
                              " --tokenizer-type TikTokenizer --tokenizer-model " +
                              shell_quote(*vocab_) + " --workers 1 --tokenizer-classes core_v0.19";
        for (auto flag : flags.get_array())
            command += " " + shell_quote(std::string(std::string_view(flag)));
        const auto r = run_command(command);
        ASSERT_EQ(r.exit_code, 0) << r.output;
        expect_files((dir_ / "v019_text_document").string(), expected[name]);
        ++runs;
    }
    EXPECT_EQ(runs, 2);
}

// core_v0.19's special tokens are found in a prompt: generation from the checkpoint's args
// (core_v0.19's fields) equals generation from the flags, not core_v0.13's tokenizer.
TEST_F(TikTokenizerTools, CoreV019CheckpointCarriesItsTokenizerClasses) {
    const std::string tokenizer =
        " --tokenizer-type TikTokenizer --tokenizer-model " + shell_quote(*vocab_) +
        " --tiktoken-pattern v2 --tokenizer-special-tokens '<unk>' '<s>' '</s>' '<mask>' '<pad>'"
        " '<cls>' '<sep>' '[INST]'";
    const std::string data = preprocess("");
    const fs::path ckpt = dir_ / "ckpt";
    auto r = train(tokenizer, data, ckpt);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string generate = shell_quote(tool_path("megatron-generate")) + " --load " +
                                 shell_quote(ckpt) +
                                 " --greedy --out-seq-length 3 --prompts '[INST] Hello</s>'";
    const auto from_args = run_command(generate);
    const auto from_flags = run_command(generate + tokenizer);
    const auto v013 = run_command(generate + " --tokenizer-type TikTokenizer --tokenizer-model " +
                                  shell_quote(*vocab_) + " --tiktoken-pattern v2");
    for (const auto* run : {&from_args, &from_flags, &v013})
        ASSERT_EQ(run->exit_code, 0) << run->output;
    EXPECT_EQ(from_args.output, from_flags.output);
    EXPECT_NE(from_args.output, v013.output);

    // --saver hf writes the tokenizer as transformers' converters do (the shared tekken-240718
    // tokenizer.json was made by TikTokenConverter from the same 130072 ranks: the same merges
    // and vocabulary, ours after the 1000 special tokens), and the folder generates the same
    // text. (transformers 5.24 reading such a folder gives core_v0.19's ids on all 1000
    // openwebtext documents and texts around the special tokens.)
    r = run_command(shell_quote(tool_path("megatron-convert")) +
                    " --model-type GPT --loader torch_dist --saver hf --load-dir " +
                    shell_quote(ckpt) + " --save-dir " + shell_quote(dir_ / "hf"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto shared = mt::test::test_data("tokenizers/hf/tekken-240718/tokenizer.json");
    ASSERT_TRUE(shared);
    simdjson::dom::parser ours_parser, theirs_parser;
    const simdjson::dom::element ours = ours_parser.load((dir_ / "hf" / "tokenizer.json").string());
    const simdjson::dom::element theirs = theirs_parser.load(shared->string());
    EXPECT_EQ(simdjson::to_string(ours["model"]["merges"]),
              simdjson::to_string(theirs["model"]["merges"]));
    std::map<std::string_view, int64_t> our_vocab;
    for (auto [token, id] : ours["model"]["vocab"].get_object()) our_vocab[token] = int64_t(id);
    size_t tokens = 0;
    for (auto [token, id] : theirs["model"]["vocab"].get_object()) {
        const auto it = our_vocab.find(token);
        EXPECT_TRUE(it != our_vocab.end() && it->second == int64_t(id) + 1000) << token;
        ++tokens;
    }
    EXPECT_EQ(tokens, 130072u);
    // The special tokens at their ids too, as transformers' MistralConverter keeps them.
    EXPECT_EQ(our_vocab.size(), tokens + 1000);
    EXPECT_EQ(our_vocab["[INST]"], 7);
    EXPECT_EQ(our_vocab["<SPECIAL_999>"], 999);
    EXPECT_EQ(std::string_view(ours["added_tokens"].at(7)["content"]), "[INST]");
    const auto from_hf = run_command(shell_quote(tool_path("megatron-generate")) + " --load " +
                                     shell_quote(dir_ / "hf") +
                                     " --greedy --out-seq-length 3 --prompts '[INST] Hello</s>'");
    ASSERT_EQ(from_hf.exit_code, 0) << from_hf.output;
    const auto after_load = [](const std::string& out) {
        return out.substr(out.find('\n', out.find("loaded ")));
    };
    EXPECT_EQ(after_load(from_hf.output), after_load(from_args.output));
}

TEST_F(TikTokenizerTools, TrainedCheckpointCarriesItsTokenizer) {
    // 7 special tokens ahead of the vocabulary instead of 1000, and a vocabulary cut to 140000.
    const std::string tokenizer =
        " --tokenizer-type TikTokenizer --tokenizer-model " + shell_quote(*vocab_) +
        " --tiktoken-pattern v2 --tiktoken-num-special-tokens 7 --vocab-size 140000"
        " --tiktoken-special-tokens '<pad>' '<unk>' '<s>' '</s>'";
    const std::string data = preprocess(" --tiktoken-num-special-tokens 7 --vocab-size 140000");
    const fs::path ckpt = dir_ / "ckpt";
    auto r = train(tokenizer, data, ckpt);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("building TikTokenizer tokenizer (vocabulary 140000)"),
              std::string::npos)
        << r.output;
    // The same prompt through the same tokenizer, rebuilt from the args or from the flags.
    const std::string generate = shell_quote(tool_path("megatron-generate")) + " --load " +
                                 shell_quote(ckpt) +
                                 " --greedy --out-seq-length 3 --prompts 'Hello, 世界 </s>'";
    const auto from_args = run_command(generate);
    ASSERT_EQ(from_args.exit_code, 0) << from_args.output;
    EXPECT_NE(from_args.output.find("Hello, 世界 </s>"), std::string::npos) << from_args.output;
    const auto from_flags = run_command(generate + tokenizer);
    ASSERT_EQ(from_flags.exit_code, 0) << from_flags.output;
    EXPECT_EQ(from_args.output, from_flags.output);
    // Another tokenizer gives other ids, so other text: the args were read.
    const auto other = run_command(generate + " --tiktoken-num-special-tokens 1000");
    EXPECT_NE(from_args.output, other.output);

    mt::test::write_file(dir_ / "wiki.tokens", " The city of Paris is in France .\n");
    r = run_command(shell_quote(tool_path("megatron-eval")) + " --task WIKITEXT103 --load " +
                    shell_quote(ckpt) + " --valid-data " + shell_quote(dir_ / "wiki.tokens") +
                    " --seq-length 32 --micro-batch-size 1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("building TikTokenizer tokenizer (vocabulary 140000)"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("validation results on WIKITEXT103"), std::string::npos) << r.output;
}

}  // namespace
