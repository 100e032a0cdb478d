// MMIDIDX .bin/.idx: writer byte-identical to Megatron's, reader of files Megatron made,
// merging, the dtype rule, and errors that name the broken file.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <limits>

#include "mt/data/indexed_dataset.h"
#include "mt/error.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace mt::data;

namespace {

using mt::test::error_of;

TEST(IndexedDataset, OptimalDtypeRule) {
    EXPECT_EQ(optimal_index_dtype(50257), IndexDType::u16);
    EXPECT_EQ(optimal_index_dtype(65499), IndexDType::u16);
    EXPECT_EQ(optimal_index_dtype(65500), IndexDType::i32);
    EXPECT_EQ(optimal_index_dtype(128256), IndexDType::i32);
}

TEST(IndexedDataset, RoundTripDocumentsSentencesAndEmptyDocuments) {
    mt::test::TempDir dir;
    std::string prefix = (dir / "ds").string();
    {
        IndexedDatasetBuilder b(prefix, IndexDType::u16);
        std::vector<int32_t> doc1{1, 2, 3, 4, 5}, lens1{2, 3};
        b.add_document(doc1, lens1);
        b.add_document({}, {});  // an empty document repeats the index
        b.add_item(std::vector<int32_t>{65535, 0});
        b.add_item(std::vector<int32_t>{7});
        b.end_document();
        EXPECT_FALSE(fs::exists(bin_path(prefix)));  // only temporary files until finalize
        b.finalize();
    }
    auto ds = IndexedDataset::open(prefix);
    EXPECT_EQ(ds.dtype(), IndexDType::u16);
    EXPECT_EQ(ds.num_sequences(), 4);
    EXPECT_EQ(ds.num_documents(), 3);
    EXPECT_EQ(ds.num_tokens(), 8);
    EXPECT_EQ(ds.document_index(0), 0);
    EXPECT_EQ(ds.document_index(1), 2);
    EXPECT_EQ(ds.document_index(2), 2);
    EXPECT_EQ(ds.document_index(3), 4);
    EXPECT_EQ(ds.sequence_pointer(2), 10);
    EXPECT_EQ(ds.get(1), (std::vector<int64_t>{3, 4, 5}));
    EXPECT_EQ(ds.get(2), (std::vector<int64_t>{65535, 0}));
    EXPECT_EQ(ds.get(1, 1, 1), (std::vector<int64_t>{4}));
    EXPECT_EQ(fs::file_size(bin_path(prefix)), 16u);
    EXPECT_EQ(fs::file_size(idx_path(prefix)), 34u + 12 * 4 + 8 * 4);
    for (const auto& e : fs::directory_iterator(dir.path()))
        EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
}

TEST(IndexedDataset, AbandonedBuilderLeavesNothing) {
    mt::test::TempDir dir;
    std::string prefix = (dir / "ds").string();
    {
        IndexedDatasetBuilder b(prefix, IndexDType::i32);
        b.add_item(std::vector<int32_t>{1, 2});
    }
    EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(IndexedDataset, TokenThatDoesNotFitTheDtype) {
    mt::test::TempDir dir;
    IndexedDatasetBuilder b((dir / "ds").string(), IndexDType::u16);
    std::string msg = error_of([&] { b.add_item(std::vector<int32_t>{70000}); });
    EXPECT_NE(msg.find("token id 70000 does not fit the dataset dtype uint16"), std::string::npos)
        << msg;
}

TEST(IndexedDataset, AllDtypesRoundTrip) {
    for (auto dt : {IndexDType::u8, IndexDType::i8, IndexDType::i16, IndexDType::i32,
                    IndexDType::i64, IndexDType::f32, IndexDType::f64, IndexDType::u16}) {
        mt::test::TempDir dir;
        std::string prefix = (dir / "ds").string();
        IndexedDatasetBuilder b(prefix, dt);
        b.add_item(std::vector<int32_t>{0, 1, 100, 127});
        b.end_document();
        b.finalize();
        auto ds = IndexedDataset::open(prefix);
        EXPECT_EQ(ds.dtype(), dt);
        EXPECT_EQ(ds.get(0), (std::vector<int64_t>{0, 1, 100, 127})) << index_dtype_name(dt);
        EXPECT_EQ(int64_t(fs::file_size(bin_path(prefix))), 4 * index_dtype_size(dt));
    }
}

TEST(IndexedDataset, MergeAppendsIndicesAndBytes) {
    mt::test::TempDir dir;
    auto make = [&](const std::string& name, std::vector<std::vector<int32_t>> docs) {
        std::string prefix = (dir / name).string();
        IndexedDatasetBuilder b(prefix, IndexDType::u16);
        for (auto& d : docs) {
            std::vector<int32_t> lens{int32_t(d.size())};
            b.add_document(d, lens);
        }
        b.finalize();
        return prefix;
    };
    std::string a = make("a", {{1, 2}, {3}}), c = make("c", {{4, 5, 6}});
    std::string all = make("all", {{1, 2}, {3}, {4, 5, 6}});
    std::string merged = (dir / "merged").string();
    IndexedDatasetBuilder m(merged, IndexDType::u16);
    m.add_index(a);
    m.add_index(c);
    m.finalize();
    EXPECT_EQ(mt::test::read_file(idx_path(merged)), mt::test::read_file(idx_path(all)));
    EXPECT_EQ(mt::test::read_file(bin_path(merged)), mt::test::read_file(bin_path(all)));

    IndexedDatasetBuilder wrong((dir / "wrong").string(), IndexDType::i32);
    std::string msg = error_of([&] { wrong.add_index(a); });
    EXPECT_NE(msg.find("of dtype uint16 into a dataset of dtype int32"), std::string::npos) << msg;
}

TEST(IndexedDataset, MultimodalModes) {
    mt::test::TempDir dir;
    std::string prefix = (dir / "mm").string();
    IndexedDatasetBuilder b(prefix, IndexDType::i32, /*multimodal=*/true);
    std::vector<int32_t> tokens{1, 2, 3}, lens{1, 2};
    std::vector<int8_t> modes{0, 1};
    b.add_document(tokens, lens, modes);
    b.finalize();
    auto ds = IndexedDataset::open(prefix, true);
    EXPECT_EQ(ds.sequence_mode(1), 1);
    EXPECT_EQ(fs::file_size(idx_path(prefix)), 34u + 12 * 2 + 8 * 2 + 2);
    EXPECT_THROW(IndexedDataset::open(prefix).sequence_mode(0), mt::Error);
}

TEST(IndexedDataset, BrokenFilesAreNamed) {
    mt::test::TempDir dir;
    std::string prefix = (dir / "ds").string();
    {
        IndexedDatasetBuilder b(prefix, IndexDType::u16);
        b.add_item(std::vector<int32_t>{1, 2, 3});
        b.end_document();
        b.finalize();
    }
    std::string idx = mt::test::read_file(idx_path(prefix));
    std::string bin = mt::test::read_file(bin_path(prefix));

    mt::test::write_file(idx_path(prefix), "NOTANIDX" + idx.substr(8));
    EXPECT_NE(error_of([&] {
                  IndexedDataset::open(prefix);
              }).find(idx_path(prefix).string() + ": not a Megatron MMIDIDX index"),
              std::string::npos);

    mt::test::write_file(idx_path(prefix), idx.substr(0, idx.size() - 3));
    EXPECT_NE(error_of([&] { IndexedDataset::open(prefix); }).find(": truncated"),
              std::string::npos);

    std::string v2 = idx;
    v2[9] = 2;
    mt::test::write_file(idx_path(prefix), v2);
    EXPECT_NE(error_of([&] { IndexedDataset::open(prefix); }).find("index version 2"),
              std::string::npos);

    mt::test::write_file(idx_path(prefix), idx);
    mt::test::write_file(bin_path(prefix), bin.substr(0, 4));
    std::string msg = error_of([&] { IndexedDataset::open(prefix); });
    EXPECT_NE(msg.find(bin_path(prefix).string() + ": truncated: 4 bytes, the index needs 0 + 6"),
              std::string::npos)
        << msg;

    fs::remove(bin_path(prefix));
    EXPECT_NE(error_of([&] { IndexedDataset::open(prefix); }).find("cannot open"),
              std::string::npos);
}

// Sequence pointers near INT64_MAX: pointer + length wraps negative, which a sum-based bounds
// check let through to a read far outside the mapping.
TEST(IndexedDataset, PointersThatWouldOverflowAreErrors) {
    mt::test::TempDir dir;
    const std::string prefix = (dir / "ds").string();
    {
        IndexedDatasetBuilder b(prefix, IndexDType::u16);
        b.add_item(std::vector<int32_t>{1, 2, 3});
        b.end_document();
        b.add_item(std::vector<int32_t>{4, 5});
        b.end_document();
        b.finalize();
    }
    const std::string idx = mt::test::read_file(idx_path(prefix));
    // Header 34 bytes, two int32 lengths, then the int64 pointers.
    auto with_pointer = [&](int which, int64_t value) {
        std::string changed = idx;
        std::memcpy(changed.data() + 34 + 8 + 8 * which, &value, 8);
        mt::test::write_file(idx_path(prefix), changed);
    };
    const int64_t huge = std::numeric_limits<int64_t>::max() - 2;
    with_pointer(0, huge);  // the open checks the last sequence only
    const IndexedDataset ds = IndexedDataset::open(prefix);
    std::string e = error_of([&] { ds.get(0); });
    EXPECT_NE(e.find("sequence 0 (6 bytes at 9223372036854775805) lies outside the file"),
              std::string::npos)
        << e;
    with_pointer(1, huge);
    e = error_of([&] { IndexedDataset::open(prefix); });
    EXPECT_NE(e.find(": truncated: 10 bytes, the index needs 9223372036854775805 + 4"),
              std::string::npos)
        << e;
    EXPECT_NE(error_of([&] {
                  with_pointer(1, 6);
                  IndexedDataset::open(prefix).get(1, 1, std::numeric_limits<int64_t>::max());
              }).find("out of range for sequence 1 of length 2"),
              std::string::npos);
}

// The dataset Megatron-DeepSpeed's preprocess_data.py wrote for its test suite.
TEST(IndexedDataset, ReadsAndRewritesMegatronsFileByteForByte) {
    auto idx = mt::test::test_data("megatron_indexed/meg-gpt2-openwebtext_text_document.idx");
    if (!idx) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping the Megatron-made dataset";
    std::string prefix = idx->string().substr(0, idx->string().size() - 4);
    auto ds = IndexedDataset::open(prefix);
    EXPECT_EQ(ds.dtype(), IndexDType::u16);
    EXPECT_EQ(ds.num_sequences(), 1000);
    EXPECT_EQ(ds.num_documents(), 1000);
    EXPECT_EQ(ds.num_tokens(), 1361845);
    for (int64_t i = 0; i < ds.num_sequences(); ++i) {
        auto tokens = ds.get(i);
        ASSERT_EQ(tokens.back(), 4999) << "document " << i << " does not end with EOD";
    }

    mt::test::TempDir dir;
    std::string copy = (dir / "copy").string();
    IndexedDatasetBuilder b(copy, IndexDType::u16);
    for (int64_t d = 0; d < ds.num_documents(); ++d) {
        std::vector<int32_t> tokens, lens;
        for (int64_t s = ds.document_index(d); s < ds.document_index(d + 1); ++s) {
            for (int64_t t : ds.get(s)) tokens.push_back(int32_t(t));
            lens.push_back(ds.sequence_length(s));
        }
        b.add_document(tokens, lens);
    }
    b.finalize();
    EXPECT_TRUE(mt::test::read_file(idx_path(copy)) == mt::test::read_file(*idx));
    EXPECT_TRUE(mt::test::read_file(bin_path(copy)) == mt::test::read_file(bin_path(prefix)));
}

}  // namespace
