// The generator states megatron-train writes into Megatron's rng_state against those the
// libraries themselves leave after seeding (tests/fixtures/megatron_rng/make_fixture.py):
// random.seed, numpy.random.seed, torch.manual_seed, word for word and byte for byte, for seeds
// from 0 to above 2^32; and a rank's seeds as Megatron's _set_random_seed derives them.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdio>
#include <string>

#include "mt/checkpoint/megatron_rng.h"
#include "mt/data/python_random.h"
#include "test_support.h"

namespace {

std::string hex(const uint8_t* data, size_t n) {
    std::string out;
    char b[3];
    for (size_t i = 0; i < n; ++i) {
        std::snprintf(b, sizeof b, "%02x", data[i]);
        out += b;
    }
    return out;
}

TEST(MegatronRng, SeededStatesAreTheLibrariesOwn) {
    simdjson::dom::parser parser;
    const simdjson::dom::element doc = parser.load(
        (mt::test::fixtures_dir() / "megatron_rng" / "expected.json").string());
    size_t cases = 0;
    for (auto c : doc["cases"].get_array()) {
        const uint64_t seed = uint64_t(c["seed"]);
        SCOPED_TRACE("seed " + std::to_string(seed));
        // Python: the 624 words, then the index 624.
        const auto python = mt::data::python_seed_words(seed);
        simdjson::dom::array words = c["python"]["words"];
        ASSERT_EQ(words.size(), 625u);
        size_t i = 0;
        for (auto w : words) {
            const uint64_t want = uint64_t(w);
            if (i < 624) EXPECT_EQ(python[i], want) << "word " << i;
            else EXPECT_EQ(want, 624u);
            ++i;
        }
        // numpy (seeds below 2^32).
        simdjson::dom::object numpy;
        if (!c["numpy"].get(numpy)) {
            const auto key = mt::data::mt19937_init_genrand(uint32_t(seed));
            i = 0;
            for (auto w : numpy["key"].get_array()) EXPECT_EQ(key[i++], uint64_t(w)) << i;
            EXPECT_EQ(i, 624u);
            EXPECT_EQ(int64_t(numpy["pos"]), 624);
        }
        // torch's CPU generator, byte for byte; CUDA's as torch defines it.
        const auto cpu = mt::torch_cpu_rng_state(seed);
        EXPECT_EQ(hex(cpu.data(), cpu.size()), std::string_view(c["torch_cpu"]["bytes"]));
        const auto cuda = mt::torch_cuda_rng_state(seed);
        EXPECT_EQ(hex(cuda.data(), cuda.size()), std::string_view(c["cuda"]["bytes"]));
        ++cases;
    }
    EXPECT_EQ(cases, 6u);
}

// _set_random_seed: seed + 100 x the pipeline rank (+ 10 x the data-parallel rank with
// --data-parallel-random-init); the tracker's data-parallel-rng at that seed,
// model-parallel-rng at + 2718 + the tensor rank, expert-parallel-rng at + 1024 + 100 x the
// expert rank + the expert tensor rank.
TEST(MegatronRng, RankSeedsAreMegatrons) {
    mt::MegatronRngRank rank;
    rank.pipeline = 1;
    rank.tensor = 3;
    rank.data = 2;
    rank.expert = 2;
    rank.expert_tensor = 1;
    mt::MegatronRngState s = mt::megatron_seeded_rng_state(1234, rank);
    EXPECT_EQ(s.seed, 1334u);
    EXPECT_EQ(s.python_words, mt::data::python_seed_words(1334));
    ASSERT_TRUE(s.numpy_key.has_value());
    EXPECT_EQ(*s.numpy_key, mt::data::mt19937_init_genrand(1334));
    EXPECT_EQ(s.torch_cpu, mt::torch_cpu_rng_state(1334));
    EXPECT_EQ(s.cuda, mt::torch_cuda_rng_state(1334));
    ASSERT_EQ(s.tracker.size(), 3u);
    EXPECT_EQ(s.tracker[0].first, "data-parallel-rng");
    EXPECT_EQ(s.tracker[0].second, mt::torch_cuda_rng_state(1334));
    EXPECT_EQ(s.tracker[1].first, "model-parallel-rng");
    EXPECT_EQ(s.tracker[1].second, mt::torch_cuda_rng_state(1334 + 2718 + 3));
    EXPECT_EQ(s.tracker[2].first, "expert-parallel-rng");
    EXPECT_EQ(s.tracker[2].second, mt::torch_cuda_rng_state(1334 + 1024 + 200 + 1));
    rank.data_parallel_random_init = true;
    EXPECT_EQ(mt::megatron_seeded_rng_state(1234, rank).seed, 1354u);
    // numpy refuses seeds from 2^32 on (and so Megatron's seeding).
    EXPECT_FALSE(mt::megatron_seeded_rng_state(uint64_t(1) << 32, {}).numpy_key.has_value());
}

}  // namespace
