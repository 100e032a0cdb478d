#include "mt/checkpoint/megatron_rng.h"

#include <cstring>

#include "mt/data/python_random.h"

namespace mt {
namespace {

constexpr size_t kN = 624;

void put_u64(uint8_t* out, uint64_t v) {
    for (int i = 0; i < 8; ++i) out[i] = uint8_t(v >> (8 * i));
}

}  // namespace

std::vector<uint8_t> torch_cpu_rng_state(uint64_t seed) {
    // CPUGeneratorImplState: legacy_pod {uint64 the_initial_seed; int left; int seeded;
    // uint64 next; uint64 state[624]; double normal_x, normal_y, normal_rho;
    // int normal_is_valid;} float next_float_normal_sample; bool valid; padded to 5056.
    std::vector<uint8_t> out(5056, 0);
    put_u64(out.data(), seed);
    const int32_t one = 1;
    std::memcpy(out.data() + 8, &one, 4);   // left
    std::memcpy(out.data() + 12, &one, 4);  // seeded
    const std::array<uint32_t, kN> words = data::mt19937_init_genrand(uint32_t(seed));
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
    s.python_words = data::python_seed_words(s.seed);
    if (s.seed < (uint64_t(1) << 32)) s.numpy_key = data::mt19937_init_genrand(uint32_t(s.seed));
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
