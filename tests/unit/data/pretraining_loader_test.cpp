// Micro-batches in MegatronPretrainingSampler's order (and, --dataloader-type cyclic,
// MegatronPretrainingRandomSampler's), per data-parallel rank, resumable.
#include <gtest/gtest.h>
#include <simdjson.h>

#include "mt/data/gpt_dataset.h"
#include "mt/data/pretraining_loader.h"
#include "test_support.h"

namespace {

using namespace mt::data;

// Sample i holds tokens {i, i+1} so batches show which samples they came from.
class CountingDataset : public GPTSampleDataset {
  public:
    explicit CountingDataset(int64_t n) : n_(n) {}
    int64_t size() const override { return n_; }
    GPTSample get(int64_t i) const override {
        GPTSample s;
        s.tokens = {i, i + 1};
        s.labels = {i + 1, i + 2};
        s.loss_mask = {1.f, 0.f};
        s.position_ids = {0, 1};
        s.document_start = {0, 0};
        return s;
    }
    Split split() const override { return Split::train; }

  private:
    int64_t n_;
};

std::vector<int64_t> first_tokens(const mt::Batch& b) {
    const mt::Tensor& tokens = b.at("tokens");
    std::vector<int64_t> out;
    for (int64_t r = 0; r < tokens.size(0); ++r) out.push_back(tokens.data<int64_t>()[r * 2]);
    return out;
}

TEST(PretrainingLoader, RanksTakeTheirSliceOfEachChunk) {
    CountingDataset ds(14);
    PretrainingLoader rank0(ds, 3, 0, 2, 0), rank1(ds, 3, 1, 2, 0);
    mt::Batch b;
    ASSERT_TRUE(rank1.next(b));
    EXPECT_EQ(first_tokens(b), (std::vector<int64_t>{3, 4, 5}));
    EXPECT_EQ(b.at("labels").data<int64_t>()[1], 5);
    EXPECT_EQ(b.at("loss_mask").data<float>()[1], 0.f);
    EXPECT_EQ(b.at("document_start").dtype(), mt::DType::i32);
    ASSERT_TRUE(rank1.next(b));
    EXPECT_EQ(first_tokens(b), (std::vector<int64_t>{9, 10, 11}));
    EXPECT_EQ(rank1.consumed_samples(), 12);
    EXPECT_FALSE(rank1.next(b));  // 2 samples left: the partial chunk is dropped
    ASSERT_TRUE(rank0.next(b));
    EXPECT_EQ(first_tokens(b), (std::vector<int64_t>{0, 1, 2}));
}

TEST(PretrainingLoader, ResumesFromConsumedSamples) {
    CountingDataset ds(20);
    PretrainingLoader fresh(ds, 2, 0, 1, 0), resumed(ds, 2, 0, 1, 6);
    mt::Batch a, b;
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(fresh.next(a));
    ASSERT_TRUE(resumed.next(b));
    EXPECT_EQ(first_tokens(a), first_tokens(b));
    EXPECT_EQ(fresh.consumed_samples(), resumed.consumed_samples());
}

TEST(PretrainingLoader, Errors) {
    CountingDataset ds(4);
    EXPECT_NE(mt::test::error_of([&] {
                  PretrainingLoader(ds, 2, 0, 1, 4);
              }).find("no samples left to consume: 4 consumed of 4"),
              std::string::npos);
    EXPECT_NE(mt::test::error_of([&] {
                  PretrainingLoader(ds, 2, 2, 2, 0);
              }).find("data-parallel rank 2 outside a group of 2"),
              std::string::npos);
    EXPECT_NE(mt::test::error_of([&] {
                  PretrainingLoader(ds, 0, 0, 1, 0);
              }).find("--micro-batch-size must be positive"),
              std::string::npos);
}

}  // namespace

// --dataloader-type cyclic against Megatron's MegatronPretrainingRandomSampler iterated as its
// cyclic_iter does (tests/fixtures/cyclic_sampler): every rank's micro-batches over several
// epochs, with and without data sharding, from the start and resumed, each step's loader made
// afresh from the consumed samples as the trainer makes it.
TEST(PretrainingLoader, CyclicOrderIsMegatronsRandomSamplers) {
    simdjson::dom::parser parser;
    const simdjson::dom::element doc =
        parser.load((mt::test::fixtures_dir() / "cyclic_sampler" / "expected.json").string());
    size_t cases = 0;
    for (auto c : doc["cases"].get_array()) {
        const int64_t total = int64_t(c["total"]);
        CountingDataset ds(total);
        const int64_t mbs = int64_t(c["micro_batch_size"]), dp = int64_t(c["dp"]);
        const LoaderOrder order{true, bool(c["data_sharding"])};
        int rank = 0;
        for (auto batches : c["ranks"].get_array()) {
            int64_t consumed = int64_t(c["consumed"]);
            size_t k = 0;
            for (auto want : batches.get_array()) {
                PretrainingLoader loader(ds, mbs, rank, int(dp), consumed, order);
                mt::Batch b;
                ASSERT_TRUE(loader.next(b));
                std::vector<int64_t> expected;
                for (auto i : want.get_array()) expected.push_back(int64_t(i));
                EXPECT_EQ(first_tokens(b), expected)
                    << "total " << ds.size() << " rank " << rank << " batch " << k;
                consumed = loader.consumed_samples();
                ++k;
            }
            ++rank;
        }
        ++cases;
    }
    EXPECT_EQ(cases, 5u);
}
