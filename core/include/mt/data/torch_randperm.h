// torch.randperm on the CPU, bit for bit: the permutation DistributedSampler shuffles a dataset
// with (torch.randperm(n, generator=g) after g.manual_seed(seed)), for the sample order of
// Megatron's finetuning data loaders.
#pragma once

#include <cstdint>
#include <vector>

#include "mt/api.h"

namespace mt::data {

// torch.randperm(n, generator=g) for a CPU torch.Generator g just seeded with
// g.manual_seed(seed) (ATen's randperm_cpu over CPUGeneratorImpl's mt19937, whose seed is the
// low 32 bits of `seed`). For n < 2^32 / 20: i = 0 .. n-2 swaps element i with element
// i + (next 32-bit draw mod (n - i)); from there on (where a 32-bit draw would bias the
// modulo): the inside-out Fisher-Yates with 64-bit draws (two 32-bit draws, the first the high
// half), element i = the one at (draw mod (i + 1)), which gets i. mt::Error for n < 0.
MT_API std::vector<int64_t> torch_randperm(int64_t n, uint64_t seed);

}  // namespace mt::data
