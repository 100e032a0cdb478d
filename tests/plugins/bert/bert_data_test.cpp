// pretrain_bert.py's datasets for a weighted blend of two prefixes against Megatron-LM's own
// BlendedMegatronDatasetBuilder over BERTMaskedWordPieceDataset (the blend.* lines of
// tests/fixtures/bert_dataset/expected.txt, made by its make_fixture.py).
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "bert_data.h"
#include "mt/data/blended_dataset.h"
#include "mt/registry.h"
#include "mt/tokenizer.h"
#include "test_support.h"

namespace mt::plugins::bert {
namespace {

namespace fs = std::filesystem;
constexpr const char* kPrefix = "corpus_text_sentence";

// Runs in `dir` while alive: Megatron was given relative dataset and vocabulary names, which
// are part of the descriptions.
class WorkingDirectory {
  public:
    explicit WorkingDirectory(const fs::path& dir) : previous_(fs::current_path()) {
        fs::current_path(dir);
    }
    ~WorkingDirectory() { fs::current_path(previous_); }

  private:
    fs::path previous_;
};

// As make_fixture.py's blend_digest: the five int64 fields, is_random, truncated, dataset_id.
std::string row_digest(const Batch& batch, int64_t row) {
    std::vector<int64_t> all;
    for (const char* key : {"text", "types", "labels", "padding_mask", "loss_mask"}) {
        const Tensor& t = batch.at(key);
        const int64_t L = t.size(1);
        all.insert(all.end(), t.data<int64_t>() + row * L, t.data<int64_t>() + (row + 1) * L);
    }
    for (const char* key : {"is_random", "truncated", "dataset_id"})
        all.push_back(batch.at(key).data<int64_t>()[row]);
    return data::md5_hex(std::string(reinterpret_cast<const char*>(all.data()), all.size() * 8))
        .substr(0, 12);
}

TEST(BertDatasets, WeightedBlendEqualsMegatrons) {
    auto vocab = test::test_data("bert/bert-large-uncased-vocab.txt");
    if (!vocab)
        GTEST_SKIP() << "set MEGATRON_TEST_DATA to the shared data (needs "
                        "bert/bert-large-uncased-vocab.txt)";
    const auto expected =
        test::read_fixture_values(test::fixtures_dir() / "bert_dataset" / "expected.txt");
    test::TempDir dir;
    fs::create_directory(dir / "second");
    for (const char* ext : {".bin", ".idx"}) {
        const fs::path from = test::fixtures_dir() / "bert_dataset" / (std::string(kPrefix) + ext);
        fs::copy_file(from, dir / (std::string(kPrefix) + ext));
        fs::copy_file(from, dir.path() / "second" / (std::string(kPrefix) + ext));
    }
    fs::copy_file(*vocab, dir / "vocab.txt");
    WorkingDirectory cwd(dir.path());

    Registry registry;
    TokenizerOptions options;
    options.vocab_file = "vocab.txt";
    auto tokenizer = registry.create_tokenizer("BertWordPieceLowerCase", options);
    // make_fixture.py's BLEND.
    data::DatasetRequest request;
    request.config.random_seed = 99;
    request.config.sequence_length = 64;
    request.config.blend = data::Blend{{kPrefix, std::string("second/") + kPrefix}, {{0.3, 0.7}}};
    request.config.split = "90,8,2";
    request.config.path_to_cache = "cache_blend";
    request.config.tokenizer = tokenizer->dataset_identity();
    request.num_samples = {600, 60, 20};
    request.tokenizer = tokenizer.get();
    const auto datasets = bert_datasets(request);

    for (int i = 0; i < data::kNumSplits; ++i) {
        const std::string key = std::string("blend.") + data::split_name(data::Split(i));
        auto* blend = dynamic_cast<const data::BlendedDataset*>(datasets[size_t(i)].get());
        ASSERT_NE(blend, nullptr) << key << " is not a blend";
        const auto md5 = [](const data::NpyArray& a) {
            return data::md5_hex(std::string(reinterpret_cast<const char*>(a.bytes()), a.nbytes()));
        };
        EXPECT_EQ(std::to_string(blend->size()) + " " + blend->unique_description_hash() + " " +
                      md5(blend->dataset_index()) + " " + md5(blend->dataset_sample_index()),
                  expected.at(key + ".blend"));
        std::string description;
        for (char c : blend->unique_description())
            description += c == '\n' ? std::string("\\n") : c == '\\' ? "\\\\" : std::string(1, c);
        EXPECT_EQ(description, expected.at(key + ".description"));
        std::string parts;
        for (const data::BlendPart& p : blend->parts())
            parts += (parts.empty() ? "" : " ") + std::to_string(p.dataset->size()) + "/" +
                     data::md5_hex(p.unique_identifiers.dumps());
        EXPECT_EQ(parts, expected.at(key + ".parts"));

        std::vector<int64_t> all(size_t(blend->size()));
        for (size_t s = 0; s < all.size(); ++s) all[s] = int64_t(s);
        const Batch batch = blend->batch(all);
        std::vector<std::string> digests;
        std::istringstream words(expected.at(key + ".digests"));
        for (std::string w; words >> w;) digests.push_back(w);
        ASSERT_EQ(int64_t(digests.size()), blend->size());
        int64_t mismatches = 0;
        for (int64_t s = 0; s < blend->size(); ++s)
            if (row_digest(batch, s) != digests[size_t(s)] && mismatches++ < 5)
                ADD_FAILURE() << key << ": sample " << s << " differs from Megatron's";
        EXPECT_EQ(mismatches, 0) << key;
    }
    // A second build reads the blend's indices from the cache.
    const auto again = bert_datasets(request);
    EXPECT_TRUE(dynamic_cast<const data::BlendedDataset&>(*again[0]).loaded_from_cache());
}

}  // namespace
}  // namespace mt::plugins::bert
