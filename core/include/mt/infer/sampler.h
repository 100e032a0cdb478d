// Choosing the next token from a row of logits exactly as Megatron's sampling.sample does:
// greedy (top_k = 1), top-k (ties kept), top-p (the token crossing the threshold kept), and
// temperature, drawn from a seeded counter-based stream so a seed replays the same text.
#pragma once

#include <cstdint>
#include <span>

#include "mt/api.h"

namespace mt::infer {

struct SamplingParams {
    int64_t top_k = 0;         // 1: greedy; > 1: keep the k largest logits (and ties)
    double top_p = 0.0;        // > 0: nucleus; top_k and top_p are mutually exclusive
    double temperature = 1.0;  // divides the logits (not for greedy)
};

// Uniform doubles in [0, 1) from Philox-4x32-10 keyed by the seed: reproducible per seed.
class MT_API SamplingRng {
  public:
    explicit SamplingRng(uint64_t seed = 0) : seed_(seed) {}
    void reseed(uint64_t seed) {
        seed_ = seed;
        counter_ = 0;
    }
    double uniform();

  private:
    uint64_t seed_, counter_ = 0;
};

// mt::Error when the parameters break Megatron's rules: top_k and top_p both set, top_k = 1
// with top_p, top_p outside [0, 1], temperature <= 0, top_k >= vocab_size.
MT_API void check_sampling(const SamplingParams& params, int64_t vocab_size);

// The sampled id, clamped to [0, vocab_size) (the padded vocabulary's extra ids never come
// out). logits is one row over the padded vocabulary; `rng` is used unless greedy.
MT_API int64_t sample_token(std::span<const float> logits, const SamplingParams& params,
                            int64_t vocab_size, SamplingRng& rng);

}  // namespace mt::infer
