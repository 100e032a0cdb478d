// The generator states Megatron keeps in its checkpoints' rng_state (random.getstate(),
// numpy.random.get_state(), torch.get_rng_state(), torch.cuda.get_rng_state() and its CUDA RNG
// tracker's states), as Megatron's seeding leaves them on a rank: megatron-train draws from a
// stream of its own (the dropout Philox, kept beside them), so what it saves for Megatron is
// where Megatron's own generators start for the run's --seed, which lets Megatron resume the
// checkpoint without --no-load-rng.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mt/api.h"

namespace mt {

// (The Python and numpy words: mt/data/python_random.h, python_seed_words(seed) and
// mt19937_init_genrand(seed), which numpy's legacy RandomState(seed) and torch's CPU generator
// start from.)
// torch.get_rng_state() after torch.manual_seed(seed): CPUGeneratorImpl's 5056-byte state
// (the seed, left 1, seeded 1, next 0, the 624 words of init_genrand(low 32 bits of the seed)
// as 64-bit values, then the cached normals, none valid).
MT_API std::vector<uint8_t> torch_cpu_rng_state(uint64_t seed);
// torch.cuda.get_rng_state() after torch.cuda.manual_seed(seed): the seed and the Philox
// offset 0, 16 bytes.
MT_API std::array<uint8_t, 16> torch_cuda_rng_state(uint64_t seed);

// One rank's states, as megatron/training/initialize.py _set_random_seed(seed) leaves them.
struct MegatronRngState {
    uint64_t seed = 0;  // --seed + 100 x the pipeline rank (+ 10 x the data-parallel rank)
    std::array<uint32_t, 624> python_words{};
    // numpy's key; none where numpy refuses the seed (2^32 and above), as Megatron fails then.
    std::optional<std::array<uint32_t, 624>> numpy_key;
    std::vector<uint8_t> torch_cpu;
    std::array<uint8_t, 16> cuda{};
    // tensor_parallel's CudaRNGStatesTracker: data-parallel-rng, model-parallel-rng,
    // expert-parallel-rng, in that order.
    std::vector<std::pair<std::string, std::array<uint8_t, 16>>> tracker;
};

// Where a rank stands in Megatron's groups, for its seeds.
struct MegatronRngRank {
    int64_t pipeline = 0, tensor = 0, data = 0, expert = 0, expert_tensor = 0;
    bool data_parallel_random_init = false;  // --data-parallel-random-init
    // The context-parallel rank: no seed depends on it, but only data- and context-parallel
    // rank 0 keeps its (pipeline, tensor) states in a torch_dist checkpoint.
    int64_t context = 0;
};

MT_API MegatronRngState megatron_seeded_rng_state(uint64_t seed, const MegatronRngRank& rank);

}  // namespace mt
