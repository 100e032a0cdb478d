// T5MaskedWordPieceDataset against Megatron-LM's own samples, sample index and cache files
// (tests/fixtures/t5_dataset/make_fixture.py) over the BERT dataset fixture's sentence-split
// corpus; the vocabulary comes from $MEGATRON_TEST_DATA.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "masked_dataset_fixture.h"
#include "mt/data/numpy_random.h"
#include "mt/data/t5_dataset.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using namespace mt::data;
using mt::test::join;

constexpr const char* kPrefix = "corpus_text_sentence";
constexpr int kFullSamples = 3;
constexpr int kExtraIds = 100;

// Mirrors CONFIGS in make_fixture.py.
struct Config {
    const char* name;
    int64_t encoder_length, decoder_length;
    uint32_t seed;
    const char* split;
    double mask_prob, short_seq_prob;
    std::array<int64_t, kNumSplits> sizes;
    const char* cache;  // nullptr: Megatron's default cache directory
};

const Config kConfigs[] = {
    {"long", 128, 64, 1234, "80,15,5", 0.15, 0.1, {400, 40, 10}, "cache_t5"},
    {"short", 64, 32, 42, "90,8,2", 0.2, 0.05, {600, 30, 10}, nullptr},
};

const mt::test::FixtureLines& expected() {
    return mt::test::FixtureLines::of("t5_dataset");
}

std::string sample_digest(const T5Sample& s) {
    std::vector<int64_t> all;
    for (const auto* f :
         {&s.text_enc, &s.text_dec, &s.labels, &s.loss_mask, &s.enc_mask, &s.dec_mask})
        all.insert(all.end(), f->begin(), f->end());
    all.push_back(s.truncated);
    return md5_hex(std::string(reinterpret_cast<const char*>(all.data()), all.size() * 8))
        .substr(0, 12);
}

TEST(NumpyRandomState, GeometricMatchesNumpy) {
    NumpyRandomState rs(7);
    for (int64_t want : expected().ints("rng.geometric")) EXPECT_EQ(rs.geometric(0.2), want);
}

struct SplitCase {
    int config;
    Split split;
};

void PrintTo(const SplitCase& c, std::ostream* os) {
    *os << kConfigs[c.config].name << "." << split_name(c.split);
}

class T5DatasetVsMegatron : public ::testing::TestWithParam<SplitCase> {};

TEST_P(T5DatasetVsMegatron, SamplesIndexAndCacheFilesMatch) {
    auto vocab = mt::test::test_data("bert/bert-large-uncased-vocab.txt");
    if (!vocab)
        GTEST_SKIP() << "set MEGATRON_TEST_DATA to the shared data (needs "
                        "bert/bert-large-uncased-vocab.txt)";
    const Config& c = kConfigs[GetParam().config];
    const Split split = GetParam().split;
    const std::string key = std::string(c.name) + "." + split_name(split);
    const auto& ev = expected();

    // Megatron read the dataset by this relative name: a scratch directory gives ours the same.
    mt::test::TempDir dir;
    for (const char* ext : {".bin", ".idx"})
        fs::copy_file(mt::test::fixtures_dir() / "bert_dataset" / (std::string(kPrefix) + ext),
                      dir / (std::string(kPrefix) + ext));
    auto data =
        std::make_shared<const IndexedDataset>(IndexedDataset::open((dir / kPrefix).string()));

    T5DatasetConfig config;
    config.random_seed = c.seed;
    config.sequence_length = c.encoder_length;
    config.sequence_length_decoder = c.decoder_length;
    config.split = c.split;
    if (c.cache) config.path_to_cache = (dir / c.cache).string();
    config.masking_probability = c.mask_prob;
    config.short_sequence_probability = c.short_seq_prob;
    config.inv_vocab = mt::test::read_inv_vocab(*vocab, kExtraIds);
    // What the wordpiece plugin's dataset_identity() gives for --vocab-file vocab.txt.
    config.tokenizer = {"_BertWordPieceTokenizer",
                        {"vocab.txt"},
                        {{"lower_case", "True"}, {"vocab_extra_ids", std::to_string(kExtraIds)}}};
    // cls sep mask pad bos eos len(inv_vocab) first and last sentinel
    const std::vector<int64_t> tok = ev.ints("tokenizer");
    ASSERT_EQ(tok.size(), 9u);
    config.cls_id = tok[0];
    config.sep_id = tok[1];
    config.mask_id = tok[2];
    config.pad_id = tok[3];
    config.bos_id = tok[4];
    config.eos_id = tok[5];
    ASSERT_EQ(static_cast<int64_t>(config.inv_vocab.size()), tok[6]) << "len(inv_vocab)";
    for (int k = 0; k < kExtraIds; ++k) config.sentinel_ids.push_back(tok[7] + k);
    ASSERT_EQ(config.sentinel_ids.back(), tok[8]);

    const auto bookend = config.split_matrix()->at(static_cast<size_t>(split));
    ASSERT_TRUE(bookend.has_value());
    const auto [begin, end] = split_range(*bookend, data->num_documents());
    EXPECT_EQ((std::vector<int64_t>{begin, end}), ev.ints(key + ".range"));
    const int64_t num_samples = c.sizes[static_cast<size_t>(split)];
    EXPECT_EQ(std::to_string(num_samples), ev.line(key + ".num_samples"));

    T5MaskedWordPieceDataset ds(data, kPrefix, begin, end, num_samples, split, config);
    EXPECT_FALSE(ds.loaded_from_cache());
    EXPECT_EQ(ds.unique_description(), mt::test::unescape(ev.line(key + ".description")));
    EXPECT_EQ(ds.unique_description_hash(), ev.line(key + ".md5"));
    EXPECT_EQ(mt::test::cache_listing(dir.path(), ds.unique_description_hash()),
              ev.line(key + ".cache_files"));

    const std::vector<std::string> index = ev.words(key + ".sample_index");
    ASSERT_EQ(index.size(), 5u);
    const NpyArray& si = ds.sample_index();
    ASSERT_EQ(si.shape(), (std::vector<int64_t>{std::stoll(index[1]), std::stoll(index[2])}));
    EXPECT_EQ(md5_hex(std::string(reinterpret_cast<const char*>(si.bytes()), si.nbytes())),
              index[3]);
    EXPECT_EQ(md5_hex(mt::test::read_file(ds.cache_path("sample_index.npy"))), index[4]);

    EXPECT_EQ(ev.line(key + ".field_types"),
              "text_enc:ndarray/int64 text_dec:ndarray/int64 labels:ndarray/int64 "
              "loss_mask:ndarray/int64 truncated:int/ enc_mask:ndarray/int64 "
              "dec_mask:ndarray/int64");
    for (int i = 0; i < kFullSamples && i < ds.size(); ++i) {
        const T5Sample s = ds.get(i);
        const std::string k = key + ".sample." + std::to_string(i);
        EXPECT_EQ(join(s.text_enc), ev.line(k + ".text_enc")) << k;
        EXPECT_EQ(join(s.text_dec), ev.line(k + ".text_dec")) << k;
        EXPECT_EQ(join(s.labels), ev.line(k + ".labels")) << k;
        EXPECT_EQ(join(s.loss_mask), ev.line(k + ".loss_mask")) << k;
        EXPECT_EQ(join(s.enc_mask), ev.line(k + ".enc_mask")) << k;
        EXPECT_EQ(join(s.dec_mask), ev.line(k + ".dec_mask")) << k;
        EXPECT_EQ(std::to_string(s.truncated), ev.line(k + ".truncated")) << k;
    }
    const std::vector<std::string> digests = ev.words(key + ".digests");
    ASSERT_EQ(static_cast<int64_t>(digests.size()), ds.size());
    int64_t mismatches = 0, truncated = 0;
    for (int64_t i = 0; i < ds.size(); ++i) {
        const T5Sample s = ds.get(i);
        truncated += s.truncated;
        if (sample_digest(s) != digests[static_cast<size_t>(i)] && mismatches++ < 5)
            ADD_FAILURE() << key << ": sample " << i << " differs from Megatron's";
    }
    EXPECT_EQ(mismatches, 0) << key;
    EXPECT_EQ(std::to_string(truncated), ev.line(key + ".truncated"));

    // A second dataset over the same cache loads the index; batch() stacks get().
    T5MaskedWordPieceDataset again(data, kPrefix, begin, end, num_samples, split, config);
    EXPECT_TRUE(again.loaded_from_cache());
    const std::vector<int64_t> picks{0, ds.size() - 1};
    mt::Batch batch = again.batch(picks);
    ASSERT_EQ(batch.at("text_enc").size(1), c.encoder_length);
    ASSERT_EQ(batch.at("labels").size(1), c.decoder_length);
    const T5Sample last = ds.get(ds.size() - 1);
    EXPECT_EQ(batch.at("labels").data<int64_t>()[c.decoder_length + 1], last.labels[1]);
    EXPECT_EQ(batch.at("enc_mask").data<int64_t>()[c.encoder_length + 3], last.enc_mask[3]);
    EXPECT_EQ(batch.at("truncated").data<int64_t>()[1], last.truncated);
}

INSTANTIATE_TEST_SUITE_P(Configs, T5DatasetVsMegatron,
                         ::testing::Values(SplitCase{0, Split::train}, SplitCase{0, Split::valid},
                                           SplitCase{0, Split::test}, SplitCase{1, Split::train},
                                           SplitCase{1, Split::valid}, SplitCase{1, Split::test}),
                         [](const auto& info) {
                             return std::string(kConfigs[info.param.config].name) + "_" +
                                    split_name(info.param.split);
                         });

}  // namespace
