#include "mt/data/torch_randperm.h"

#include <array>
#include <limits>
#include <numeric>
#include <random>
#include <utility>

#include "mt/error.h"

namespace mt::data {

namespace {

// The draws do not depend on the permutation, so the element each step will touch is known
// kAhead steps early and fetched into the cache meanwhile: a large shuffle is bound by memory
// latency otherwise.
constexpr int64_t kAhead = 32;

// Runs step(i, z) for i = 0 .. steps-1 with z = position(i, draw(engine)), prefetching
// perm[z] kAhead steps before.
template <class Draw, class Position, class Step>
void shuffle_steps(int64_t steps, std::mt19937& engine, std::vector<int64_t>& perm, Draw draw,
                   Position position, Step step) {
    std::array<int64_t, kAhead> ahead{};
    const int64_t primed = std::min(steps, kAhead);
    for (int64_t i = 0; i < primed; ++i) {
        ahead[size_t(i)] = position(i, draw(engine));
        __builtin_prefetch(&perm[size_t(ahead[size_t(i)])], 1);
    }
    for (int64_t i = 0; i < steps; ++i) {
        const size_t slot = size_t(i % kAhead);
        const int64_t z = ahead[slot];
        if (i + kAhead < steps) {
            ahead[slot] = position(i + kAhead, draw(engine));
            __builtin_prefetch(&perm[size_t(ahead[slot])], 1);
        }
        step(i, z);
    }
}

}  // namespace

std::vector<int64_t> torch_randperm(int64_t n, uint64_t seed) {
    MT_CHECK(n >= 0, "torch_randperm: n must be non-negative, got ", n);
    // at::mt19937 seeds the standard MT19937 state from the seed's low 32 bits, as
    // std::mt19937 does.
    std::mt19937 engine(static_cast<uint32_t>(seed));
    std::vector<int64_t> perm(static_cast<size_t>(n));
    if (n < int64_t(std::numeric_limits<uint32_t>::max() / 20)) {
        // CPUGeneratorImpl::random(): one 32-bit draw.
        std::iota(perm.begin(), perm.end(), int64_t(0));
        shuffle_steps(
            std::max<int64_t>(n - 1, 0), engine, perm,
            [](std::mt19937& e) { return uint64_t(e()); },
            [n](int64_t i, uint64_t draw) { return i + int64_t(draw % uint64_t(n - i)); },
            [&perm](int64_t i, int64_t z) { std::swap(perm[size_t(i)], perm[size_t(z)]); });
        return perm;
    }
    // CPUGeneratorImpl::random64(): two 32-bit draws, the first the high half.
    shuffle_steps(
        n, engine, perm,
        [](std::mt19937& e) {
            const uint64_t high = e();
            return (high << 32) | uint64_t(e());
        },
        [](int64_t i, uint64_t draw) { return int64_t(draw % uint64_t(i + 1)); },
        [&perm](int64_t i, int64_t z) {
            perm[size_t(i)] = perm[size_t(z)];
            perm[size_t(z)] = i;
        });
    return perm;
}

}  // namespace mt::data
