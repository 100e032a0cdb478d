// The synthetic requests of Megatron's dynamic-inference example (gpt_dynamic_inference.py
// without --prompts or --prompt-file: --num-tokens-to-prompt MIN MAX,
// --incoming-requests-per-sec, --incoming-requests-duration): arrivals of a Poisson process
// simulated with simpy and prompts of random lengths, all drawn from Python's random seeded with
// --seed, as each Megatron version draws them.
//   core_v0.13 (examples/inference/gpt/utils.py get_auto_requests): one request per arrival
//     before the duration (at least one), then each prompt "hi " x randint(MIN, MAX).
//   core_v0.19 (examples/inference/utils.py get_synthetic_requests): int(rate x duration)
//     requests, the arrivals simulated over twice that time and shifted to start at 0, then
//     each prompt the text of the first randint(MIN, MAX) tokens of "hi " x MAX.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/data/python_random.h"
#include "mt/tokenizer.h"

namespace mt::infer {

struct SyntheticRequestFlags {
    int64_t min_prompt = 64, max_prompt = 1024;  // --num-tokens-to-prompt
    double per_sec = 100.0, duration = 10.0;    // --incoming-requests-per-sec / -duration
    uint64_t seed = 1234;                       // --seed
    bool core_v0_19 = false;                    // whose get_*_requests
};

struct SyntheticRequest {
    double time_offset = 0;  // seconds after the first request (core_v0.13: after the start)
    int64_t prompt_length = 0;
};

// simpy's Environment.run(until) over a process that waits random.expovariate(rate) and records
// the time, forever: the times before `until` (an arrival at `until` exactly is not processed,
// as the URGENT stop event comes first). Draws one more than it returns.
MT_API std::vector<double> poisson_arrivals(data::PythonRandom& random, double rate,
                                            double until);

// The requests Megatron makes; an mt::Error for settings it fails on or that are not supported
// yet (core_v0.19 with a rate <= 0, whose prompt lengths come from Python's generator as
// Megatron's initialization left it).
MT_API std::vector<SyntheticRequest> synthetic_requests(const SyntheticRequestFlags& flags);

// Each request's prompt text with `tokenizer` (core_v0.13: "hi " repeated; core_v0.19: the
// detokenized first tokens of "hi " x max_prompt).
MT_API std::vector<std::string> synthetic_prompt_texts(const std::vector<SyntheticRequest>& requests,
                                                       const SyntheticRequestFlags& flags,
                                                       const Tokenizer& tokenizer);

}  // namespace mt::infer
