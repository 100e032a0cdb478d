// megatron-preprocess through its binary: byte-identical output to Megatron's
// preprocess_data.py, input formats, ordering under threads and partitions, and bad input.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zstd.h>

#include <filesystem>

#include "mt/data/indexed_dataset.h"
#include "test_support.h"

namespace fs = std::filesystem;
using mt::test::read_file;
using mt::test::run_command;
using mt::test::TempDir;
using mt::test::write_file;

namespace {

std::string preprocess() {
    return mt::test::tool_path("megatron-preprocess").string();
}

std::string q(const fs::path& p) {
    return mt::test::shell_quote(p);
}

// NullTokenizer flags: "1 2 3" -> ids 1, 2, 3; eod = 1000.
const std::string kNull = " --tokenizer-type NullTokenizer --vocab-size 1000";

std::vector<std::vector<int64_t>> sequences(const std::string& prefix) {
    auto ds = mt::data::IndexedDataset::open(prefix);
    std::vector<std::vector<int64_t>> out;
    for (int64_t i = 0; i < ds.num_sequences(); ++i) out.push_back(ds.get(i));
    return out;
}

void expect_same_dataset(const std::string& a, const std::string& b) {
    EXPECT_TRUE(read_file(a + ".bin") == read_file(b + ".bin")) << a << " vs " << b;
    EXPECT_TRUE(read_file(a + ".idx") == read_file(b + ".idx")) << a << " vs " << b;
}

TEST(Preprocess, NullTokenizerDocumentsKeysAndPreSplitLists) {
    TempDir dir;
    write_file(dir / "in.jsonl",
               "{\"text\": \"1 2 3\", \"title\": \"9\"}\n"
               "{\"title\": \"8 7\", \"text\": [\"4 5\", \"6\"]}\r\n"
               "{\"text\": \"10\", \"title\": \"11\"}");  // CRLF and no final newline
    auto r = run_command(preprocess() + " --input " + q(dir / "in.jsonl") + " --output-prefix " +
                         q(dir / "out") + " --json-keys text title --append-eod" + kNull);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // A list value is a pre-split document: one sequence per sentence, EOD in the last one.
    EXPECT_EQ(sequences((dir / "out_text_document").string()),
              (std::vector<std::vector<int64_t>>{{1, 2, 3, 1000}, {4, 5}, {6, 1000}, {10, 1000}}));
    auto ds = mt::data::IndexedDataset::open((dir / "out_text_document").string());
    EXPECT_EQ(ds.num_documents(), 3);
    EXPECT_EQ(ds.document_index(2), 3);
    EXPECT_EQ(sequences((dir / "out_title_document").string()),
              (std::vector<std::vector<int64_t>>{{9, 1000}, {8, 7, 1000}, {11, 1000}}));
    EXPECT_NE(r.output.find("out_text_document.{bin,idx}: 3 documents, 4 sequences, 10 tokens "
                            "(uint16)"),
              std::string::npos)
        << r.output;
}

TEST(Preprocess, ThreadsAndZstdChangeNothing) {
    TempDir dir;
    std::string text;
    for (int i = 0; i < 3000; ++i)
        text += "{\"text\": \"" + std::to_string(i % 997) + " " + std::to_string(i) + "\"}\n";
    write_file(dir / "in.jsonl", text);
    std::string compressed(ZSTD_compressBound(text.size()), '\0');
    compressed.resize(
        ZSTD_compress(compressed.data(), compressed.size(), text.data(), text.size(), 3));
    write_file(dir / "in.jsonl.zst", compressed);

    auto run = [&](const std::string& input, const std::string& out, const std::string& extra) {
        auto r = run_command(preprocess() + " --input " + q(dir / input) + " --output-prefix " +
                             q(dir / out) + " --append-eod" + kNull + " " + extra);
        ASSERT_EQ(r.exit_code, 0) << r.output;
    };
    run("in.jsonl", "one", "--workers 1");
    run("in.jsonl", "two", "--workers 2 --log-interval 1000");
    run("in.jsonl.zst", "zst", "--workers 2");
    expect_same_dataset((dir / "one_text_document").string(), (dir / "two_text_document").string());
    expect_same_dataset((dir / "one_text_document").string(), (dir / "zst_text_document").string());
    auto seqs = sequences((dir / "one_text_document").string());
    ASSERT_EQ(seqs.size(), 3000u);
    EXPECT_EQ(seqs[2999], (std::vector<int64_t>{2999 % 997, 2999, 1000}));
}

TEST(Preprocess, PartitionsMergeRoundRobinAsMegatronDoes) {
    TempDir dir;
    std::string text, reordered_even, reordered_odd;
    for (int i = 0; i < 7; ++i) {
        std::string line = "{\"text\": \"" + std::to_string(i) + "\"}\n";
        text += line;
        (i % 2 == 0 ? reordered_even : reordered_odd) += line;
    }
    write_file(dir / "in.jsonl", text);
    write_file(dir / "expected.jsonl", reordered_even + reordered_odd);
    auto r = run_command(preprocess() + " --input " + q(dir / "in.jsonl") + " --output-prefix " +
                         q(dir / "parts") + " --workers 2 --partitions 2" + kNull);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = run_command(preprocess() + " --input " + q(dir / "expected.jsonl") + " --output-prefix " +
                    q(dir / "expected") + kNull);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_same_dataset((dir / "parts_text_document").string(),
                        (dir / "expected_text_document").string());
    // Like preprocess_data.py, the partition datasets stay next to the merged one.
    EXPECT_TRUE(fs::exists(dir / "parts_0_text_document.idx"));
    EXPECT_TRUE(fs::exists(dir / "parts_1_text_document.bin"));

    // Contiguous blocks of ceil(7/2) lines keep the input order.
    r = run_command(preprocess() + " --input " + q(dir / "in.jsonl") + " --output-prefix " +
                    q(dir / "seq") + " --workers 2 --partitions 2 --keep-sequential-samples" +
                    kNull);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = run_command(preprocess() + " --input " + q(dir / "in.jsonl") + " --output-prefix " +
                    q(dir / "plain") + kNull);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_same_dataset((dir / "seq_text_document").string(),
                        (dir / "plain_text_document").string());
}

TEST(Preprocess, BadLinesStopWithFileAndLineAndLeaveNoOutput) {
    TempDir dir;
    struct Case {
        std::string line, message;
    };
    const Case cases[] = {
        {"{\"text\": \"1 2\"", "not valid JSON"},
        {"{\"body\": \"1 2\"}", "no key 'text'"},
        {"{\"text\": \"1 \xff 2\"}", "not valid JSON: The input is not valid UTF-8"},
        {"{\"text\": 12}", "key 'text' holds a number, expected a string or a list of strings"},
        {"[1, 2]", "expected a JSON object, found a list"},
        {"", "empty line"},
        {"{\"text\": \"1 x\"}", "NullTokenizer: invalid literal for int() with base 10: 'x'"},
    };
    for (const auto& c : cases) {
        write_file(dir / "in.jsonl", "{\"text\": \"1\"}\n" + c.line + "\n{\"text\": \"2\"}\n");
        auto r = run_command(preprocess() + " --input " + q(dir / "in.jsonl") +
                             " --output-prefix " + q(dir / "out") + kNull);
        EXPECT_EQ(r.exit_code, 1) << c.line << "\n" << r.output;
        EXPECT_NE(r.output.find("error: " + (dir / "in.jsonl").string() + ":2: " + c.message),
                  std::string::npos)
            << r.output;
        EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1)
            << "partial outputs left behind for: " << c.line;
    }
}

// Outputs: a symlink is written through, a FIFO (or device) is an error, and an output that is
// the input under another name is refused before anything is written.
TEST(Preprocess, OutputsThatAreLinksSpecialFilesOrTheInput) {
    TempDir dir;
    write_file(dir / "in.jsonl", "{\"text\": \"1 2\"}\n");
    fs::create_directories(dir / "store");
    write_file(dir / "store" / "real.bin", "old");
    fs::create_symlink(dir / "store" / "real.bin", dir / "out_text_document.bin");
    auto r = run_command(preprocess() + " --input " + q(dir / "in.jsonl") + " --output-prefix " +
                         q(dir / "out") + kNull);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(fs::is_symlink(dir / "out_text_document.bin")) << "the link stays a link";
    EXPECT_EQ(fs::file_size(dir / "store" / "real.bin"), 4u) << "two uint16 tokens";

    ASSERT_EQ(::mkfifo((dir / "pipe_text_document.idx").c_str(), 0600), 0);
    r = run_command(preprocess() + " --input " + q(dir / "in.jsonl") + " --output-prefix " +
                    q(dir / "pipe") + kNull);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("pipe_text_document.idx: exists and is not a regular file"),
              std::string::npos)
        << r.output;

    // The input, reached through a link named like the output.
    fs::create_symlink(dir / "in.jsonl", dir / "same_text_document.bin");
    r = run_command(preprocess() + " --input " + q(dir / "same_text_document.bin") +
                    " --output-prefix " + q(dir / "same") + kNull);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("is the input"), std::string::npos) << r.output;
    EXPECT_EQ(read_file(dir / "in.jsonl"), "{\"text\": \"1 2\"}\n");
}

TEST(Preprocess, SkipBadLinesCountsThem) {
    TempDir dir;
    write_file(dir / "in.jsonl", "{\"text\": \"1\"}\nnot json\n{\"text\": \"2\"}\n{\"x\": 1}\n");
    auto r = run_command(preprocess() + " --input " + q(dir / "in.jsonl") + " --output-prefix " +
                         q(dir / "out") + " --skip-bad-lines" + kNull);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("in.jsonl:2: not valid JSON"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("in.jsonl:4: no key 'text' (line skipped)"), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("skipped 2 bad lines"), std::string::npos) << r.output;
    EXPECT_EQ(sequences((dir / "out_text_document").string()),
              (std::vector<std::vector<int64_t>>{{1}, {2}}));
}

TEST(Preprocess, UsageErrorsAndHelp) {
    auto r = run_command(preprocess() + " --help");
    EXPECT_EQ(r.exit_code, 0);
    for (const char* flag : {"--input", "--output-prefix", "--json-keys", "--tokenizer-type",
                             "--vocab-file", "--merge-file", "--append-eod", "--split-sentences",
                             "--keep-newlines", "--workers", "--partitions", "--log-interval",
                             "--vocab-size", "--lang", "--plugin-dir", "--list-plugins"})
        EXPECT_NE(r.output.find(flag), std::string::npos) << flag;
    r = run_command(preprocess() + " --input x");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("--output-prefix"), std::string::npos) << r.output;
    r = run_command(preprocess() + " --no-such-flag");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    // A word that belongs to no flag is an error, as in argparse, not ignored.
    r = run_command(preprocess() + " stray --input x --output-prefix y" + kNull);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("unrecognized arguments: stray"), std::string::npos) << r.output;
    // preprocess_data.py keeps argparse's abbreviations (and its ambiguity error); a repeated
    // flag takes its last value.
    r = run_command(preprocess() + " --input /nonexistent.jsonl --output-pre /tmp/x --input " +
                    "/nonexistent2.jsonl" + kNull);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("--input /nonexistent2.jsonl: no such file"), std::string::npos)
        << r.output;
    r = run_command(preprocess() + " --input x --output-prefix y --vocab v" + kNull);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("ambiguous"), std::string::npos) << r.output;
    r = run_command(preprocess() + " --input /nonexistent.jsonl --output-prefix /tmp/x" + kNull);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.output.find("error: --input /nonexistent.jsonl: no such file"), std::string::npos)
        << r.output;
    r = run_command(preprocess() + " --input x --output-prefix y --tokenizer-type Nope");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.output.find("unknown tokenizer 'Nope'; available: "), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("GPT2BPETokenizer"), std::string::npos) << r.output;
}

TEST(Preprocess, ListPluginsNeedsNoOtherFlag) {
    auto r = run_command(preprocess() + " --list-plugins");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const char* s :
         {"tokenizer/gpt2bpe", "tokenizer/wordpiece", "tokenizer/null", "GPT2BPETokenizer",
          "BertWordPieceLowerCase", "BertWordPieceCase", "NullTokenizer"})
        EXPECT_NE(r.output.find(s), std::string::npos) << s << "\n" << r.output;
}

// The acceptance test: Megatron's own output for openwebtext-1000 with the tiny GPT-2 vocab.
TEST(Preprocess, ByteIdenticalToMegatronPreprocessData) {
    auto input = mt::test::test_data("corpus/openwebtext-1000.jsonl");
    auto meg = mt::test::test_data("megatron_indexed/meg-gpt2-openwebtext_text_document.bin");
    if (!input || !meg) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping the Megatron match";
    fs::path data = *mt::test::test_data_dir();
    TempDir dir;
    for (const char* workers : {"1", "2"}) {
        auto r = run_command(preprocess() + " --input " + q(*input) + " --output-prefix " +
                             q(dir / "meg") + " --tokenizer-type GPT2BPETokenizer --vocab-file " +
                             q(data / "megatron_indexed/gpt2-tiny-vocab.json") + " --merge-file " +
                             q(data / "megatron_indexed/gpt2-tiny-merges.txt") +
                             " --append-eod --workers " + workers);
        ASSERT_EQ(r.exit_code, 0) << r.output;
        expect_same_dataset(
            (dir / "meg_text_document").string(),
            (data / "megatron_indexed/meg-gpt2-openwebtext_text_document").string());
    }
}

// With --split-sentences each sentence is a sequence; splitting a document into sentences
// must give exactly what the same sentences given as a pre-split list give.
TEST(Preprocess, SplitSentencesMatchesPreSplitInput) {
    auto vocab = mt::test::test_data("gpt2/gpt2-vocab.json");
    if (!vocab) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping sentence splitting";
    fs::path data = *mt::test::test_data_dir();
    std::string tok = " --tokenizer-type GPT2BPETokenizer --vocab-file " + q(*vocab) +
                      " --merge-file " + q(data / "gpt2/gpt2-merges.txt");
    TempDir dir;
    write_file(dir / "doc.jsonl",
               "{\"text\": \"Mr. Smith went to Washington. He arrived at 5 p.m. on Monday! "
               "Did he stay?\\nYes.\"}\n");
    write_file(dir / "split.jsonl",
               "{\"text\": [\"Mr. Smith went to Washington.\", \"He arrived at 5 p.m. on "
               "Monday!\", \"Did he stay?\", \"Yes.\"]}\n");
    auto r = run_command(preprocess() + " --input " + q(dir / "doc.jsonl") + " --output-prefix " +
                         q(dir / "a") + " --split-sentences --append-eod" + tok);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = run_command(preprocess() + " --input " + q(dir / "split.jsonl") + " --output-prefix " +
                    q(dir / "b") + " --append-eod" + tok);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_same_dataset((dir / "a_text_sentence").string(), (dir / "b_text_document").string());
    EXPECT_EQ(mt::data::IndexedDataset::open((dir / "a_text_sentence").string()).num_sequences(),
              4);
}

}  // namespace
