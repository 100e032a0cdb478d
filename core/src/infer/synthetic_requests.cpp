#include "mt/infer/synthetic_requests.h"

#include <algorithm>

#include "mt/error.h"

namespace mt::infer {

std::vector<double> poisson_arrivals(data::PythonRandom& random, double rate, double until) {
    std::vector<double> times;
    double now = 0;
    for (;;) {
        now = now + random.expovariate(rate);
        if (!(now < until)) return times;
        times.push_back(now);
    }
}

std::vector<SyntheticRequest> synthetic_requests(const SyntheticRequestFlags& f) {
    MT_CHECK(f.min_prompt <= f.max_prompt, "--num-tokens-to-prompt ", f.min_prompt, " ",
             f.max_prompt, ": the second must not be below the first (random.randint)");
    data::PythonRandom random(f.seed);
    std::vector<double> offsets;
    if (!f.core_v0_19) {
        MT_CHECK(f.per_sec > 0, "--incoming-requests-per-sec ", f.per_sec,
                 ": core_v0.13's synthetic requests need a rate above 0 (random.expovariate)");
        offsets = poisson_arrivals(random, f.per_sec, f.duration);
        if (offsets.empty()) offsets = {0.0};
    } else {
        MT_CHECK(f.per_sec > 0 && f.duration > 0,
                 "not supported yet: core_v0.19's synthetic requests with "
                 "--incoming-requests-per-sec ", f.per_sec, " and --incoming-requests-duration ",
                 f.duration, " (all added at once, their prompt lengths drawn from Python's "
                 "generator as Megatron's initialization leaves it)");
        const auto count = int64_t(f.per_sec * f.duration);
        offsets = poisson_arrivals(random, f.per_sec, double(count) / f.per_sec * 2);
        if (offsets.empty()) offsets = {0.0};
        const double first = offsets[0];
        for (double& t : offsets) t -= first;
        MT_CHECK(int64_t(offsets.size()) >= count, "Megatron's synthetic requests: ",
                 offsets.size(), " arrivals in twice the time of ", count,
                 " requests (its assertion fails too)");
        offsets.resize(size_t(count));
    }
    std::vector<SyntheticRequest> out;
    for (const double t : offsets) out.push_back({t, 0});
    for (SyntheticRequest& r : out) r.prompt_length = random.randint(f.min_prompt, f.max_prompt);
    return out;
}

std::vector<std::string> synthetic_prompt_texts(const std::vector<SyntheticRequest>& requests,
                                                const SyntheticRequestFlags& f,
                                                const Tokenizer& tokenizer) {
    auto hi = [](int64_t n) {
        std::string text;
        for (int64_t i = 0; i < n; ++i) text += "hi ";
        return text;
    };
    std::vector<std::string> texts;
    if (!f.core_v0_19) {
        for (const SyntheticRequest& r : requests) texts.push_back(hi(r.prompt_length));
        return texts;
    }
    const std::vector<int32_t> longest = tokenizer.encode(hi(f.max_prompt));
    for (const SyntheticRequest& r : requests) {
        const size_t n = std::min(size_t(std::max<int64_t>(r.prompt_length, 0)), longest.size());
        texts.push_back(tokenizer.decode(std::span<const int32_t>(longest.data(), n)));
    }
    return texts;
}

}  // namespace mt::infer
