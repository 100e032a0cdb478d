// The test support's JSON comparison (tests/support/json_compare.h): numbers within the
// tolerance, everything else exactly.
#include <gtest/gtest.h>

#include "json_compare.h"

namespace {

using mt::test::json_near;

TEST(JsonNear, NumbersWithinTheToleranceTheRestExactly) {
    const std::string want = R"({"text": ["a b"], "tokens": [[1, 2]], "logprobs": [[-5.0056]]})";
    EXPECT_TRUE(json_near(want, want, 0));
    EXPECT_TRUE(json_near(R"({"tokens": [[1, 2]], "text": ["a b"], "logprobs": [[-5.00560001]]})",
                          want, 1e-5));
    EXPECT_FALSE(
        json_near(R"({"text": ["a b"], "tokens": [[1, 2]], "logprobs": [[-5.1]]})", want, 1e-5));
    EXPECT_FALSE(
        json_near(R"({"text": ["a c"], "tokens": [[1, 2]], "logprobs": [[-5.0056]]})", want, 1e-5));
    EXPECT_FALSE(
        json_near(R"({"text": ["a b"], "tokens": [[1, 3]], "logprobs": [[-5.0056]]})", want, 1e-5));
    EXPECT_FALSE(
        json_near(R"({"text": ["a b"], "tokens": [[1]], "logprobs": [[-5.0056]]})", want, 1e-5));
    EXPECT_FALSE(json_near(R"({"text": ["a b"], "tokens": [[1, 2]], "logprobs": [[-5.0056]],
                              "extra": 1})",
                           want, 1e-5));
    EXPECT_FALSE(json_near("not json", want, 1e-5));
}

}  // namespace
