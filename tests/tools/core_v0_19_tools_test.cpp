// core_v0.19's GPT2BPETokenizer through the tools: megatron-preprocess writes the bytes
// core_v0.19's tools/preprocess_data.py wrote
// (tests/fixtures/core_v0_19_tokenizers/preprocess.json), and a checkpoint trained with it carries
// its classes, so megatron-generate rebuilds the same tokenizer from the args alone.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>

#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using mt::test::run_command;
using mt::test::shell_quote;
using mt::test::tool_path;

class CoreV019Tools : public ::testing::Test {
  protected:
    void SetUp() override {
        vocab_ = mt::test::test_data("gpt2/gpt2-vocab.json");
        if (!vocab_) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: no GPT-2 vocabulary";
        spec_ = parser_.load(
            (mt::test::fixtures_dir() / "core_v0_19_tokenizers" / "preprocess.json").string());
        mt::test::write_first_lines(
            *mt::test::test_data(std::string(std::string_view(spec_["input"]))),
            int64_t(spec_["documents"]), dir_ / "input.jsonl");
    }
    std::string gpt2_files() const {
        return " --vocab-file " + shell_quote(*vocab_) + " --merge-file " +
               shell_quote(*mt::test::test_data("gpt2/gpt2-merges.txt"));
    }
    // The shared vocabulary files of a tokenizer type (HuggingFaceTokenizer: the folder named
    // after the run's "HuggingFaceTokenizer:").
    std::string files_of(std::string_view type, std::string_view run) const {
        if (type == "HuggingFaceTokenizer")
            return " --tokenizer-model " +
                   shell_quote(*mt::test::test_data("tokenizers/hf/" +
                                                    std::string(run.substr(run.find(':') + 1))));
        if (type == "BertWordPieceLowerCase")
            return " --vocab-file " +
                   shell_quote(*mt::test::test_data("bert/bert-large-uncased-vocab.txt"));
        if (type == "BertWordPieceCase")
            return " --vocab-file " +
                   shell_quote(*mt::test::test_data("bert/bert-large-cased-vocab.txt"));
        return gpt2_files();
    }

    simdjson::dom::parser parser_;
    simdjson::dom::element spec_;
    mt::test::TempDir dir_;
    std::optional<fs::path> vocab_;
};

TEST_F(CoreV019Tools, PreprocessWritesMegatronCoreV019Bytes) {
    int runs = 0;
    for (auto [name, flags] : spec_["flags"].get_object()) {
        SCOPED_TRACE(std::string(name));
        std::string command = shell_quote(tool_path("megatron-preprocess")) + " --input " +
                              shell_quote(dir_ / "input.jsonl") + " --output-prefix " +
                              shell_quote(dir_ / "out") +
                              files_of(std::string_view(flags.at(1)), name) +
                              " --workers 1 --tokenizer-classes core_v0.19";
        for (auto flag : flags.get_array())
            command += " " + shell_quote(std::string(std::string_view(flag)));
        const auto r = run_command(command);
        ASSERT_EQ(r.exit_code, 0) << r.output;
        for (const char* ext : {"bin", "idx"}) {
            const fs::path file = dir_ / (std::string("out_text_document.") + ext);
            EXPECT_EQ(int64_t(fs::file_size(file)), int64_t(spec_[name][ext]["bytes"])) << ext;
            EXPECT_EQ(mt::test::crc32_hex_of(file), std::string_view(spec_[name][ext]["crc32"]))
                << ext;
        }
        ++runs;
    }
    EXPECT_EQ(runs, 5);
}

// A prompt holding <|endoftext|> and an added special token: generation from the checkpoint's
// args equals generation from the flags, and differs from core_v0.13's tokenizer.
TEST_F(CoreV019Tools, CheckpointCarriesItsTokenizerClasses) {
    const std::string tokenizer = " --tokenizer-type GPT2BPETokenizer" + gpt2_files() +
                                  " --tokenizer-classes core_v0.19 --tokenizer-special-tokens "
                                  "'<|im_start|>' '<|im_end|>'";
    auto r = run_command(shell_quote(tool_path("megatron-preprocess")) + " --input " +
                         shell_quote(dir_ / "input.jsonl") + " --output-prefix " +
                         shell_quote(dir_ / "data") + tokenizer + " --workers 1 --append-eod");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path ckpt = dir_ / "ckpt";
    r = run_command(shell_quote(tool_path("megatron-train")) +
                    " --num-layers 1 --hidden-size 16 --num-attention-heads 2"
                    " --seq-length 32 --max-position-embeddings 32 --micro-batch-size 2"
                    " --global-batch-size 2 --lr 1e-3 --train-iters 2 --eval-iters 0"
                    " --split 100,0,0" +
                    tokenizer + " --data-path " + shell_quote(dir_ / "data_text_document") +
                    " --data-cache-path " + shell_quote(dir_ / "cache") + " --save " +
                    shell_quote(ckpt));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string generate =
        shell_quote(tool_path("megatron-generate")) + " --load " + shell_quote(ckpt) +
        " --greedy --out-seq-length 3 --prompts '<|im_start|>Hello<|endoftext|>'";
    const auto from_args = run_command(generate);
    const auto from_flags = run_command(generate + tokenizer);
    const auto v013 = run_command(generate + " --tokenizer-type GPT2BPETokenizer" + gpt2_files());
    for (const auto* run : {&from_args, &from_flags, &v013})
        ASSERT_EQ(run->exit_code, 0) << run->output;
    EXPECT_EQ(from_args.output, from_flags.output);
    EXPECT_NE(from_args.output, v013.output);
    // --saver hf: transformers' GPT2Tokenizer with the added special tokens at their ids, and
    // the exported folder reads the prompt as the checkpoint does.
    r = run_command(shell_quote(tool_path("megatron-convert")) +
                    " --model-type GPT --loader torch_dist --saver hf --load-dir " +
                    shell_quote(ckpt) + " --save-dir " + shell_quote(dir_ / "hf"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    simdjson::dom::parser parser;
    const simdjson::dom::element config =
        parser.load((dir_ / "hf" / "tokenizer_config.json").string());
    EXPECT_EQ(std::string_view(config["added_tokens_decoder"]["50257"]["content"]), "<|im_start|>");
    EXPECT_EQ(std::string_view(config["added_tokens_decoder"]["50258"]["content"]), "<|im_end|>");
    EXPECT_TRUE(config["added_tokens_decoder"]["50258"]["special"].get_bool().value());
    const auto from_hf = run_command(shell_quote(tool_path("megatron-generate")) + " --load " +
                                     shell_quote(dir_ / "hf") +
                                     " --greedy --out-seq-length 3 --prompts "
                                     "'<|im_start|>Hello<|endoftext|>'");
    ASSERT_EQ(from_hf.exit_code, 0) << from_hf.output;
    const auto after_load = [](const std::string& out) {
        return out.substr(out.find('\n', out.find("loaded ")));
    };
    EXPECT_EQ(after_load(from_hf.output), after_load(from_args.output));
}

// transformers' slow tokenizers are not built here: the flag that asks for them stops the tool.
TEST_F(CoreV019Tools, SlowTokenizersAreRefusedByName) {
    const auto r = run_command(shell_quote(tool_path("megatron-preprocess")) + " --input " +
                               shell_quote(dir_ / "input.jsonl") + " --output-prefix " +
                               shell_quote(dir_ / "slow") + " --tokenizer-type GPT2BPETokenizer" +
                               gpt2_files() + " --tokenizer-hf-no-use-fast");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("--tokenizer-hf-no-use-fast: not supported yet"), std::string::npos)
        << r.output;
    EXPECT_FALSE(fs::exists(dir_ / "slow_text_document.bin"));
}

}  // namespace
