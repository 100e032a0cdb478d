// Python's random (mt/data/python_random.h) draw for draw against Python's own, and the synthetic
// requests of Megatron's dynamic-inference example (mt/infer/synthetic_requests.h) against what
// Megatron's own get_auto_requests (core_v0.13) and get_synthetic_requests (core_v0.19) made
// (tests/fixtures/synthetic_requests/make_fixture.py): how many, each one's arrival and prompt
// length.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdlib>
#include <string>

#include "mt/data/python_random.h"
#include "mt/infer/synthetic_requests.h"
#include "test_support.h"

namespace {

simdjson::dom::element expected(simdjson::dom::parser& parser) {
    return parser.load(
        (mt::test::fixtures_dir() / "synthetic_requests" / "expected.json").string());
}

double python_float(simdjson::dom::element repr) {
    return std::strtod(std::string(std::string_view(repr)).c_str(), nullptr);
}

TEST(PythonRandom, DrawsAsPythonsRandom) {
    simdjson::dom::parser parser;
    size_t seeds = 0;
    for (auto c : expected(parser)["python"].get_array()) {
        const uint64_t seed = uint64_t(c["seed"]);
        mt::data::PythonRandom r(seed);
        SCOPED_TRACE("seed " + std::to_string(seed));
        for (auto v : c["random"].get_array()) EXPECT_EQ(r.random(), python_float(v));
        int k = 1;
        for (auto v : c["getrandbits"].get_array()) EXPECT_EQ(r.getrandbits(k++), uint64_t(v));
        for (auto v : c["randint_8_32"].get_array()) EXPECT_EQ(r.randint(8, 32), int64_t(v));
        for (auto v : c["expovariate_100"].get_array())
            EXPECT_DOUBLE_EQ(r.expovariate(100.0), python_float(v));
        ++seeds;
    }
    EXPECT_EQ(seeds, 3u);
}

TEST(SyntheticRequests, AreMegatronsForEachVersion) {
    simdjson::dom::parser parser;
    size_t cases = 0;
    for (auto [version, list] : expected(parser)["cases"].get_object()) {
        for (auto c : list.get_array()) {
            mt::infer::SyntheticRequestFlags f;
            f.seed = uint64_t(c["seed"]);
            simdjson::dom::array range = c["num_tokens_to_prompt"];
            f.min_prompt = int64_t(range.at(0));
            f.max_prompt = int64_t(range.at(1));
            f.per_sec = double(c["per_sec"]);
            f.duration = double(c["duration"]);
            f.core_v0_19 = version == "core_v0.19";
            SCOPED_TRACE(std::string(version) + " seed " + std::to_string(f.seed));
            const auto got = mt::infer::synthetic_requests(f);
            simdjson::dom::array want = c["requests"];
            ASSERT_EQ(got.size(), want.size());
            size_t i = 0;
            for (auto w : want) {
                EXPECT_DOUBLE_EQ(got[i].time_offset, python_float(w["time_offset"])) << i;
                EXPECT_EQ(got[i].prompt_length, int64_t(w["prompt_length"])) << i;
                ++i;
            }
            ++cases;
        }
    }
    EXPECT_EQ(cases, 5u);
}

// core_v0.19 with every request added at once draws its prompt lengths from Python's generator
// as Megatron's initialization left it: refused, naming the flags.
TEST(SyntheticRequests, RefusesWhatCannotBeReproduced) {
    mt::infer::SyntheticRequestFlags f;
    f.core_v0_19 = true;
    f.per_sec = -1;
    EXPECT_NE(mt::test::error_of([&] { mt::infer::synthetic_requests(f); })
                  .find("--incoming-requests-per-sec -1"),
              std::string::npos);
    f.per_sec = 10;
    f.min_prompt = 9;
    f.max_prompt = 8;
    EXPECT_NE(mt::test::error_of([&] { mt::infer::synthetic_requests(f); })
                  .find("--num-tokens-to-prompt 9 8"),
              std::string::npos);
}

}  // namespace
