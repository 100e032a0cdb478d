// BERTMaskedWordPieceDataset against Megatron-LM's own samples, sample index and cache files
// for a small sentence-split dataset made by our megatron-preprocess
// (tests/fixtures/bert_dataset/make_fixture.py); the vocabulary comes from $MEGATRON_TEST_DATA.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "masked_dataset_fixture.h"
#include "mt/data/bert_dataset.h"
#include "mt/data/bert_sample_mapping.h"
#include "mt/data/masked_lm.h"
#include "mt/error.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using namespace mt::data;
using mt::test::cache_listing;
using mt::test::join;
using mt::test::read_inv_vocab;
using mt::test::unescape;

constexpr const char* kPrefix = "corpus_text_sentence";
constexpr int kFullSamples = 4;

// Mirrors CONFIGS in make_fixture.py.
struct Config {
    const char* name;
    int64_t seq_length;
    uint32_t seed;
    const char* split;
    double mask_prob, short_seq_prob;
    bool binary_head;
    std::array<int64_t, kNumSplits> sizes;
    const char* cache;  // nullptr: Megatron's default cache directory
};

const Config kConfigs[] = {
    {"binary_head", 128, 1234, "80,15,5", 0.15, 0.1, true, {1000, 100, 20}, "cache_binary_head"},
    {"no_binary_head", 64, 42, "90,8,2", 0.2, 0.05, false, {1500, 80, 30}, nullptr},
};

const mt::test::FixtureLines& expected() {
    return mt::test::FixtureLines::of("bert_dataset");
}

std::string sample_digest(const BertSample& s) {
    std::vector<int64_t> all;
    for (const auto* f : {&s.text, &s.types, &s.labels, &s.padding_mask, &s.loss_mask})
        all.insert(all.end(), f->begin(), f->end());
    all.push_back(s.is_random);
    all.push_back(s.truncated);
    return md5_hex(std::string(reinterpret_cast<const char*>(all.data()), all.size() * 8))
        .substr(0, 12);
}

TEST(NumpyRandomState, MatchesNumpyDrawsTheBertDatasetMakes) {
    const auto& ev = expected();
    NumpyRandomState rs(7);
    for (const auto& hex : ev.words("rng.random"))
        EXPECT_EQ(rs.random_sample(), std::strtod(hex.c_str(), nullptr)) << hex;
    NumpyRandomState ri(7);
    for (const auto& triple : ev.words("rng.randint")) {
        int64_t lo = 0, hi = 0, value = 0;
        ASSERT_EQ(std::sscanf(triple.c_str(), "%ld,%ld,%ld", &lo, &hi, &value), 3) << triple;
        EXPECT_EQ(ri.randint(lo, hi), value) << "randint(" << lo << ", " << hi << ")";
    }
    // choice(nvals, p=p) over Megatron's 1/n n-gram probabilities (computed as it does).
    std::vector<double> p{1.0, 0.5, 1.0 / 3.0};
    for (int pass = 0; pass < 2; ++pass) {
        double sum = numpy_sum(p);
        for (double& x : p) x /= sum;
    }
    NumpyRandomState rc(7);
    for (const auto& n : ev.words("rng.choice")) EXPECT_EQ(1 + rc.choice(p), std::stoll(n));
}

TEST(BertSampleMapping, FailsInsteadOfLoopingWhenNoDocumentQualifies) {
    // One document of one sentence: nothing with two sentences (binary head) can be made.
    const std::vector<int64_t> docs{0, 1};
    const std::vector<int32_t> sizes{10};
    std::string message = mt::test::error_of(
        [&] { build_bert_sample_mapping(docs, sizes, 1000, 5, 125, 0.1, 1234, 2); });
    EXPECT_NE(message.find("no document"), std::string::npos) << message;
    // One epoch (no sample count) simply yields nothing; so does asking for no samples.
    EXPECT_EQ(build_bert_sample_mapping(docs, sizes, 1, UINT64_MAX, 125, 0.1, 1234, 2).shape()[0],
              0);
    EXPECT_EQ(build_bert_sample_mapping(docs, sizes, 1000, 0, 125, 0.1, 1234, 1).shape()[0], 0);
}

TEST(MaskedLm, WholeWordsAreMaskedTogether) {
    // ids: 0 [CLS], 1 [SEP], 2 "a", 3 "##b", 4 "c"; every position of a word shares its fate.
    const std::vector<uint8_t> continuation{0, 0, 0, 1, 0};
    MaskedLmOptions options;
    options.masking_probability = 0.5;
    options.cls_id = 0;
    options.sep_id = 1;
    options.continuation = continuation;
    const std::vector<int64_t> tokens{0, 2, 3, 3, 4, 2, 3, 1};
    for (uint32_t seed = 1; seed < 200; ++seed) {
        NumpyRandomState rng(seed);
        MaskedLmPredictions m = create_masked_lm_predictions(
            tokens, 6, rng, options, [](NumpyRandomState&) { return std::optional<int64_t>(9); });
        std::vector<bool> masked(tokens.size());
        for (int64_t p : m.positions) masked[p] = true;
        EXPECT_FALSE(masked[0] || masked[7]) << "seed " << seed;
        EXPECT_TRUE(masked[1] == masked[2] && masked[2] == masked[3]) << "seed " << seed;
        EXPECT_TRUE(masked[5] == masked[6]) << "seed " << seed;
        EXPECT_LE(static_cast<double>(m.positions.size()), 3.0) << "seed " << seed;
        EXPECT_TRUE(std::is_sorted(m.positions.begin(), m.positions.end()));
    }
}

struct SplitCase {
    int config;
    Split split;
};

void PrintTo(const SplitCase& c, std::ostream* os) {
    *os << kConfigs[c.config].name << "." << split_name(c.split);
}

class BertDatasetVsMegatron : public ::testing::TestWithParam<SplitCase> {};

TEST_P(BertDatasetVsMegatron, SamplesIndexAndCacheFilesMatch) {
    auto vocab = mt::test::test_data("bert/bert-large-uncased-vocab.txt");
    if (!vocab)
        GTEST_SKIP() << "set MEGATRON_TEST_DATA to the shared data (needs "
                        "bert/bert-large-uncased-vocab.txt)";
    const Config& c = kConfigs[GetParam().config];
    const Split split = GetParam().split;
    const std::string key = std::string(c.name) + "." + split_name(split);
    const auto& ev = expected();

    // Megatron read the dataset and vocabulary by these relative names: a scratch directory
    // gives ours the same ones (and the default cache lands under it).
    mt::test::TempDir dir;
    for (const char* ext : {".bin", ".idx"})
        fs::copy_file(mt::test::fixtures_dir() / "bert_dataset" / (std::string(kPrefix) + ext),
                      dir / (std::string(kPrefix) + ext));
    auto data =
        std::make_shared<const IndexedDataset>(IndexedDataset::open((dir / kPrefix).string()));

    BertDatasetConfig config;
    config.random_seed = c.seed;
    config.sequence_length = c.seq_length;
    config.split = c.split;
    if (c.cache) config.path_to_cache = (dir / c.cache).string();
    config.masking_probability = c.mask_prob;
    config.short_sequence_probability = c.short_seq_prob;
    config.classification_head = c.binary_head;
    config.inv_vocab = read_inv_vocab(*vocab);
    // What the wordpiece plugin's dataset_identity() gives for --vocab-file vocab.txt.
    config.tokenizer = {"_BertWordPieceTokenizer",
                        {"vocab.txt"},
                        {{"lower_case", "True"}, {"vocab_extra_ids", "0"}}};
    const std::vector<int64_t> tok = ev.ints("tokenizer");
    ASSERT_EQ(tok.size(), 5u);
    config.cls_id = tok[0];
    config.sep_id = tok[1];
    config.mask_id = tok[2];
    config.pad_id = tok[3];
    ASSERT_EQ(static_cast<int64_t>(config.inv_vocab.size()), tok[4]) << "len(inv_vocab)";

    // Megatron's split of the documents.
    const auto bookend = config.split_matrix()->at(static_cast<size_t>(split));
    ASSERT_TRUE(bookend.has_value());
    const auto [begin, end] = split_range(*bookend, data->num_documents());
    EXPECT_EQ((std::vector<int64_t>{begin, end}), ev.ints(key + ".range"));
    const int64_t num_samples = c.sizes[static_cast<size_t>(split)];
    EXPECT_EQ(std::to_string(num_samples), ev.line(key + ".num_samples"));

    BertMaskedWordPieceDataset ds(data, kPrefix, begin, end, num_samples, split, config);
    EXPECT_FALSE(ds.loaded_from_cache());
    EXPECT_EQ(ds.unique_description(), unescape(ev.line(key + ".description")));
    EXPECT_EQ(ds.unique_description_hash(), ev.line(key + ".md5"));
    EXPECT_EQ(cache_listing(dir.path(), ds.unique_description_hash()),
              ev.line(key + ".cache_files"));
    EXPECT_EQ(mt::test::read_file(ds.cache_path("description.txt")), ds.unique_description());

    // The sample index: dtype, shape, bytes, first rows, and the .npy file byte for byte.
    const std::vector<std::string> index = ev.words(key + ".sample_index");
    ASSERT_EQ(index.size(), 5u);
    const NpyArray& si = ds.sample_index();
    EXPECT_EQ(npy_type_descr(si.type()), index[0]);
    ASSERT_EQ(si.shape(), (std::vector<int64_t>{std::stoll(index[1]), std::stoll(index[2])}));
    std::vector<int64_t> head;
    for (int64_t i = 0; i < std::min<int64_t>(24, si.numel()); ++i) head.push_back(si.at(i));
    EXPECT_EQ(join(head), join(ev.ints(key + ".sample_index_head")));
    EXPECT_EQ(md5_hex(std::string(reinterpret_cast<const char*>(si.bytes()), si.nbytes())),
              index[3]);
    EXPECT_EQ(md5_hex(mt::test::read_file(ds.cache_path("sample_index.npy"))), index[4]);
    ASSERT_EQ(ds.size(), std::stoll(index[1]));

    // Megatron's dict: every array int64, the two flags Python ints.
    EXPECT_EQ(ev.line(key + ".field_types"),
              "text:ndarray/int64 types:ndarray/int64 labels:ndarray/int64 is_random:int/ "
              "padding_mask:ndarray/int64 loss_mask:ndarray/int64 truncated:int/");

    // The first samples field by field, then every sample by digest.
    for (int i = 0; i < kFullSamples && i < ds.size(); ++i) {
        const BertSample s = ds.get(i);
        const std::string k = key + ".sample." + std::to_string(i);
        EXPECT_EQ(join(s.text), ev.line(k + ".text")) << k;
        EXPECT_EQ(join(s.types), ev.line(k + ".types")) << k;
        EXPECT_EQ(join(s.labels), ev.line(k + ".labels")) << k;
        EXPECT_EQ(join(s.padding_mask), ev.line(k + ".padding_mask")) << k;
        EXPECT_EQ(join(s.loss_mask), ev.line(k + ".loss_mask")) << k;
        EXPECT_EQ(join({s.is_random, s.truncated}), ev.line(k + ".flags")) << k;
    }
    const std::vector<std::string> digests = ev.words(key + ".digests");
    ASSERT_EQ(static_cast<int64_t>(digests.size()), ds.size());
    int64_t mismatches = 0, truncated = 0, swapped = 0;
    for (int64_t i = 0; i < ds.size(); ++i) {
        const BertSample s = ds.get(i);
        truncated += s.truncated;
        swapped += s.is_random;
        if (sample_digest(s) != digests[static_cast<size_t>(i)] && mismatches++ < 5)
            ADD_FAILURE() << key << ": sample " << i << " differs from Megatron's";
    }
    EXPECT_EQ(mismatches, 0) << key;
    // The fixture exercises both sides of the draws it is meant to cover.
    if (split == Split::train) {
        EXPECT_GT(truncated, 0);
        EXPECT_LT(truncated, ds.size());
        if (c.binary_head) {
            EXPECT_GT(swapped, 0);
        }
    }

    // A second dataset over the same cache loads the index instead of building it.
    BertMaskedWordPieceDataset again(data, kPrefix, begin, end, num_samples, split, config);
    EXPECT_TRUE(again.loaded_from_cache());
    ASSERT_EQ(again.size(), ds.size());
    EXPECT_EQ(sample_digest(again.get(ds.size() - 1)), digests.back());

    // batch() stacks get() as Megatron's collate does.
    const std::vector<int64_t> picks{0, ds.size() - 1};
    mt::Batch batch = ds.batch(picks);
    ASSERT_EQ(batch.count("text"), 1u);
    ASSERT_EQ(batch.at("text").size(0), 2);
    ASSERT_EQ(batch.at("text").size(1), c.seq_length);
    const BertSample last = ds.get(ds.size() - 1);
    EXPECT_EQ(batch.at("labels").data<int64_t>()[c.seq_length + 5], last.labels[5]);
    EXPECT_EQ(batch.at("truncated").data<int64_t>()[1], last.truncated);
}

std::vector<SplitCase> all_cases() {
    std::vector<SplitCase> out;
    for (int c = 0; c < static_cast<int>(std::size(kConfigs)); ++c)
        for (Split s : {Split::train, Split::valid, Split::test}) out.push_back({c, s});
    return out;
}

INSTANTIATE_TEST_SUITE_P(Fixture, BertDatasetVsMegatron, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) {
                             return std::string(kConfigs[info.param.config].name) + "_" +
                                    split_name(info.param.split);
                         });

}  // namespace
