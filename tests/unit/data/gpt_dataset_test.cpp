// GPTDataset / BlendedDataset indices, cache files and samples against Megatron-LM's own output
// for the 1000-document test dataset, and MockGPTDataset's (--mock-data) without one
// (tests/fixtures/gpt_dataset/make_fixtures.py).
#include <array>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "expected_values.h"
#include "mt/data/gpt_dataset_builder.h"
#include "mt/data/mock_gpt_sequences.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using namespace mt::data;
using mt::test::ExpectedValues;

constexpr int64_t kEod = 4999;
constexpr int kSamplesChecked = 50;

// Mirrors CONFIGS in make_fixtures.py; "{P}" stands for the dataset prefix.
struct Case {
    const char* name;
    std::vector<std::string> data_path;
    const char* split;
    int64_t seq_length;
    uint32_t seed;
    std::array<std::optional<int64_t>, kNumSplits> sizes;
    bool drop_last_partial_validation_sequence = true;
    bool reset_flags = false;
};

void PrintTo(const Case& c, std::ostream* os) {
    *os << c.name;
}

const Case kCases[] = {
    {"multi_epoch_separate", {"{P}"}, "949,50,1", 64, 1234, {50000, 500, 100}},
    {"two_epochs_joint", {"{P}"}, "949,50,1", 64, 42, {39000, 100, 10}},
    {"seq1024_98_2_0", {"{P}"}, "98,2,0", 1024, 42, {3000, 10, 0}},
    {"one_epoch", {"{P}"}, "949,50,1", 1024, 1234, {std::nullopt, std::nullopt, std::nullopt}},
    {"valid_partial", {"{P}"}, "949,50,1", 64, 7, {100, std::nullopt, 10}, false},
    {"reset_flags", {"{P}"}, "949,50,1", 1024, 1234, {20, 5, 2}, true, true},
    {"blend_weighted", {"0.3", "{P}", "0.7", "{P}"}, "949,50,1", 64, 1234, {2000, 200, 50}},
    {"blend_unweighted", {"{P}", "{P}"}, "949,50,1", 64, 1234, {1500, 20, std::nullopt}},
};

std::optional<std::string> dataset_prefix() {
    auto idx = mt::test::test_data("megatron_indexed/meg-gpt2-openwebtext_text_document.idx");
    if (!idx) return std::nullopt;
    return idx->parent_path().string() + "/meg-gpt2-openwebtext_text_document";
}

GPTDatasetConfig make_config(const Case& c, const std::string& prefix, const fs::path& cache) {
    GPTDatasetConfig config;
    config.random_seed = c.seed;
    config.sequence_length = c.seq_length;
    std::vector<std::string> items;
    for (std::string item : c.data_path) items.push_back(item == "{P}" ? prefix : item);
    config.blend = get_blend_from_list(items);
    config.split = c.split;
    config.path_to_cache = cache.string();
    config.reset_position_ids = config.reset_attention_mask = config.eod_mask_loss = c.reset_flags;
    config.drop_last_partial_validation_sequence = c.drop_last_partial_validation_sequence;
    config.eod_id = kEod;
    config.tokenizer = {"_GPT2BPETokenizer", {"gpt2-vocab.json", "gpt2-merges.txt"}, {}};
    return config;
}

// The fixture's description (unicode_escape'd, written with the fixture machine's prefix) as
// our prefix would make it.
std::string expected_description(const std::string& key, const std::string& prefix) {
    std::string escaped = ExpectedValues::get().line(key + ".description"), out;
    for (size_t i = 0; i < escaped.size(); ++i) {
        if (escaped[i] == '\\' && i + 1 < escaped.size()) {
            char n = escaped[++i];
            out += n == 'n' ? '\n' : n == 't' ? '\t' : n;
        } else {
            out += escaped[i];
        }
    }
    std::string fixture_prefix = ExpectedValues::get().line("prefix");
    for (size_t at = out.find(fixture_prefix); at != std::string::npos;
         at = out.find(fixture_prefix, at + prefix.size())) {
        out.replace(at, fixture_prefix.size(), prefix);
    }
    return out;
}

std::string file_md5(const std::string& path) {
    std::string bytes = mt::test::read_file(path);
    return md5_hex(bytes);
}

void check_description(const std::string& key, const std::string& description,
                       const std::string& hash, const std::string& prefix) {
    const auto& ev = ExpectedValues::get();
    // Megatron's own pair validates our MD5; equal descriptions then give equal file names.
    std::string megatron_hash = ev.line(key + ".hash");
    std::string with_fixture_prefix = expected_description(key, ev.line("prefix"));
    EXPECT_EQ(md5_hex(with_fixture_prefix), megatron_hash) << key;
    EXPECT_EQ(description, expected_description(key, prefix)) << key;
    if (prefix == ev.line("prefix")) {
        EXPECT_EQ(hash, megatron_hash) << key;
    }
}

std::string sample_rest(const GPTSample& s);

void check_gpt(const std::string& key, const GPTDataset& ds, const std::string& prefix) {
    const auto& ev = ExpectedValues::get();
    auto epochs = ev.words(key + ".epochs");
    ASSERT_EQ(epochs.size(), 2u) << key;
    // Identical descriptions share cache files (the unweighted blend of one prefix with itself).
    if (!ds.loaded_from_cache()) {
        EXPECT_EQ(std::to_string(ds.num_epochs()), epochs[0]) << key;
        EXPECT_EQ(ds.separate_final_epoch() ? "1" : "0", epochs[1]) << key;
    }
    check_description(key, ds.unique_description(), ds.unique_description_hash(), prefix);
    const std::pair<const char*, const NpyArray*> arrays[] = {
        {"document_index", &ds.document_index()},
        {"sample_index", &ds.sample_index()},
        {"shuffle_index", &ds.shuffle_index()}};
    for (const auto& [name, array] : arrays) {
        std::string what = key + "." + name;
        EXPECT_EQ(mt::test::compare_array(what, *array, ev.words(what)), "");
        if (ev.has(what + ".file"))
            EXPECT_EQ(file_md5(ds.cache_path(std::string(name) + ".npy")), ev.line(what + ".file"))
                << what << ": cache file bytes differ from numpy.save's";
    }
    if (!ds.cache_path("description.txt").empty())
        EXPECT_EQ(mt::test::read_file(ds.cache_path("description.txt")), ds.unique_description());
}

// The sample made from the last sample-index row: the padded one when the partial last
// validation sequence is kept.
void check_last_row(const std::string& key, const GPTDataset& ds) {
    if (!ExpectedValues::get().has(key + ".last_row")) return;
    auto expected = ExpectedValues::get().words(key + ".last_row");
    ASSERT_EQ(expected.size(), 3u) << key;
    int64_t at = std::stoll(expected[0]);
    ASSERT_EQ(ds.shuffle_index().at(at), ds.size() - 1) << key;
    GPTSample s = ds.get(at);
    EXPECT_EQ(mt::test::md5_of(s.tokens.data(), s.tokens.size() * 8).substr(0, 8), expected[1])
        << key << ": tokens of sample " << at;
    EXPECT_EQ(md5_hex(sample_rest(s)).substr(0, 8), expected[2])
        << key << ": labels/positions/masks of sample " << at;
}

// labels, position_ids, 2*loss_mask as int64 bytes, then packbits(attention_mask), as the
// fixture hashes them.
std::string sample_rest(const GPTSample& s) {
    std::vector<int64_t> fields(s.labels);
    fields.insert(fields.end(), s.position_ids.begin(), s.position_ids.end());
    for (float m : s.loss_mask) fields.push_back(static_cast<int64_t>(m * 2));
    std::string out(reinterpret_cast<const char*>(fields.data()), fields.size() * 8);
    std::vector<uint8_t> mask = materialize_attention_mask(s);
    for (size_t i = 0; i < mask.size(); i += 8) {
        uint8_t byte = 0;
        for (size_t b = 0; b < 8; ++b) {
            byte = static_cast<uint8_t>((byte << 1) | (i + b < mask.size() ? mask[i + b] : 0));
        }
        out += static_cast<char>(byte);
    }
    return out;
}

template <class T>
std::vector<T> values_of(const mt::Batch& batch, const char* key) {
    const mt::Tensor& t = batch.at(key);
    return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

// Sample i as the training loop reads it: a one-sample batch.
GPTSample sample_of(const SampleDataset& ds, int64_t i) {
    const int64_t index[] = {i};
    const mt::Batch batch = ds.batch(index);
    GPTSample s;
    s.tokens = values_of<int64_t>(batch, "tokens");
    s.labels = values_of<int64_t>(batch, "labels");
    s.loss_mask = values_of<float>(batch, "loss_mask");
    s.position_ids = values_of<int64_t>(batch, "position_ids");
    s.document_start = values_of<int32_t>(batch, "document_start");
    return s;
}

void check_samples(const std::string& key, const SampleDataset& ds) {
    auto expected = ExpectedValues::get().words(key + ".samples");
    ASSERT_GE(expected.size(), 1u) << key;
    int64_t count = std::stoll(expected[0]);
    ASSERT_EQ(count, std::min<int64_t>(kSamplesChecked, ds.size())) << key;
    if (count == 0) return;
    auto token_hashes = mt::test::split_words(expected[1], ',');
    auto rest_hashes = mt::test::split_words(expected[2], ',');
    for (int64_t i = 0; i < count; ++i) {
        GPTSample s = sample_of(ds, i);
        std::string tokens = mt::test::md5_of(s.tokens.data(), s.tokens.size() * 8).substr(0, 8);
        std::string rest_hash = md5_hex(sample_rest(s)).substr(0, 8);
        if (tokens != token_hashes[i] || rest_hash != rest_hashes[i]) {
            std::string first;
            for (size_t t = 0; t < 8 && t < s.tokens.size(); ++t)
                first += std::to_string(s.tokens[t]) + " ";
            ADD_FAILURE() << key << ": sample " << i << " differs from Megatron's ("
                          << (tokens != token_hashes[i] ? "tokens" : "labels/positions/masks")
                          << "); our first tokens " << first;
            return;
        }
    }
}

void check_case(const Case& c, const std::string& prefix, const fs::path& cache) {
    const auto& ev = ExpectedValues::get();
    GPTDatasetConfig config = make_config(c, prefix, cache);
    auto datasets = build_gpt_datasets(config, c.sizes);
    for (int i = 0; i < kNumSplits; ++i) {
        std::string key = std::string(c.name) + "." + split_name(static_cast<Split>(i));
        if (ev.has(key + ".absent")) {
            EXPECT_EQ(datasets[i], nullptr) << key;
            continue;
        }
        ASSERT_NE(datasets[i], nullptr) << key;
        EXPECT_EQ(std::to_string(datasets[i]->size()), ev.line(key + ".size")) << key;
        if (auto* blend = dynamic_cast<const BlendedDataset*>(datasets[i].get())) {
            check_description(key, blend->unique_description(), blend->unique_description_hash(),
                              prefix);
            EXPECT_EQ(mt::test::compare_array(key + ".dataset_index", blend->dataset_index(),
                                              ev.words(key + ".dataset_index")),
                      "");
            EXPECT_EQ(mt::test::compare_array(key + ".dataset_sample_index",
                                              blend->dataset_sample_index(),
                                              ev.words(key + ".dataset_sample_index")),
                      "");
            for (size_t k = 0; k < blend->parts().size(); ++k) {
                check_gpt(key + ".part" + std::to_string(k),
                          dynamic_cast<const GPTDataset&>(*blend->parts()[k].dataset), prefix);
            }
        } else {
            check_gpt(key, dynamic_cast<const GPTDataset&>(*datasets[i]), prefix);
            check_last_row(key, dynamic_cast<const GPTDataset&>(*datasets[i]));
        }
        check_samples(key, *datasets[i]);
    }
}

class GPTDatasetVsMegatron : public ::testing::TestWithParam<Case> {};

TEST_P(GPTDatasetVsMegatron, IndicesCacheFilesAndSamples) {
    auto prefix = dataset_prefix();
    if (!prefix) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping the Megatron comparison";
    mt::test::TempDir cache;
    check_case(GetParam(), *prefix, cache.path());
}

INSTANTIATE_TEST_SUITE_P(Configs, GPTDatasetVsMegatron, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(GPTDataset, SecondBuildLoadsTheCache) {
    auto prefix = dataset_prefix();
    if (!prefix) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping";
    mt::test::TempDir cache;
    GPTDatasetConfig config = make_config(kCases[0], *prefix, cache.path());
    auto built = build_gpt_datasets(config, kCases[0].sizes);
    auto loaded = build_gpt_datasets(config, kCases[0].sizes);
    for (int i = 0; i < kNumSplits; ++i) {
        auto& a = dynamic_cast<const GPTDataset&>(*built[i]);
        auto& b = dynamic_cast<const GPTDataset&>(*loaded[i]);
        EXPECT_FALSE(a.loaded_from_cache());
        EXPECT_TRUE(b.loaded_from_cache());
        ASSERT_EQ(a.size(), b.size());
        for (int64_t s : {int64_t{0}, a.size() / 2, a.size() - 1}) {
            EXPECT_EQ(a.get(s).tokens, b.get(s).tokens);
        }
    }
}

// --mock-data: Megatron's MockGPTLowLevelDataset lengths, and the MockGPTDataset splits ("1,1,1"
// whatever --split says) with their indices and samples; nothing is cached without a cache path.
TEST(MockGPTDataset, IndicesAndSamplesEqualMegatrons) {
    const auto& ev = ExpectedValues::get();
    const MockGptSequences mock(kEod, kEod + 1);
    NpyArray lengths_array = NpyArray::zeros(NpyType::i32, {mock.num_sequences()});
    std::vector<int64_t> lengths;
    for (int64_t i = 0; i < mock.num_sequences(); ++i) {
        lengths.push_back(mock.sequence_length(i));
        lengths_array.data<int32_t>()[i] = mock.sequence_length(i);
    }
    EXPECT_EQ(mt::test::compare_array("mock.lengths", lengths_array, ev.words("mock.lengths")), "");
    EXPECT_EQ(mock.get(3, 0, -1).size(), size_t(lengths[3]));
    EXPECT_EQ(mock.get(3, lengths[3] - 2, -1), (std::vector<int64_t>{lengths[3] - 1, kEod}));
    EXPECT_EQ(mock.get(3, lengths[3] - 1, 5), (std::vector<int64_t>{kEod}));  // cut as numpy does
    // core_v0.19 takes the tokens modulo the vocabulary (core_v0.13's fit none below 4096).
    const MockGptSequences small(127, 128);
    int64_t long_one = 0;
    while (lengths[size_t(long_one)] < 200) ++long_one;
    EXPECT_EQ(small.get(long_one, 126, 4), (std::vector<int64_t>{127, 0, 1, 2}));

    GPTDatasetConfig config;
    config.random_seed = 1234;
    config.sequence_length = 64;
    config.split = "969, 30, 1";  // replaced by the even split, as Megatron does
    config.mock = true;
    config.eod_id = kEod;
    config.tokenizer = {"_GPT2BPETokenizer", {"gpt2-vocab.json", "gpt2-merges.txt"}, {}};
    auto datasets = build_gpt_datasets(config, {400, 40, 20});
    for (int i = 0; i < kNumSplits; ++i) {
        const std::string key = std::string("mock.") + split_name(static_cast<Split>(i));
        ASSERT_NE(datasets[i], nullptr) << key;
        auto& ds = dynamic_cast<const GPTDataset&>(*datasets[i]);
        EXPECT_EQ(std::to_string(ds.size()), ev.line(key + ".size")) << key;
        EXPECT_EQ(ds.cache_path("description.txt"), "") << key;
        check_gpt(key, ds, ev.line("prefix"));
        check_samples(key, ds);
    }
    config.blend = get_blend_from_list({"some/prefix"});
    EXPECT_NE(mt::test::error_of([&] {
                  build_gpt_datasets(config, {400, 40, 20});
              }).find("--mock-data cannot be combined with --data-path"),
              std::string::npos);
}

// HuggingFaceTokenizer's part of the cache key is Megatron's _HuggingFaceTokenizer identity:
// its class and [--tokenizer-model], no options (json.dumps(indent=4) as in the description).
TEST(GPTDataset, HuggingFaceTokenizerIdentity) {
    GPTDatasetConfig config;
    config.sequence_length = 16;
    config.mock = true;
    config.tokenizer = {"_HuggingFaceTokenizer", {"/models/tok"}, {}};
    auto datasets = build_gpt_datasets(config, {8, 8, 8});
    const std::string& description =
        dynamic_cast<const GPTDataset&>(*datasets[0]).unique_description();
    EXPECT_NE(
        description.find("    \"tokenizer\": {\n        \"class\": \"_HuggingFaceTokenizer\",\n"
                         "        \"tokenizer_path\": [\n            \"/models/tok\"\n"
                         "        ]\n    }"),
        std::string::npos)
        << description;
}

TEST(GPTDataset, EpochRules) {
    // T = 1000 tokens per epoch, L = 10, E = 1.
    EXPECT_EQ(gpt_num_epochs(1000, std::nullopt, 10, 1), 1);
    EXPECT_EQ(gpt_num_epochs(1000, 99, 10, 1), 1);   // 991 tokens
    EXPECT_EQ(gpt_num_epochs(1000, 100, 10, 1), 2);  // 1001 tokens
    EXPECT_EQ(gpt_num_epochs(1000, 250, 10, 1), 3);
    // 3 epochs, 250 samples: 199 before the last, 51 from it < int(0.8 * 99) = 79 -> separate.
    EXPECT_EQ(gpt_separate_final_epoch(3, 1000, 250, 10, 1), std::make_pair(true, int64_t{199}));
    // 280 samples: 81 from the last epoch >= 79 -> shuffled together.
    EXPECT_EQ(gpt_separate_final_epoch(3, 1000, 280, 10, 1), std::make_pair(false, int64_t{199}));
    EXPECT_EQ(gpt_separate_final_epoch(1, 1000, 50, 10, 1).first, false);
}

TEST(GPTDataset, SampleIndexOverlapsByTheExtraToken) {
    // Two documents of 7 and 5 tokens, L = 4, E = 1: samples start 4 tokens apart.
    NpyArray docs = NpyArray::zeros(NpyType::i32, {2});
    docs.data<int32_t>()[1] = 1;
    NpyArray idx = build_sample_index({7, 5}, docs, 4, 1, 12, true, 1);
    ASSERT_EQ(idx.shape(), (std::vector<int64_t>{3, 2}));  // (12 - 1) / 4 = 2 samples
    const int64_t expected[] = {0, 0, 0, 4, 1, 1};
    for (int i = 0; i < 6; ++i) EXPECT_EQ(idx.at(i), expected[i]) << i;
    // Keeping the partial last sample: ceil(11 / 4) = 3, it ends at the last token.
    NpyArray partial = build_sample_index({7, 5}, docs, 4, 1, 12, false, 1);
    ASSERT_EQ(partial.shape()[0], 4);
    EXPECT_EQ(partial.at(6), 1);
    EXPECT_EQ(partial.at(7), 4);
}

TEST(GPTDataset, AttentionMaskFromDocumentStarts) {
    GPTSample s;
    s.document_start = {0, 0, 2, 2};
    std::vector<uint8_t> mask = materialize_attention_mask(s);
    const uint8_t expected[] = {0, 1, 1, 1,  //
                                0, 0, 1, 1,  //
                                1, 1, 0, 1,  //
                                1, 1, 0, 0};
    EXPECT_EQ(mask, std::vector<uint8_t>(std::begin(expected), std::end(expected)));
}

TEST(BlendedDataset, BlendingIndicesFollowTheWeights) {
    NpyArray index, sample;
    build_blending_indices({0.3, 0.7}, 10, index, sample);
    // helpers.cpp: x = max(s, 1); first maximum of w*x - count wins.
    const int64_t datasets[] = {1, 0, 1, 1, 0, 1, 1, 0, 1, 1};
    const int64_t samples[] = {0, 0, 1, 2, 1, 3, 4, 2, 5, 6};
    for (int i = 0; i < 10; ++i) {
        EXPECT_EQ(index.at(i), datasets[i]) << i;
        EXPECT_EQ(sample.at(i), samples[i]) << i;
    }
    build_exhaustive_blending_indices({2, 3}, index, sample);
    ASSERT_EQ(index.numel(), 5);
    int64_t counts[2] = {0, 0};
    for (int i = 0; i < 5; ++i) ++counts[index.at(i)];
    EXPECT_EQ(counts[0], 2);
    EXPECT_EQ(counts[1], 3);
}

}  // namespace
