// The finetuning task readers of megatron-eval (RACE, MNLI, QQP) against the examples
// Megatron-LM's own readers build (tests/fixtures/tasks/make_fixture.py): clean_text,
// build_tokens_types_paddings_from_ids, every RACE example of the shared dev and test sets and
// of hand-made edge files, every MNLI/QQP example; also the Python text semantics the readers
// rest on and their errors. The data-driven cases skip without MEGATRON_TEST_DATA.
#include <dirent.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "classification_example.h"
#include "glue_data.h"
#include "mt/io/crc32.h"
#include "mt/registry.h"
#include "race_data.h"
#include "task_text.h"
#include "test_support.h"

namespace fs = std::filesystem;
using mt::eval::ClassificationExample;
using mt::eval::ClassificationRow;
using Ids = std::vector<int32_t>;

namespace {

const fs::path kFixtures = mt::test::fixtures_dir() / "tasks";

simdjson::dom::element expected() {
    static simdjson::dom::parser parser;
    static simdjson::dom::element doc = parser.load((kFixtures / "expected.json").string());
    return doc;
}

Ids ints(simdjson::dom::array a) {
    Ids out;
    for (int64_t v : a) out.push_back(static_cast<int32_t>(v));
    return out;
}

std::string str(simdjson::dom::element e) {
    return std::string(std::string_view(e));
}

// "data:<path>" is relative to MEGATRON_TEST_DATA, "fixture:<path>" to tests/fixtures/tasks.
fs::path resolve(const std::string& entry) {
    const size_t colon = entry.find(':');
    const std::string root = entry.substr(0, colon), path = entry.substr(colon + 1);
    return root == "data" ? *mt::test::test_data_dir() / path : kFixtures / path;
}

#define SKIP_WITHOUT_DATA()                                                                      \
    if (!mt::test::test_data(std::string(expected()["tokenizer"].get_string().value())))         \
    GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping (needs the BERT vocabulary, RACE and " \
                    "MNLI data under it)"

// Megatron's BertWordPieceLowerCase on the shared BERT vocabulary, through the plugin registry.
const mt::Tokenizer& bert() {
    static std::unique_ptr<mt::Tokenizer> tokenizer = [] {
        mt::TokenizerOptions o;
        o.vocab_file =
            mt::test::test_data(std::string(expected()["tokenizer"].get_string().value()))
                ->string();
        return mt::Registry::global().create_tokenizer("BertWordPieceLowerCase", o);
    }();
    return *tokenizer;
}

// The committed 36-token vocabulary: enough for the error cases, needs no shared data.
const mt::Tokenizer& tiny() {
    static std::unique_ptr<mt::Tokenizer> tokenizer = [] {
        mt::TokenizerOptions o;
        o.vocab_file = (mt::test::fixtures_dir() / "wordpiece" / "tiny_vocab.txt").string();
        return mt::Registry::global().create_tokenizer("BertWordPieceLowerCase", o);
    }();
    return *tokenizer;
}

// make_fixture.py's crc_of: CRC-32 of each row's ids, types, paddings as little-endian int32.
uint32_t crc_of(const ClassificationExample& e) {
    uint32_t crc = 0;
    std::vector<unsigned char> bytes;
    for (const auto& row : e.rows)
        for (const Ids* v : {&row.ids, &row.types, &row.paddings}) {
            bytes.clear();
            for (int32_t x : *v)
                for (int k = 0; k < 4; ++k) bytes.push_back(uint32_t(x) >> (8 * k) & 0xFF);
            crc = mt::io::crc32_update(crc, bytes.data(), bytes.size());
        }
    return crc;
}

void expect_example(const ClassificationExample& got, simdjson::dom::element want,
                    const std::string& what) {
    EXPECT_EQ(got.uid, int64_t(want["uid"])) << what;
    EXPECT_EQ(got.label, int64_t(want["label"])) << what;
    simdjson::dom::array rows = want["rows"];
    ASSERT_EQ(got.rows.size(), rows.size()) << what;
    size_t r = 0;
    for (simdjson::dom::element row : rows) {
        EXPECT_EQ(got.rows[r].ids, ints(row["ids"])) << what << " row " << r;
        EXPECT_EQ(got.rows[r].types, ints(row["types"])) << what << " row " << r;
        EXPECT_EQ(got.rows[r].paddings, ints(row["paddings"])) << what << " row " << r;
        ++r;
    }
}

// Directory entries in readdir order, read here with POSIX calls apart from the reader's code.
std::vector<std::string> readdir_names(const fs::path& dir) {
    std::vector<std::string> names;
    DIR* d = opendir(dir.c_str());
    if (!d) return names;
    while (dirent* e = readdir(d)) names.emplace_back(e->d_name);
    closedir(d);
    return names;
}

std::vector<std::string> names_of(const std::vector<fs::path>& files) {
    std::vector<std::string> out;
    for (const auto& f : files) out.push_back(f.filename().string());
    return out;
}

std::vector<std::string> strings(simdjson::dom::array a) {
    std::vector<std::string> out;
    for (simdjson::dom::element e : a) out.push_back(str(e));
    return out;
}

// A RACE case of the fixture read through the reader, each directory's files taken in the
// order glob listed them when the fixture was made (readdir order differs between copies).
std::vector<ClassificationExample> race_in_fixture_order(simdjson::dom::element c) {
    std::vector<ClassificationExample> out;
    simdjson::dom::array files = c["files"];
    auto file_lists = files.begin();
    for (simdjson::dom::element dir_entry : simdjson::dom::array(c["dirs"])) {
        const fs::path dir = resolve(str(dir_entry));
        std::vector<fs::path> listed;
        for (const auto& name : strings(*file_lists)) listed.push_back(dir / name);
        ++file_lists;
        // The reader lists the same files glob did (the order is checked below).
        auto mine = names_of(mt::eval::race_files(dir));
        auto theirs = names_of(listed);
        std::sort(mine.begin(), mine.end());
        std::sort(theirs.begin(), theirs.end());
        EXPECT_EQ(mine, theirs) << dir;
        auto examples = mt::eval::race_examples(listed, bert(), int64_t(c["seq_length"]));
        out.insert(out.end(), examples.begin(), examples.end());
    }
    return out;
}

void expect_race_case(const std::vector<ClassificationExample>& got, simdjson::dom::element c) {
    const std::string what = "RACE " + simdjson::to_string(c["dirs"]) + " seq_length " +
                             std::to_string(int64_t(c["seq_length"]));
    const Ids uids = ints(c["uid"]), labels = ints(c["label"]);
    std::vector<uint32_t> crcs;
    for (int64_t v : simdjson::dom::array(c["crc32"])) crcs.push_back(uint32_t(v));
    ASSERT_EQ(got.size(), uids.size()) << what;
    size_t mismatched = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].uid, uids[i]) << what << " example " << i;
        EXPECT_EQ(got[i].label, labels[i]) << what << " example " << i;
        EXPECT_EQ(got[i].rows.size(), 4u) << what << " example " << i;
        if (crc_of(got[i]) != crcs[i] && ++mismatched <= 5)
            ADD_FAILURE() << what << ": example " << i << " differs (CRC-32)";
    }
    EXPECT_EQ(mismatched, 0u) << what;
    size_t i = 0;
    for (simdjson::dom::element want : simdjson::dom::array(c["full"]))
        expect_example(got[i], want, what + " example " + std::to_string(i)), ++i;
}

std::string write_temp(const mt::test::TempDir& dir, const std::string& name,
                       const std::string& content) {
    mt::test::write_file(dir / name, content);
    return (dir / name).string();
}

// --- Python semantics, no data needed ---------------------------------------------------------

TEST(TaskText, CleanTextAsMegatron) {
    for (simdjson::dom::array c : simdjson::dom::array(expected()["clean_text"]))
        EXPECT_EQ(mt::eval::clean_text(str(c.at(0))), str(c.at(1))) << str(c.at(0));
}

TEST(TaskText, PythonReplace) {
    EXPECT_EQ(mt::eval::python_replace("a_b__c", "_", "xy"), "axybxyxyc");
    EXPECT_EQ(mt::eval::python_replace(" . . . ", " . ", ". "), ". .. ");
    EXPECT_EQ(mt::eval::python_replace("", "_", "x"), "");
    EXPECT_NE(mt::test::error_of([] { mt::eval::python_replace("a", "", "x"); }), "");
}

TEST(TaskText, PythonInt) {
    using mt::eval::python_int;
    EXPECT_EQ(python_int("42"), 42);
    EXPECT_EQ(python_int(" +7 "), 7);
    EXPECT_EQ(python_int("-0"), 0);
    EXPECT_EQ(python_int("007"), 7);
    EXPECT_EQ(python_int("1_000_000"), 1000000);
    EXPECT_EQ(python_int("\u00a012\u3000"), 12);
    EXPECT_EQ(python_int("-9223372036854775808"), INT64_MIN);
    EXPECT_EQ(python_int("9223372036854775807"), INT64_MAX);
    for (const char* bad : {"", " ", "+", "1.0", "1e3", "_1", "1_", "1__0", "0x10", "12a",
                            "9223372036854775808", "- 1", "1 2"})
        EXPECT_EQ(python_int(bad), std::nullopt) << bad;
}

TEST(TaskText, LinesAsPythonTextMode) {
    mt::test::TempDir dir;
    auto lines_of = [&](const std::string& content) {
        std::vector<std::string> lines;
        std::vector<int64_t> numbers;
        mt::eval::for_each_text_line(write_temp(dir, "f.txt", content),
                                     [&](std::string_view line, int64_t n) {
                                         lines.emplace_back(line);
                                         numbers.push_back(n);
                                     });
        for (size_t i = 0; i < numbers.size(); ++i) EXPECT_EQ(numbers[i], int64_t(i + 1));
        return lines;
    };
    using V = std::vector<std::string>;
    EXPECT_EQ(lines_of(""), V{});
    EXPECT_EQ(lines_of("a"), V{"a"});
    EXPECT_EQ(lines_of("a\n"), V{"a"});
    EXPECT_EQ(lines_of("a\n\nb"), (V{"a", "", "b"}));
    EXPECT_EQ(lines_of("a\r\nb\rc\n"), (V{"a", "b", "c"}));
    EXPECT_EQ(lines_of("a\r"), V{"a"});
    EXPECT_EQ(lines_of("a\r\r"), (V{"a", ""}));
    EXPECT_EQ(lines_of("a\r\r\nb"), (V{"a", "", "b"}));
    EXPECT_EQ(lines_of("\n\r"), (V{"", ""}));
    // Only \n and \r end lines in a text-mode file, not U+2028 or U+0085 (str.splitlines would).
    EXPECT_EQ(lines_of("a\u2028b\u0085c\x0c"
                       "d\n"),
              V{"a\u2028b\u0085c\x0c"
                "d"});
    const std::string e1 = mt::test::error_of([&] { lines_of("ok\nbad \xff byte\n"); });
    EXPECT_NE(e1.find("f.txt:2: not UTF-8"), std::string::npos) << e1;
    const std::string e2 = mt::test::error_of([&] {
        mt::eval::for_each_text_line(dir / "missing.txt", [](std::string_view, int64_t) {});
    });
    EXPECT_NE(e2.find("missing.txt: no such file"), std::string::npos) << e2;
}

TEST(ClassificationExample, BuildFromIdsAsMegatron) {
    for (simdjson::dom::element c : simdjson::dom::array(expected()["build_from_ids"])) {
        const Ids a = ints(c["a"]);
        std::optional<Ids> b;
        if (!c["b"].is_null()) b = ints(c["b"]);
        std::optional<std::span<const int32_t>> b_span;
        if (b) b_span = std::span<const int32_t>(*b);
        const auto row = mt::eval::build_tokens_types_paddings(
            a, b_span, int64_t(c["max_seq_length"]), 101, 102, 0);
        const std::string what = simdjson::to_string(c["a"]) + " " + simdjson::to_string(c["b"]) +
                                 " " + std::to_string(int64_t(c["max_seq_length"]));
        EXPECT_EQ(row.ids, ints(c["ids"])) << what;
        EXPECT_EQ(row.types, ints(c["types"])) << what;
        EXPECT_EQ(row.paddings, ints(c["paddings"])) << what;
    }
    // Padding takes the pad id in ids and types alike.
    const auto row = mt::eval::build_tokens_types_paddings(Ids{5}, std::nullopt, 5, 1, 2, 9);
    EXPECT_EQ(row.ids, (Ids{1, 5, 2, 9, 9}));
    EXPECT_EQ(row.types, (Ids{0, 0, 0, 9, 9}));
    EXPECT_EQ(row.paddings, (Ids{1, 1, 1, 0, 0}));
    const std::string e = mt::test::error_of(
        [] { mt::eval::build_tokens_types_paddings(Ids{5}, std::nullopt, 0, 1, 2, 0); });
    EXPECT_NE(e.find("at least 1"), std::string::npos) << e;
}

// --- against Megatron on data -----------------------------------------------------------------

TEST(RaceReader, EdgeFilesAsMegatron) {
    SKIP_WITHOUT_DATA();
    for (simdjson::dom::element c : simdjson::dom::array(expected()["race"])) {
        if (str(simdjson::dom::array(c["dirs"]).at(0)).rfind("fixture:", 0) != 0) continue;
        expect_race_case(race_in_fixture_order(c), c);
    }
    // glob's '*.txt' leaves out hidden names, other suffixes and (case-sensitively) '.TXT'.
    auto names = names_of(mt::eval::race_files(kFixtures / "race_edge"));
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"edge1.txt", "edge2.txt"}));
}

TEST(RaceReader, SharedDevAndTestAsMegatron) {
    SKIP_WITHOUT_DATA();
    int cases = 0;
    for (simdjson::dom::element c : simdjson::dom::array(expected()["race"])) {
        if (str(simdjson::dom::array(c["dirs"]).at(0)).rfind("data:", 0) != 0) continue;
        expect_race_case(race_in_fixture_order(c), c);
        ++cases;
    }
    EXPECT_EQ(cases, 3);
}

TEST(RaceReader, ListsFilesInReaddirOrder) {
    SKIP_WITHOUT_DATA();
    simdjson::dom::element c = simdjson::dom::array(expected()["race"]).at(0);
    bool fixture_order = true;
    simdjson::dom::array files = c["files"];
    auto file_lists = files.begin();
    std::vector<fs::path> dirs;
    for (simdjson::dom::element dir_entry : simdjson::dom::array(c["dirs"])) {
        const fs::path dir = resolve(str(dir_entry));
        dirs.push_back(dir);
        std::vector<std::string> txt;
        for (const auto& name : readdir_names(dir))
            if (name[0] != '.' && name.size() >= 4 && name.substr(name.size() - 4) == ".txt")
                txt.push_back(name);
        const auto listed = names_of(mt::eval::race_files(dir));
        EXPECT_EQ(listed, txt) << dir;
        fixture_order = fixture_order && listed == strings(*file_lists);
        ++file_lists;
    }
    if (!fixture_order)
        GTEST_SKIP() << "this copy of the RACE data lists its files in another order than the "
                        "one make_fixture.py saw (glob does not sort; readdir order depends on "
                        "the file system): the dataset order is checked where they agree";
    // Here Megatron would read the files in the fixture's order: the whole dataset, uids
    // included, must come out as its does.
    expect_race_case(mt::eval::race_dataset(dirs, bert(), int64_t(c["seq_length"])), c);
}

TEST(GlueReader, MnliAndQqpAsMegatron) {
    SKIP_WITHOUT_DATA();
    for (auto [name, task] : {std::pair{"MNLI", mt::eval::GlueTask::kMnli},
                              std::pair{"QQP", mt::eval::GlueTask::kQqp}}) {
        for (simdjson::dom::element c : simdjson::dom::array(expected()["glue"][name])) {
            const int64_t seq_length = int64_t(c["seq_length"]);
            const std::string what =
                std::string(name) + " seq_length " + std::to_string(seq_length);
            std::vector<fs::path> files;
            for (const auto& f : strings(c["files"])) files.push_back(resolve(f));
            std::vector<mt::eval::GlueSample> samples;
            for (const auto& f : files) {
                auto more = mt::eval::glue_samples(task, f);
                samples.insert(samples.end(), more.begin(), more.end());
            }
            simdjson::dom::array want_samples = c["samples"];
            ASSERT_EQ(samples.size(), want_samples.size()) << what;
            size_t i = 0;
            for (simdjson::dom::element w : want_samples) {
                EXPECT_EQ(samples[i].uid, int64_t(w["uid"])) << what << " sample " << i;
                EXPECT_EQ(samples[i].text_a, str(w["text_a"])) << what << " sample " << i;
                EXPECT_EQ(samples[i].text_b, str(w["text_b"])) << what << " sample " << i;
                EXPECT_EQ(samples[i].label, int64_t(w["label"])) << what << " sample " << i;
                ++i;
            }
            const auto examples = mt::eval::glue_dataset(task, files, bert(), seq_length);
            simdjson::dom::array want = c["examples"];
            ASSERT_EQ(examples.size(), want.size()) << what;
            i = 0;
            for (simdjson::dom::element w : want)
                expect_example(examples[i], w, what + " example " + std::to_string(i)), ++i;
        }
    }
    EXPECT_EQ(mt::eval::glue_num_classes(mt::eval::GlueTask::kMnli), 3);
    EXPECT_EQ(mt::eval::glue_num_classes(mt::eval::GlueTask::kQqp), 2);
}

// --- errors: where Megatron fails, the reader names the file and line ---------------------------

TEST(RaceReader, Errors) {
    mt::test::TempDir dir;
    const std::string good =
        R"({"article": "hello world", "questions": ["hello _"], "options": [["a", "b", "ab", "s"]], "answers": ["C"]})";
    auto error_for = [&](const std::string& content) {
        const std::string file = write_temp(dir, "bad.txt", content);
        return mt::test::error_of([&] { mt::eval::race_examples({file}, tiny(), 16); });
    };
    auto expect_error = [&](const std::string& content, const std::string& part) {
        const std::string e = error_for(content);
        EXPECT_NE(e.find(part), std::string::npos) << e;
    };
    // A good file reads; its label is answer - 'A'.
    const auto ok =
        mt::eval::race_examples({write_temp(dir, "ok.txt", good + "\n" + good)}, tiny(), 16);
    ASSERT_EQ(ok.size(), 2u);
    EXPECT_EQ(ok[1].uid, 1);
    EXPECT_EQ(ok[1].label, 2);
    EXPECT_EQ(ok[1].rows.size(), 4u);

    expect_error(good + "\n\n" + good, "bad.txt:2: not valid JSON");
    expect_error("[1, 2]", "bad.txt:1: expected a JSON object");
    expect_error(R"({"questions": [], "options": [], "answers": []})",
                 "bad.txt:1: no key 'article'");
    expect_error(R"({"article": "x", "questions": ["q"], "options": [], "answers": ["A"]})",
                 "1 questions, 1 answers and 0 option lists");
    expect_error(
        R"({"article": "x", "questions": ["q"], "options": [["a", "b", "c"]], "answers": ["A"]})",
        "bad.txt:1: question 0: 3 options");
    expect_error(
        R"({"article": "x", "questions": ["q"], "options": [["a", "b", "c", "d"]], "answers": ["E"]})",
        "the answer 'E' is not one of A, B, C, D");
    expect_error(
        R"({"article": "x", "questions": ["q"], "options": [["a", "b", "c", "d"]], "answers": ["AB"]})",
        "the answer 'AB'");
    expect_error(R"({"article": 3, "questions": [], "options": [], "answers": []})",
                 "'article' must be a string");
    expect_error(
        R"({"article": "x", "questions": [7], "options": [["a", "b", "c", "d"]], "answers": ["A"]})",
        "the question must be a string");
    // The first bad file in order is the one reported.
    const std::string first = write_temp(dir, "first.txt", "nope");
    const std::string e = mt::test::error_of([&] {
        mt::eval::race_examples({dir / "ok.txt", first, dir / "bad.txt"}, tiny(), 16);
    });
    EXPECT_NE(e.find("first.txt:1"), std::string::npos) << e;
    const std::string e2 = mt::test::error_of([&] { mt::eval::race_files(dir / "ok.txt"); });
    EXPECT_NE(e2.find("not a directory"), std::string::npos) << e2;
    // An empty directory has no examples (as glob finds no file).
    mt::test::TempDir empty;
    EXPECT_TRUE(mt::eval::race_dataset({empty.path()}, tiny(), 16).empty());
}

TEST(GlueReader, Errors) {
    using mt::eval::GlueTask;
    mt::test::TempDir dir;
    const std::string mnli_header = "i\tp\tq\tg\tb1\tb2\tp1\tp2\ts1\ts2\tl1\tgold\n";
    auto error_for = [&](GlueTask task, const std::string& content) {
        const std::string file = write_temp(dir, "bad.tsv", content);
        return mt::test::error_of([&] { mt::eval::glue_samples(task, file); });
    };
    auto expect_error = [&](GlueTask task, const std::string& content, const std::string& part) {
        const std::string e = error_for(task, content);
        EXPECT_NE(e.find(part), std::string::npos) << e;
    };
    expect_error(GlueTask::kMnli, "a\tb\tc\n", "bad.tsv:1: an MNLI header");
    expect_error(GlueTask::kMnli, mnli_header + "0\t1\t2\n", "bad.tsv:2: 3 columns");
    expect_error(GlueTask::kMnli, mnli_header + "x\tp\tq\tg\tb\tb\tp\tp\ts\tt\tl\tneutral\n",
                 "bad.tsv:2: the index 'x' is not an integer");
    expect_error(GlueTask::kMnli, mnli_header + "-1\tp\tq\tg\tb\tb\tp\tp\ts\tt\tl\tneutral\n",
                 "negative index");
    expect_error(GlueTask::kMnli, mnli_header + "1\tp\tq\tg\tb\tb\tp\tp\ts\tt\tl\tmaybe\n",
                 "bad.tsv:2: the label 'maybe'");
    expect_error(GlueTask::kMnli, mnli_header + "1\tp\tq\tg\tb\tb\tp\tp\t \tt\tl\tneutral\n",
                 "empty sentence1");
    expect_error(GlueTask::kQqp, "id\tq1\tq2\tx\n", "bad.tsv:1: a QQP header");
    expect_error(GlueTask::kQqp, "id\tq1\tq2\n1\ta\n", "bad.tsv:2: 2 columns; a QQP test row");
    // line.strip() takes a trailing empty column away with the tab before it.
    expect_error(GlueTask::kQqp, "id\tq1\tq2\n1\ta\t \n", "bad.tsv:2: 2 columns");
    expect_error(GlueTask::kQqp, "id\tq1\tq2\n1\t\u00a0\tb\n", "empty question1");
    expect_error(GlueTask::kQqp, "id\ta\tb\tq1\tq2\td\n1\t2\t3\tx\ty\t2\n",
                 "bad.tsv:2: the label 2 is not 0 or 1");
    expect_error(GlueTask::kQqp, "id\ta\tb\tq1\tq2\td\n1\t2\t3\tx\ty\tyes\n",
                 "the label 'yes' is not an integer");
    // A labelled QQP row is parsed (id, label) before its empty question is skipped.
    expect_error(GlueTask::kQqp, "id\ta\tb\tq1\tq2\td\n1\t2\t3\t \ty\tyes\n", "'yes'");
    // Test files: the labels are Megatron's test labels.
    const auto mnli_test =
        mt::eval::glue_samples(GlueTask::kMnli, write_temp(dir, "t.tsv",
                                                           "i\tp\tq\tg\tb1\tb2\tp1\tp2\ts1\ts2\n"
                                                           "5\tp\tq\tg\tb\tb\tp\tp\ts\tt\n"));
    ASSERT_EQ(mnli_test.size(), 1u);
    EXPECT_EQ(mnli_test[0].label, 0);
    EXPECT_EQ(mnli_test[0].uid, 5);
    // An empty file holds no samples.
    EXPECT_TRUE(mt::eval::glue_samples(GlueTask::kQqp, write_temp(dir, "e.tsv", "")).empty());
}

// A tokenizer with [CLS] and [SEP] but no pad id.
class NoPadTokenizer : public mt::Tokenizer {
  public:
    void encode_append(std::string_view, std::vector<int32_t>& out) const override {
        out.push_back(3);
    }
    std::string decode(std::span<const int32_t>) const override { return {}; }
    int64_t vocab_size() const override { return 4; }
    const mt::SpecialIds& special_ids() const override { return ids_; }
    std::string_view name() const override { return "NoPad"; }

  private:
    mt::SpecialIds ids_ = [] {
        mt::SpecialIds ids;
        ids.cls = 1;
        ids.sep = 2;
        return ids;
    }();
};

TEST(ClassificationExample, NeedsClsSepPad) {
    const NoPadTokenizer tokenizer;
    const std::string e = mt::test::error_of(
        [&] { mt::eval::build_tokens_types_paddings_from_text("a", "b", tokenizer, 8); });
    EXPECT_NE(e.find("the NoPad tokenizer has no pad token"), std::string::npos) << e;
    const std::string e2 = mt::test::error_of([&] { mt::eval::race_examples({}, tokenizer, 8); });
    EXPECT_NE(e2.find("no pad token"), std::string::npos) << e2;
    // With a pad id, the text form tokenizes both sides.
    const auto row = mt::eval::build_tokens_types_paddings_from_text("hello", "world", tiny(), 6);
    EXPECT_EQ(row.ids, (Ids{2, 8, 3, 9, 3, 0}));
    EXPECT_EQ(row.types, (Ids{0, 0, 0, 1, 1, 0}));
    EXPECT_EQ(row.paddings, (Ids{1, 1, 1, 1, 1, 0}));
}

}  // namespace
