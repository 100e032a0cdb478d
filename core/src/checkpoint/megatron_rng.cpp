#include "mt/checkpoint/megatron_rng.h"

#include <algorithm>
#include <cstring>

namespace mt {
namespace {

constexpr size_t kN = 624;

void put_u64(uint8_t* out, uint64_t v) {
    for (int i = 0; i < 8; ++i) out[i] = uint8_t(v >> (8 * i));
}

}  // namespace

std::array<uint32_t, 624> mt19937_genrand_words(uint32_t seed) {
    std::array<uint32_t, kN> mt{};
    mt[0] = seed;
    for (uint32_t i = 1; i < kN; ++i)
        mt[i] = 1812433253u * (mt[i - 1] ^ (mt[i - 1] >> 30)) + i;
    return mt;
}

std::array<uint32_t, 624> python_random_words(uint64_t seed) {
    // Python's key: the seed's 32-bit words, low first; 0 is one word.
    std::vector<uint32_t> key;
    for (uint64_t v = seed; v != 0; v >>= 32) key.push_back(uint32_t(v));
    if (key.empty()) key.push_back(0);
    // init_by_array, as Modules/_randommodule.c writes it.
    std::array<uint32_t, kN> mt = mt19937_genrand_words(19650218u);
    size_t i = 1, j = 0;
    for (size_t k = std::max(kN, key.size()); k > 0; --k) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525u)) + key[j] + uint32_t(j);
        ++i;
        ++j;
        if (i >= kN) {
            mt[0] = mt[kN - 1];
            i = 1;
        }
        if (j >= key.size()) j = 0;
    }
    for (size_t k = kN - 1; k > 0; --k) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941u)) - uint32_t(i);
        ++i;
        if (i >= kN) {
            mt[0] = mt[kN - 1];
            i = 1;
        }
    }
    mt[0] = 0x80000000u;  // a non-zero initial array
    return mt;
}

std::vector<uint8_t> torch_cpu_rng_state(uint64_t seed) {
    // CPUGeneratorImplState: legacy_pod {uint64 the_initial_seed; int left; int seeded;
    // uint64 next; uint64 state[624]; double normal_x, normal_y, normal_rho;
    // int normal_is_valid;} float next_float_normal_sample; bool valid; padded to 5056.
    std::vector<uint8_t> out(5056, 0);
    put_u64(out.data(), seed);
    const int32_t one = 1;
    std::memcpy(out.data() + 8, &one, 4);   // left
    std::memcpy(out.data() + 12, &one, 4);  // seeded
    const std::array<uint32_t, kN> words = mt19937_genrand_words(uint32_t(seed));
    for (size_t i = 0; i < kN; ++i) put_u64(out.data() + 24 + 8 * i, words[i]);
    return out;
}

std::array<uint8_t, 16> torch_cuda_rng_state(uint64_t seed) {
    std::array<uint8_t, 16> out{};
    put_u64(out.data(), seed);
    return out;
}

MegatronRngState megatron_seeded_rng_state(uint64_t seed, const MegatronRngRank& rank) {
    MegatronRngState s;
    s.seed = seed + 100 * uint64_t(rank.pipeline);
    if (rank.data_parallel_random_init) s.seed += 10 * uint64_t(rank.data);
    s.python_words = python_random_words(s.seed);
    if (s.seed < (uint64_t(1) << 32)) s.numpy_key = mt19937_genrand_words(uint32_t(s.seed));
    s.torch_cpu = torch_cpu_rng_state(s.seed);
    // tensor_parallel.random.model_parallel_cuda_manual_seed(seed).
    s.cuda = torch_cuda_rng_state(s.seed);
    s.tracker = {
        {"data-parallel-rng", torch_cuda_rng_state(s.seed)},
        {"model-parallel-rng", torch_cuda_rng_state(s.seed + 2718 + uint64_t(rank.tensor))},
        {"expert-parallel-rng",
         torch_cuda_rng_state(s.seed + 1024 + 100 * uint64_t(rank.expert) +
                              uint64_t(rank.expert_tensor))},
    };
    return s;
}

}  // namespace mt
