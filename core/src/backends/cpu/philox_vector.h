// Philox-4x32-10 blocks at SIMD width, the build chosen at run time (AVX-512: 16 blocks at once,
// AVX2: 8, or portable; cpu_features(), MT_CPU_ISA=avx2 forces the AVX2 one): dropout's bits for
// a whole row of counters, where one k::philox_block call per element (attention's scores) or per
// four (the hidden states' dropout) cost more than the GEMMs around them. Every build gives
// k::philox_block's words.
#pragma once

#include <cstdint>
#include <vector>

#include "mt/api.h"

namespace mt::cpu {

// out[4 b + w] = word w of Philox block first + b of stream seed (k::philox_block), b < blocks.
MT_API void philox_words(uint64_t seed, uint64_t first, int64_t blocks, uint32_t* out);

// Each build (philox_words runs the one this CPU has; the tests run them all): the AVX-512 one
// needs cpu_features().avx512f, the AVX2 one cpu_features().avx2.
MT_API void philox_words_avx512(uint64_t seed, uint64_t first, int64_t blocks, uint32_t* out);
MT_API void philox_words_avx2(uint64_t seed, uint64_t first, int64_t blocks, uint32_t* out);
MT_API void philox_words_portable(uint64_t seed, uint64_t first, int64_t blocks, uint32_t* out);

// The words of counters [first, first + n) of stream seed (counter j is word j % 4 of block
// j / 4, as k::Dropout draws them), computed into `scratch`: the returned pointer's [i] is counter
// first + i's word. first + n must not pass 2^64.
MT_API const uint32_t* counter_words(uint64_t seed, uint64_t first, int64_t n,
                                     std::vector<uint32_t>& scratch);

}  // namespace mt::cpu
