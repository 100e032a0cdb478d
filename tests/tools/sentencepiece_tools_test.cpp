// Megatron's SentencePiece tokenizers through the tools, on the shared mistral-v1 model:
// megatron-preprocess writes the bytes Megatron's tools/preprocess_data.py wrote with each type
// (tests/fixtures/sentencepiece/preprocess.json: sizes and CRC-32s), megatron-train trains on
// the result and records the tokenizer in the checkpoint's args, and megatron-generate and
// megatron-eval rebuild it from them (no tokenizer flag) and decode to text, and
// megatron-convert --saver hf writes its tokenizer.model, which generation reads from the
// exported folder.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using mt::test::run_command;
using mt::test::shell_quote;
using mt::test::tool_path;

class SentencePieceTools : public ::testing::Test {
  protected:
    void SetUp() override {
        model_ = mt::test::test_data("tokenizers/sentencepiece/mistral-v1.model");
        corpus_ = mt::test::test_data("corpus/openwebtext-1000.jsonl");
        if (!model_ || !corpus_) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: no mistral-v1.model";
        mt::test::write_first_lines(*corpus_, 40, dir_ / "input.jsonl");
    }
    std::string preprocess(const std::string& type) const {
        const fs::path prefix = dir_ / type;
        auto r =
            run_command(shell_quote(tool_path("megatron-preprocess")) + " --input " +
                        shell_quote(dir_ / "input.jsonl") + " --output-prefix " +
                        shell_quote(prefix) + " --tokenizer-type " + type + " --tokenizer-model " +
                        shell_quote(*model_) + " --workers 1 --append-eod");
        EXPECT_EQ(r.exit_code, 0) << r.output;
        return prefix.string() + "_text_document";
    }

    // A 2-iteration megatron-train of a 1-layer GPT on `data` with `tokenizer` (flags), saved
    // to `ckpt`.
    mt::test::RunResult train(const std::string& tokenizer, const std::string& data,
                              const fs::path& ckpt) const {
        return run_command(shell_quote(tool_path("megatron-train")) +
                           " --num-layers 1 --hidden-size 32 --num-attention-heads 4"
                           " --seq-length 32 --max-position-embeddings 32 --micro-batch-size 2"
                           " --global-batch-size 2 --lr 1e-3 --train-iters 2 --eval-iters 0"
                           " --split 100,0,0" +
                           tokenizer + " --tokenizer-model " + shell_quote(*model_) +
                           " --data-path " + shell_quote(data) + " --data-cache-path " +
                           shell_quote(dir_ / "cache") + " --save " + shell_quote(ckpt));
    }

    mt::test::TempDir dir_;
    std::optional<fs::path> model_, corpus_;
};

TEST_F(SentencePieceTools, PreprocessWritesMegatronsBytes) {
    simdjson::dom::parser parser;
    const simdjson::dom::element expected =
        parser.load((mt::test::fixtures_dir() / "sentencepiece" / "preprocess.json").string());
    for (const char* type :
         {"SentencePieceTokenizer", "GPTSentencePieceTokenizer", "Llama2Tokenizer"}) {
        SCOPED_TRACE(type);
        const std::string prefix = preprocess(type);
        for (const char* ext : {"bin", "idx"}) {
            const fs::path file = prefix + "." + ext;
            EXPECT_EQ(int64_t(fs::file_size(file)), int64_t(expected[type][ext]["bytes"])) << ext;
            EXPECT_EQ(mt::test::crc32_hex_of(file), std::string_view(expected[type][ext]["crc32"]))
                << ext;
        }
    }
}

// The classes are chosen once: core_v0.19's flags under core_v0.13's classes, and core_v0.19's
// classes of a type built only as core_v0.13 builds it, are errors that say so.
TEST_F(SentencePieceTools, CoreV019FlagsAreRefusedWithCoreV013Classes) {
    const std::string base = shell_quote(tool_path("megatron-preprocess")) + " --input " +
                             shell_quote(dir_ / "input.jsonl") + " --output-prefix " +
                             shell_quote(dir_ / "refused") + " --workers 1";
    const auto r = run_command(base + " --tokenizer-type Llama2Tokenizer --tokenizer-model " +
                               shell_quote(*model_) +
                               " --tokenizer-classes core_v0.13 --tokenizer-sentencepiece-legacy");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("are core_v0.19's"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir_ / "refused_text_document.bin"));
}

// core_v0.19's tools/preprocess_data.py (make_fixtures_core_v0_19.py) with the flags it was
// given, here with --tokenizer-classes core_v0.19 (plain Llama2Tokenizer flags are core_v0.13's
// too, where they mean a bos before each document).
TEST_F(SentencePieceTools, PreprocessWritesMegatronCoreV019Bytes) {
    simdjson::dom::parser parser;
    const simdjson::dom::element expected = parser.load(
        (mt::test::fixtures_dir() / "sentencepiece" / "preprocess_core_v0_19.json").string());
    int runs = 0;
    for (auto [name, flags] : expected["flags"].get_object()) {
        SCOPED_TRACE(std::string(name));
        std::string command = shell_quote(tool_path("megatron-preprocess")) + " --input " +
                              shell_quote(dir_ / "input.jsonl") + " --output-prefix " +
                              shell_quote(dir_ / "v019") + " --tokenizer-model " +
                              shell_quote(*model_) + " --workers 1 --tokenizer-classes core_v0.19";
        for (simdjson::dom::element flag : flags.get_array())
            command += " " + shell_quote(std::string(std::string_view(flag)));
        const auto r = run_command(command);
        ASSERT_EQ(r.exit_code, 0) << r.output;
        for (const char* ext : {"bin", "idx"}) {
            const fs::path file = (dir_ / "v019_text_document").string() + "." + ext;
            EXPECT_EQ(int64_t(fs::file_size(file)), int64_t(expected[name][ext]["bytes"])) << ext;
            EXPECT_EQ(mt::test::crc32_hex_of(file), std::string_view(expected[name][ext]["crc32"]))
                << ext;
        }
        ++runs;
    }
    EXPECT_EQ(runs, 2);
}

// Trained with --tokenizer-classes core_v0.19: the checkpoint's args say so (as core_v0.19's
// do), and evaluation rebuilds that tokenizer (no bos), not core_v0.13's.
TEST_F(SentencePieceTools, CoreV019CheckpointCarriesItsTokenizerClasses) {
    const std::string prefix = (dir_ / "v019").string();
    auto r = run_command(shell_quote(tool_path("megatron-preprocess")) + " --input " +
                         shell_quote(dir_ / "input.jsonl") + " --output-prefix " +
                         shell_quote(prefix) + " --tokenizer-type Llama2Tokenizer" +
                         " --tokenizer-model " + shell_quote(*model_) +
                         " --workers 1 --append-eod --tokenizer-classes core_v0.19");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path ckpt = dir_ / "ckpt";
    r = train(" --tokenizer-type Llama2Tokenizer --tokenizer-classes core_v0.19",
              prefix + "_text_document", ckpt);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // The dataset cache's description names core_v0.19's class and its one model path.
    bool described = false;
    for (const auto& entry : fs::recursive_directory_iterator(dir_ / "cache"))
        if (entry.path().string().ends_with("-description.txt")) {
            const std::string text = mt::test::read_file(entry.path());
            EXPECT_NE(text.find("DefaultTokenizerText"), std::string::npos) << text;
            EXPECT_NE(text.find("\"tokenizer_path\": \"" + model_->string() + "\""),
                      std::string::npos)
                << text;
            described = true;
        }
    EXPECT_TRUE(described);
    mt::test::write_file(dir_ / "wiki.tokens", " The city of Paris is in France .\n");
    const std::string eval = shell_quote(tool_path("megatron-eval")) +
                             " --task WIKITEXT103 --seq-length 32 --micro-batch-size 1 --load " +
                             shell_quote(ckpt) + " --valid-data " +
                             shell_quote(dir_ / "wiki.tokens");
    const std::string flags =
        " --tokenizer-type Llama2Tokenizer --tokenizer-model " + shell_quote(*model_);
    const auto from_args = run_command(eval);
    const auto v019 = run_command(eval + flags + " --tokenizer-classes core_v0.19");
    const auto v013 = run_command(eval + flags);
    for (const auto* run : {&from_args, &v019, &v013}) ASSERT_EQ(run->exit_code, 0) << run->output;
    const auto results = [](const std::string& out) {
        return out.substr(out.find("validation results"));
    };
    EXPECT_EQ(results(from_args.output), results(v019.output));
    EXPECT_NE(results(from_args.output), results(v013.output));
    // --saver hf: transformers' LlamaTokenizer without the bos, which the exported folder's
    // evaluation keeps.
    r = run_command(shell_quote(tool_path("megatron-convert")) +
                    " --model-type GPT --loader torch_dist --saver hf --load-dir " +
                    shell_quote(ckpt) + " --save-dir " + shell_quote(dir_ / "hf"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string config = mt::test::read_file(dir_ / "hf" / "tokenizer_config.json");
    EXPECT_NE(config.find(R"("add_bos_token": false)"), std::string::npos) << config;
    const auto from_hf = run_command(shell_quote(tool_path("megatron-eval")) +
                                     " --task WIKITEXT103 --seq-length 32 --micro-batch-size 1"
                                     " --load " +
                                     shell_quote(dir_ / "hf") + " --valid-data " +
                                     shell_quote(dir_ / "wiki.tokens"));
    ASSERT_EQ(from_hf.exit_code, 0) << from_hf.output;
    EXPECT_EQ(results(from_hf.output), results(from_args.output));
}

// core_v0.13's SentencePieceTokenizer (special tokens added after the model's pieces and found in
// the text; --vocab-extra-ids sentinels): --saver hf writes tokenizer.model with a LlamaTokenizer
// config whose added tokens are those, at Megatron's ids, no bos; the exported folder is that
// tokenizer again (generation and evaluation give the checkpoint's text and numbers).
// tests/fixtures/hf/check_sentencepiece_export.py checks transformers' ids on such a folder.
TEST_F(SentencePieceTools, SaverHfWritesSentencePieceTokenizersSpecialTokens) {
    const std::string data = preprocess("SentencePieceTokenizer");
    const fs::path ckpt = dir_ / "ckpt";
    auto r = train(" --tokenizer-type SentencePieceTokenizer --vocab-extra-ids 2", data, ckpt);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = run_command(shell_quote(tool_path("megatron-convert")) +
                    " --model-type GPT --loader torch_dist --saver hf --load-dir " +
                    shell_quote(ckpt) + " --save-dir " + shell_quote(dir_ / "hf"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(mt::test::read_file(dir_ / "hf" / "tokenizer.model"), mt::test::read_file(*model_));
    simdjson::dom::parser parser;
    const simdjson::dom::element config =
        parser.load((dir_ / "hf" / "tokenizer_config.json").string());
    EXPECT_FALSE(config["add_bos_token"].get_bool().value());
    EXPECT_EQ(std::string_view(config["cls_token"].get_string().value()), "<CLS>");
    // mistral-v1 has 32000 pieces and no pad: <CLS> <SEP> <EOD> <MASK> <PAD> and two sentinels
    // follow, in Megatron's order.
    const char* added[] = {"<CLS>", "<SEP>",        "<EOD>",       "<MASK>",
                           "<PAD>", "<extra_id_0>", "<extra_id_1>"};
    for (size_t i = 0; i < std::size(added); ++i) {
        const std::string id = std::to_string(32000 + i);
        EXPECT_EQ(std::string_view(config["added_tokens_decoder"][id]["content"].get_string()),
                  added[i])
            << id;
        EXPECT_TRUE(config["added_tokens_decoder"][id]["special"].get_bool().value()) << id;
    }
    std::vector<std::string> specials;
    for (auto t : config["additional_special_tokens"].get_array())
        specials.emplace_back(std::string_view(t.get_string()));
    EXPECT_EQ(specials, (std::vector<std::string>{"<CLS>", "<SEP>", "<EOD>", "<MASK>", "<PAD>",
                                                  "<extra_id_0>", "<extra_id_1>"}));
    // Generation from the folder reads the same ids and text (evaluation's losses differ: the
    // export drops the table's 121 padded rows, which the checkpoint's softmax counts).
    const std::string generate = shell_quote(tool_path("megatron-generate")) +
                                 " --greedy --out-seq-length 6 --prompts 'The city<MASK>of'";
    const auto from_ckpt = run_command(generate + " --load " + shell_quote(ckpt));
    const auto from_hf = run_command(generate + " --load " + shell_quote(dir_ / "hf"));
    ASSERT_EQ(from_ckpt.exit_code, 0) << from_ckpt.output;
    ASSERT_EQ(from_hf.exit_code, 0) << from_hf.output;
    const auto after_load = [](const std::string& out) {
        return out.substr(out.find('\n', out.find("loaded ")));
    };
    EXPECT_EQ(after_load(from_hf.output), after_load(from_ckpt.output));
    // <MASK> read as its id and written back between spaces, as Megatron's detokenize does.
    EXPECT_NE(from_hf.output.find("The city <MASK> of"), std::string::npos) << from_hf.output;
}

// Trained with --tokenizer-type Llama2Tokenizer: generation and evaluation take the tokenizer
// from the checkpoint's args.
TEST_F(SentencePieceTools, TrainedCheckpointCarriesItsTokenizer) {
    const std::string data = preprocess("Llama2Tokenizer");
    const fs::path ckpt = dir_ / "ckpt";
    auto r = run_command(shell_quote(tool_path("megatron-train")) +
                         " --num-layers 2 --hidden-size 32 --num-attention-heads 4"
                         " --seq-length 64 --max-position-embeddings 64 --micro-batch-size 2"
                         " --global-batch-size 4 --lr 1e-3 --train-iters 3 --eval-iters 0"
                         " --split 100,0,0 --position-embedding-type rope --normalization RMSNorm"
                         " --swiglu --ffn-hidden-size 64 --disable-bias-linear"
                         " --tokenizer-type Llama2Tokenizer --tokenizer-model " +
                         shell_quote(*model_) + " --data-path " + shell_quote(data) +
                         " --data-cache-path " + shell_quote(dir_ / "cache") + " --save " +
                         shell_quote(ckpt));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = run_command(shell_quote(tool_path("megatron-generate")) + " --load " + shell_quote(ckpt) +
                    " --greedy --out-seq-length 4 --prompts 'The city of'");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("The city of"), std::string::npos) << r.output;
    // --no-use-tokenizer-model-from-checkpoint-args: the model file must come from the flags.
    const std::string not_from_args = shell_quote(tool_path("megatron-generate")) + " --load " +
                                      shell_quote(ckpt) +
                                      " --no-use-tokenizer-model-from-checkpoint-args --greedy "
                                      "--out-seq-length 4 --prompts 'The city of'";
    const auto refused = run_command(not_from_args);
    EXPECT_NE(refused.exit_code, 0);
    EXPECT_NE(refused.output.find("Llama2Tokenizer needs --tokenizer-model"), std::string::npos)
        << refused.output;
    const auto given = run_command(not_from_args + " --tokenizer-model " + shell_quote(*model_));
    ASSERT_EQ(given.exit_code, 0) << given.output;
    EXPECT_EQ(given.output.substr(given.output.find("The city of")),
              r.output.substr(r.output.find("The city of")));
    mt::test::write_file(dir_ / "wiki.tokens", " The city of Paris is in France .\n");
    r = run_command(shell_quote(tool_path("megatron-eval")) + " --task WIKITEXT103 --load " +
                    shell_quote(ckpt) + " --valid-data " + shell_quote(dir_ / "wiki.tokens") +
                    " --seq-length 64 --micro-batch-size 1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("validation results on WIKITEXT103"), std::string::npos) << r.output;
    // --saver hf writes the model's tokenizer.model with transformers' LlamaTokenizer config,
    // as Llama-2's and Mistral's own folders hold it.
    r = run_command(shell_quote(tool_path("megatron-convert")) +
                    " --model-type GPT --loader torch_dist --saver hf --load-dir " +
                    shell_quote(ckpt) + " --save-dir " + shell_quote(dir_ / "hf"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(mt::test::read_file(dir_ / "hf" / "tokenizer.model"), mt::test::read_file(*model_));
    const std::string config = mt::test::read_file(dir_ / "hf" / "tokenizer_config.json");
    for (const char* field : {R"("tokenizer_class": "LlamaTokenizer")", R"("add_bos_token": true)",
                              R"("bos_token": "<s>")", R"("eos_token": "</s>")"})
        EXPECT_NE(config.find(field), std::string::npos) << config;
    const std::string hf_config = mt::test::read_file(dir_ / "hf" / "config.json");
    EXPECT_NE(hf_config.find(R"("bos_token_id": 1)"), std::string::npos) << hf_config;
    EXPECT_NE(hf_config.find(R"("eos_token_id": 2)"), std::string::npos) << hf_config;
    // The exported folder brings its tokenizer.model: generation and evaluation need no
    // tokenizer flag and give the checkpoint's text and numbers (after the "loaded" line).
    for (const auto& [tool, flags] :
         {std::pair<std::string, std::string>{
              "megatron-generate", " --greedy --out-seq-length 6 --prompts 'The city of'"},
          {"megatron-eval",
           " --task WIKITEXT103 --seq-length 64 --micro-batch-size 1 --valid-data " +
               shell_quote(dir_ / "wiki.tokens")}}) {
        const auto from_ckpt =
            run_command(shell_quote(tool_path(tool)) + flags + " --load " + shell_quote(ckpt));
        const auto from_hf = run_command(shell_quote(tool_path(tool)) + flags + " --load " +
                                         shell_quote(dir_ / "hf"));
        ASSERT_EQ(from_ckpt.exit_code, 0) << from_ckpt.output;
        ASSERT_EQ(from_hf.exit_code, 0) << from_hf.output;
        const auto after_load = [](const std::string& out) {
            return out.substr(out.find('\n', out.find("loaded ")));
        };
        EXPECT_EQ(after_load(from_hf.output), after_load(from_ckpt.output)) << tool;
    }
}

}  // namespace
