// torch_randperm against torch.randperm itself (tests/fixtures/tasks/randperm.json, written by
// make_randperm_fixture.py with torch 2.x): small permutations whole, and sizes around and over
// the 2^32 / 20 elements where torch switches to 64-bit draws by their first and last values,
// values at chosen positions and a checksum over all of them.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <vector>

#include "mt/data/torch_randperm.h"
#include "mt/error.h"
#include "test_support.h"

namespace {

simdjson::dom::array randperm_cases() {
    static simdjson::dom::parser parser;
    static simdjson::dom::element doc =
        parser.load((mt::test::fixtures_dir() / "tasks" / "randperm.json").string());
    return doc["randperm"];
}

std::vector<int64_t> ints(simdjson::dom::array a) {
    std::vector<int64_t> out;
    for (int64_t v : a) out.push_back(v);
    return out;
}

TEST(TorchRandperm, SmallPermutationsAreTorchs) {
    int cases = 0;
    for (simdjson::dom::element c : randperm_cases()) {
        if (c["values"].error()) continue;
        const int64_t n = c["n"];
        const uint64_t seed = c["seed"];
        EXPECT_EQ(mt::data::torch_randperm(n, seed), ints(c["values"]))
            << "n " << n << " seed " << seed;
        ++cases;
    }
    EXPECT_GE(cases, 8);
}

TEST(TorchRandperm, LargePermutationsAreTorchs) {
    int cases = 0;
    for (simdjson::dom::element c : randperm_cases()) {
        if (!c["values"].error()) continue;
        const int64_t n = c["n"];
        const uint64_t seed = c["seed"];
        const std::string what = "n " + std::to_string(n) + " seed " + std::to_string(seed);
        const std::vector<int64_t> perm = mt::data::torch_randperm(n, seed);
        ASSERT_EQ(int64_t(perm.size()), n) << what;
        const std::vector<int64_t> first = ints(c["first"]), last = ints(c["last"]);
        EXPECT_EQ(std::vector<int64_t>(perm.begin(), perm.begin() + int64_t(first.size())), first)
            << what;
        EXPECT_EQ(std::vector<int64_t>(perm.end() - int64_t(last.size()), perm.end()), last)
            << what;
        const std::vector<int64_t> positions = ints(c["positions"]), at = ints(c["at"]);
        for (size_t k = 0; k < positions.size(); ++k)
            EXPECT_EQ(perm[size_t(positions[k])], at[k]) << what << " position " << positions[k];
        uint64_t checksum = 0;
        for (size_t i = 0; i < perm.size(); ++i) checksum += uint64_t(perm[i]) * uint64_t(i);
        EXPECT_EQ(std::to_string(checksum), std::string(std::string_view(c["checksum"]))) << what;
        ++cases;
    }
    EXPECT_EQ(cases, 3);
}

TEST(TorchRandperm, SeedsAreTheirLow32Bits) {
    // CPUGeneratorImpl keeps a 64-bit seed but seeds mt19937 with its low 32 bits.
    EXPECT_EQ(mt::data::torch_randperm(50, 5),
              mt::data::torch_randperm(50, (uint64_t(1) << 32) + 5));
    EXPECT_NE(mt::data::torch_randperm(50, 5), mt::data::torch_randperm(50, 6));
}

TEST(TorchRandperm, RefusesNegativeSizes) {
    EXPECT_NE(mt::test::error_of([] { mt::data::torch_randperm(-1, 0); }).find("non-negative"),
              std::string::npos);
}

}  // namespace
