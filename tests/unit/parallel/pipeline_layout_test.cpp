// Megatron's --pipeline-model-parallel-layout strings: repetitions unrolled and commas dropped as
// its parse_str_to_list does, each '|' segment's transformer and MTP layers counted.
#include <gtest/gtest.h>

#include <vector>

#include "mt/parallel/pipeline_layout.h"
#include "test_support.h"

namespace {

using mt::parallel::check_pipeline_layout;
using mt::parallel::parse_pipeline_layout;

TEST(PipelineLayout, UnrollsAndCountsEachSegment) {
    // Megatron's docstring example: [["E","t","t","t"]]+[["t","t"]]*29+[["m"],["L"]].
    const auto docs = parse_pipeline_layout("Ettt|(tt|)*29,m|L");
    std::vector<int64_t> decoders{3};
    for (int i = 0; i < 29; ++i) decoders.push_back(2);
    decoders.insert(decoders.end(), {0, 0});
    EXPECT_EQ(docs.decoder_layers, decoders);
    EXPECT_EQ(docs.mtp_layers.size(), 32u);
    EXPECT_EQ(docs.mtp_layers[30], 1);
    // Its other examples: xy(ab|cd|ef)*2,pq and (|ab)*2,cd, in layer letters.
    EXPECT_EQ(parse_pipeline_layout("Et(t|tt|m)*2,L").decoder_layers,
              (std::vector<int64_t>{2, 2, 1, 2, 0}));
    EXPECT_EQ(parse_pipeline_layout("(|tt)*2,tL").decoder_layers, (std::vector<int64_t>{0, 2, 3}));
    EXPECT_EQ(parse_pipeline_layout("Et*3|t*2L").decoder_layers, (std::vector<int64_t>{3, 2}));
    EXPECT_NE(mt::test::error_of([] {
                  parse_pipeline_layout("Et|q|L");
              }).find("Invalid layer character: q (stage='q'"),
              std::string::npos);
}

TEST(PipelineLayout, MegatronsChecksAndTheVirtualStages) {
    EXPECT_EQ(check_pipeline_layout("Et*3|(tt|)*6L", 2, 15, 0).decoder_layers,
              (std::vector<int64_t>{3, 2, 2, 2, 2, 2, 2, 0}));
    EXPECT_EQ(check_pipeline_layout("Et*7|t*7mL", 2, 14, 1).layers,
              "E" + std::string(14, 't') + "mL");
    const std::pair<const char*, const char*> bad[] = {
        {"t|EtL", "The first layer must be embedding"},
        {"Et|Lt", "The last layer must be loss"},
        {"EtE|tL", "Embedding must be specified exactly once"},
        {"EtL|tL", "Loss must be specified exactly once"},
        {"Ett|tL", "Number of decoder layers 3 must match num_layers 4"},
    };
    for (const auto& [layout, message] : bad)
        EXPECT_NE(mt::test::error_of([&] { check_pipeline_layout(layout, 2, 4, 0); }).find(message),
                  std::string::npos)
            << layout;
    EXPECT_NE(mt::test::error_of([] {
                  check_pipeline_layout("Ettt|tL", 3, 4, 0);
              }).find("must be divisible by pipeline_model_parallel_size (num_stages=2"),
              std::string::npos);
    EXPECT_NE(mt::test::error_of([] {
                  check_pipeline_layout("Et*99999999", 1, 1, 0);
              }).find("is too long"),
              std::string::npos);
}

}  // namespace
