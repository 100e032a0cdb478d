// Counter-based random numbers: Philox-4x32-10 (Salmon et al., SC'11) maps (counter, key) to
// four 32-bit words with no state, so a dropout mask is a pure function of (seed, offset + i)
// and recompute, CPU and GPU all draw the same mask.
#pragma once

#include <string.h>

#include <type_traits>

#include "mt/kernels/hd.h"

namespace mt::k {

struct Philox4 {
    uint32_t v[4];
};

// Philox-4x32 with 10 rounds on a 128-bit counter and a 64-bit key; checked against Random123's
// known-answer vectors.
MT_HD Philox4 philox4x32_10(Philox4 ctr, uint32_t key0, uint32_t key1) {
    constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
    constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;  // key schedule increments
    for (int round = 0; round < 10; ++round) {
        uint64_t p0 = uint64_t(kMul0) * ctr.v[0];
        uint64_t p1 = uint64_t(kMul1) * ctr.v[2];
        uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0);
        uint32_t hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
        ctr = Philox4{{hi1 ^ ctr.v[1] ^ key0, lo1, hi0 ^ ctr.v[3] ^ key1, lo0}};
        key0 += kWeyl0;
        key1 += kWeyl1;
    }
    return ctr;
}

// The four words of block `block` of stream `seed`: counter = (block lo, block hi, 0, 0),
// key = (seed lo, seed hi).
MT_HD Philox4 philox_block(uint64_t seed, uint64_t block) {
    return philox4x32_10(Philox4{{uint32_t(block), uint32_t(block >> 32), 0u, 0u}}, uint32_t(seed),
                         uint32_t(seed >> 32));
}

// A float in [0, 1) from the top 24 bits (every value exactly representable).
MT_HD float uniform_from_bits(uint32_t bits) {
    return float(bits >> 8) * (1.0f / 16777216.0f);
}

// Inverted dropout with drop probability p: element j keeps with probability 1 - p and is then
// scaled by 1 / (1 - p). Counter position j = offset + i uses word j % 4 of Philox block j / 4,
// so a traversal may draw one block per four elements; the caller advances offset by numel.
struct Dropout {
    float p;      // drop probability (Megatron's hidden_dropout / attention_dropout)
    float scale;  // 1 / (1 - p), 0 when p == 1
    uint64_t seed;
    uint64_t offset;

    MT_HD static Dropout make(float p, uint64_t seed, uint64_t offset) {
        return Dropout{p, p < 1.0f ? 1.0f / (1.0f - p) : 0.0f, seed, offset};
    }
    // u >= p keeps: p = 0 keeps everything, p = 1 nothing.
    MT_HD bool keep_bits(uint32_t bits) const { return uniform_from_bits(bits) >= p; }
    // The same test on the integers: u is (bits >> 8) / 2^24 exactly, so it keeps when
    // bits >> 8 >= ceil(p 2^24) (what vectorised loops compare, without float compares).
    MT_HD uint32_t keep_threshold() const { return uint32_t(::ceil(double(p) * 16777216.0)); }
    // x * scale where kept, else +0 (fwd's and bwd's value) by the integer keep test; for float
    // without a branch (the product's bits masked), so that loops of it vectorise.
    template <class T>
    MT_HD T masked(T x, uint32_t bits, uint32_t threshold) const {
        const bool kept = (bits >> 8) >= threshold;
        if constexpr (std::is_same_v<T, float>) {
            const float y = x * scale;
            uint32_t b;
            memcpy(&b, &y, 4);
            b &= kept ? 0xFFFFFFFFu : 0u;
            float out;
            memcpy(&out, &b, 4);
            return out;
        } else {
            return fwd(x, kept);
        }
    }
    MT_HD bool keep(uint64_t i) const {
        uint64_t j = offset + i;
        return keep_bits(philox_block(seed, j >> 2).v[j & 3]);
    }
    // Forward and backward are the same mask times the same scale.
    template <class T>
    MT_HD T fwd(T x, bool kept) const {
        return kept ? x * T(scale) : T(0);
    }
    template <class T>
    MT_HD T bwd(T dy, bool kept) const {
        return kept ? dy * T(scale) : T(0);
    }
};

// Multiplicative uniform noise (the MoE router's input jitter): element j is scaled by
// low + (high - low) · u, u the uniform of counter offset + j (as Megatron's
// Uniform(low, high).rsample draws its factors), forward and backward alike.
struct UniformScale {
    float low, high;

    MT_HD float factor_bits(uint32_t bits) const {
        return low + (high - low) * uniform_from_bits(bits);
    }
};

}  // namespace mt::k
