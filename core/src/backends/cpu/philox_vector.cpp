#include "philox_vector.h"

#include <immintrin.h>

#include <algorithm>

#include "cpu_features.h"
#include "mt/kernels/rng.h"

namespace mt::cpu {

namespace {

// k::philox4x32_10's constants.
constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;

// Lane l of the four word vectors is block first + l; written out interleaved, word by word.
void interleave(const uint32_t (*words)[16], int64_t lanes, uint32_t* out) {
    for (int64_t l = 0; l < lanes; ++l)
        for (int w = 0; w < 4; ++w) out[4 * l + w] = words[w][l];
}

// The high halves of the lanes' 32 x 32-bit products a m: those of the even lanes from their
// 64-bit products, those of the odd lanes from the products of the lanes shifted down.
__attribute__((target("avx512f"))) inline __m512i mulhi16(__m512i a, __m512i m) {
    // (the maskz forms with every lane set: GCC 12's unmasked ones warn of an uninitialised source)
    const __m512i even = _mm512_maskz_srli_epi64(0xFF, _mm512_maskz_mul_epu32(0xFF, a, m), 32);
    const __m512i odd = _mm512_maskz_mul_epu32(0xFF, _mm512_maskz_srli_epi64(0xFF, a, 32), m);
    return _mm512_mask_blend_epi32(__mmask16(0xAAAA), even, odd);
}

__attribute__((target("avx2"))) inline __m256i mulhi8(__m256i a, __m256i m) {
    const __m256i even = _mm256_srli_epi64(_mm256_mul_epu32(a, m), 32);
    const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
    return _mm256_blend_epi32(even, odd, 0xAA);
}

}  // namespace

// Each lane runs k::philox4x32_10's rounds on its block's counter (block lo, block hi, 0, 0).
__attribute__((target("avx512f"))) void philox_words_avx512(uint64_t seed, uint64_t first,
                                                            int64_t blocks, uint32_t* out) {
    const __m512i m0 = _mm512_set1_epi32(int(kMul0)), m1 = _mm512_set1_epi32(int(kMul1));
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int64_t b = 0; b < blocks; b += 16) {
        // Block numbers first + b + l, lo and hi words: the carry out of the low word added to
        // the high one lane by lane.
        const uint64_t base = first + uint64_t(b);
        const __m512i lo = _mm512_add_epi32(_mm512_set1_epi32(int(uint32_t(base))), lane);
        const __mmask16 carry = _mm512_cmplt_epu32_mask(lo, _mm512_set1_epi32(int(uint32_t(base))));
        __m512i c0 = lo;
        __m512i c1 = _mm512_mask_add_epi32(_mm512_set1_epi32(int(uint32_t(base >> 32))), carry,
                                           _mm512_set1_epi32(int(uint32_t(base >> 32))),
                                           _mm512_set1_epi32(1));
        __m512i c2 = _mm512_setzero_si512(), c3 = _mm512_setzero_si512();
        uint32_t key0 = uint32_t(seed), key1 = uint32_t(seed >> 32);
        for (int round = 0; round < 10; ++round) {
            const __m512i hi0 = mulhi16(c0, m0), lo0 = _mm512_mullo_epi32(c0, m0);
            const __m512i hi1 = mulhi16(c2, m1), lo1 = _mm512_mullo_epi32(c2, m1);
            c0 = _mm512_xor_si512(_mm512_xor_si512(hi1, c1), _mm512_set1_epi32(int(key0)));
            c1 = lo1;
            c2 = _mm512_xor_si512(_mm512_xor_si512(hi0, c3), _mm512_set1_epi32(int(key1)));
            c3 = lo0;
            key0 += kWeyl0;
            key1 += kWeyl1;
        }
        alignas(64) uint32_t words[4][16];
        _mm512_store_si512(words[0], c0);
        _mm512_store_si512(words[1], c1);
        _mm512_store_si512(words[2], c2);
        _mm512_store_si512(words[3], c3);
        interleave(words, std::min<int64_t>(16, blocks - b), out + 4 * b);
    }
}

__attribute__((target("avx2"))) void philox_words_avx2(uint64_t seed, uint64_t first,
                                                       int64_t blocks, uint32_t* out) {
    const __m256i m0 = _mm256_set1_epi32(int(kMul0)), m1 = _mm256_set1_epi32(int(kMul1));
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i sign = _mm256_set1_epi32(int(0x80000000u));  // unsigned compare via signed
    for (int64_t b = 0; b < blocks; b += 8) {
        const uint64_t base = first + uint64_t(b);
        const __m256i base_lo = _mm256_set1_epi32(int(uint32_t(base)));
        const __m256i lo = _mm256_add_epi32(base_lo, lane);
        // lo < base_lo (unsigned) where the low word wrapped: -1 in those lanes.
        const __m256i wrapped =
            _mm256_cmpgt_epi32(_mm256_xor_si256(base_lo, sign), _mm256_xor_si256(lo, sign));
        __m256i c0 = lo;
        __m256i c1 = _mm256_sub_epi32(_mm256_set1_epi32(int(uint32_t(base >> 32))), wrapped);
        __m256i c2 = _mm256_setzero_si256(), c3 = _mm256_setzero_si256();
        uint32_t key0 = uint32_t(seed), key1 = uint32_t(seed >> 32);
        for (int round = 0; round < 10; ++round) {
            const __m256i hi0 = mulhi8(c0, m0), lo0 = _mm256_mullo_epi32(c0, m0);
            const __m256i hi1 = mulhi8(c2, m1), lo1 = _mm256_mullo_epi32(c2, m1);
            c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32(int(key0)));
            c1 = lo1;
            c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32(int(key1)));
            c3 = lo0;
            key0 += kWeyl0;
            key1 += kWeyl1;
        }
        alignas(64) uint32_t words[4][16];
        _mm256_store_si256(reinterpret_cast<__m256i*>(words[0]), c0);
        _mm256_store_si256(reinterpret_cast<__m256i*>(words[1]), c1);
        _mm256_store_si256(reinterpret_cast<__m256i*>(words[2]), c2);
        _mm256_store_si256(reinterpret_cast<__m256i*>(words[3]), c3);
        interleave(words, std::min<int64_t>(8, blocks - b), out + 4 * b);
    }
}

void philox_words_portable(uint64_t seed, uint64_t first, int64_t blocks, uint32_t* out) {
    for (int64_t b = 0; b < blocks; ++b) {
        const k::Philox4 words = k::philox_block(seed, first + uint64_t(b));
        std::copy(words.v, words.v + 4, out + 4 * b);
    }
}

void philox_words(uint64_t seed, uint64_t first, int64_t blocks, uint32_t* out) {
    using WordsFn = void (*)(uint64_t, uint64_t, int64_t, uint32_t*);
    static const WordsFn fn = cpu_features().avx512f ? philox_words_avx512
                              : cpu_features().avx2  ? philox_words_avx2
                                                     : philox_words_portable;
    fn(seed, first, blocks, out);
}

const uint32_t* counter_words(uint64_t seed, uint64_t first, int64_t n,
                              std::vector<uint32_t>& scratch) {
    if (n <= 0) return scratch.data();
    const uint64_t first_block = first >> 2, last_block = (first + uint64_t(n) - 1) >> 2;
    const int64_t blocks = int64_t(last_block - first_block + 1);
    if (scratch.size() < size_t(4 * blocks)) scratch.resize(size_t(4 * blocks));
    philox_words(seed, first_block, blocks, scratch.data());
    return scratch.data() + (first & 3);
}

}  // namespace mt::cpu
