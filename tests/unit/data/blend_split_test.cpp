// Blend (--data-path) and split (--split) parsing, split ranges and requested sizes.
#include <cmath>

#include <gtest/gtest.h>

#include "mt/data/blend_split.h"
#include "test_support.h"

namespace {

using namespace mt::data;
using Range = std::pair<int64_t, int64_t>;

TEST(BlendSplit, ParsesMegatronSplitStrings) {
    auto s = parse_and_normalize_split("949,50,1");
    EXPECT_EQ(s[0], 949.0 / 1000.0);
    EXPECT_EQ(s[1], 50.0 / 1000.0);
    EXPECT_EQ(s[2], 1.0 / 1000.0);
    // Quotes and other separators are ignored: only runs of [.0-9] count.
    auto q = parse_and_normalize_split("\"98,2,0\"");
    EXPECT_EQ(q[0], 0.98);
    EXPECT_EQ(q[1], 0.02);
    EXPECT_EQ(q[2], 0.0);
    auto one = parse_and_normalize_split("1");
    EXPECT_EQ(one[0], 1.0);
    EXPECT_EQ(one[1], 0.0);
    EXPECT_EQ(one[2], 0.0);
    auto spaced = parse_and_normalize_split("969, 30, 1");
    EXPECT_EQ(spaced[1], 30.0 / 1000.0);
    EXPECT_FALSE(mt::test::error_of([] { parse_and_normalize_split("1,2,3,4"); }).empty());
    EXPECT_FALSE(mt::test::error_of([] { parse_and_normalize_split("1.2.3"); }).empty());
    EXPECT_FALSE(mt::test::error_of([] { parse_and_normalize_split("0,0,0"); }).empty());
}

TEST(BlendSplit, SplitMatrixBookends) {
    SplitMatrix m = convert_split_vector_to_split_matrix(parse_and_normalize_split("949,50,1"));
    ASSERT_TRUE(m[0] && m[1] && m[2]);
    EXPECT_TRUE(m[0]->start_is_int);
    EXPECT_EQ(m[0]->start, 0.0);
    EXPECT_EQ(m[0]->end, 0.949);
    EXPECT_FALSE(m[1]->start_is_int);
    EXPECT_EQ(m[1]->start, 0.949);
    EXPECT_EQ(m[1]->end, 0.949 + 0.05);
    EXPECT_EQ(m[2]->end, 0.949 + 0.05 + 0.001);
    EXPECT_EQ(split_range(*m[0], 1000), (Range{0, 949}));
    EXPECT_EQ(split_range(*m[1], 1000), (Range{949, 999}));
    EXPECT_EQ(split_range(*m[2], 1000), (Range{999, 1000}));

    SplitMatrix only_train = convert_split_vector_to_split_matrix(parse_and_normalize_split("1"));
    EXPECT_TRUE(only_train[0].has_value());
    EXPECT_FALSE(only_train[1].has_value());
    EXPECT_FALSE(only_train[2].has_value());
    SplitMatrix no_train = convert_split_vector_to_split_matrix(parse_and_normalize_split("0,1,1"));
    EXPECT_FALSE(no_train[0].has_value());
    ASSERT_TRUE(no_train[1].has_value());
    EXPECT_FALSE(no_train[1]->start_is_int);  // 0 + 0.0 is the float 0.0
}

TEST(BlendSplit, SplitBoundariesRoundHalfToEven) {
    // "1,1" over 5 elements: 0.5 * 5 = 2.5 rounds to 2 (Python round), not 3.
    SplitMatrix m = convert_split_vector_to_split_matrix(parse_and_normalize_split("1,1"));
    EXPECT_EQ(split_range(*m[0], 5), (Range{0, 2}));
    EXPECT_EQ(split_range(*m[1], 5), (Range{2, 5}));
    // 0.5 * 7 = 3.5 rounds to 4.
    EXPECT_EQ(split_range(*m[0], 7), (Range{0, 4}));
    EXPECT_EQ(split_range(Bookend{0.25, 0.75, false}, 2), (Range{0, 2}));
    EXPECT_EQ(split_range(Bookend{0.25, 0.75, false}, 6), (Range{2, 4}));
}

TEST(BlendSplit, BlendFromList) {
    Blend prefixes = get_blend_from_list({"a", " b ", "c"});
    EXPECT_EQ(prefixes.prefixes, (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_FALSE(prefixes.weights.has_value());

    Blend weighted = get_blend_from_list({"30", "path/a", "0.7", " path/b"});
    EXPECT_EQ(weighted.prefixes, (std::vector<std::string>{"path/a", "path/b"}));
    ASSERT_TRUE(weighted.weights.has_value());
    EXPECT_EQ(*weighted.weights, (std::vector<double>{30.0, 0.7}));
    EXPECT_EQ(get_blend_from_list({"1e2", "x", " 5 ", "y"}).weights->at(0), 100.0);

    // A weight that is not a float makes the whole list prefixes.
    Blend fallback = get_blend_from_list({"30", "a", "b", "c"});
    EXPECT_EQ(fallback.prefixes, (std::vector<std::string>{"30", "a", "b", "c"}));
    EXPECT_FALSE(fallback.weights.has_value());
    Blend all_paths = get_blend_from_list({"p1", "p2"});
    EXPECT_EQ(all_paths.prefixes.size(), 2u);
    EXPECT_FALSE(all_paths.weights.has_value());
    // Megatron's any()/all() over one iterator: a float weight after a non-float one is an error.
    EXPECT_FALSE(mt::test::error_of([] { get_blend_from_list({"x", "a", "30", "b"}); }).empty());
}

TEST(BlendSplit, PythonFloatParsing) {
    EXPECT_EQ(parse_python_float(" 0.3 "), 0.3);
    EXPECT_EQ(parse_python_float("7"), 7.0);
    EXPECT_FALSE(parse_python_float("0x10").has_value());
    EXPECT_FALSE(parse_python_float("3a").has_value());
    EXPECT_FALSE(parse_python_float("").has_value());
}

TEST(BlendSplit, NormalizeUsesNumpyPairwiseSum) {
    std::vector<double> w = {0.3, 0.7};
    auto n = normalize_weights(w);
    EXPECT_EQ(n[0], 0.3 / (0.3 + 0.7));
    // 20 weights: numpy sums 8 interleaved partial sums, not left to right.
    std::vector<double> many;
    for (int i = 0; i < 20; ++i) many.push_back(0.1 * (i + 1) + 1e-3 / (i + 1));
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = many[j];
    for (int j = 0; j < 8; ++j) r[j] += many[8 + j];
    double expected = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (int i = 16; i < 20; ++i) expected += many[i];
    EXPECT_EQ(numpy_sum(many), expected);
}

TEST(BlendSplit, RequestedSizes) {
    // train_iters 1000, gbs 8, eval_interval 100, eval_iters 10.
    auto s = train_valid_test_num_samples(std::nullopt, 1000, 8, 100, 10, 8);
    EXPECT_EQ(s[0], 8000);
    EXPECT_EQ(s[1], (1000 / 100 + 1) * 10 * 8);
    EXPECT_EQ(s[2], 80);
    EXPECT_EQ(train_valid_test_num_samples(12345, 1000, 8, 100, 10, 8)[0], 12345);
}

TEST(BlendSplit, SizePerDatasetWithSurplus) {
    auto sizes = size_per_split_per_dataset({0.3, 0.7}, {2000, 200, 50}, 0.005);
    // ceil(ceil(2000 * 0.3) * 1.005) = ceil(603.0000000000001) = 604 in double arithmetic.
    EXPECT_EQ(sizes[0][0], static_cast<int64_t>(std::ceil(std::ceil(2000 * 0.3) * 1.005)));
    EXPECT_EQ(sizes[1][0], static_cast<int64_t>(std::ceil(std::ceil(2000 * 0.7) * 1.005)));
    auto target = size_per_split_per_dataset({0.3, 0.7}, {2000, 200, 50});
    EXPECT_EQ(target[0][2], 15);
    EXPECT_EQ(target[1][2], 35);
}

}  // namespace
