// numpy's random_interval (numpy/random/src/distributions/distributions.c, legacy path) and the
// RandomState methods built on it (mtrand.pyx randint / choice).
#include "mt/data/numpy_random.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "mt/error.h"

namespace mt::data {

uint64_t NumpyRandomState::random_interval(uint64_t max) {
    if (max == 0) return 0;
    uint64_t mask = max;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    mask |= mask >> 32;
    uint64_t value = 0;
    if (max <= 0xffffffffULL) {
        while ((value = (next_uint32() & mask)) > max) {
        }
    } else {
        while ((value = (next_uint64() & mask)) > max) {
        }
    }
    return value;
}

int64_t NumpyRandomState::randint(int64_t low, int64_t high) {
    MT_CHECK(low < high, "RandomState.randint: low >= high (", low, " >= ", high, ")");
    // The legacy bounded generator draws next_uint32 while the range fits in 32 bits, else
    // next_uint64, masking and rejecting exactly as random_interval does.
    uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low) - 1;
    return static_cast<int64_t>(static_cast<uint64_t>(low) + random_interval(range));
}

int64_t NumpyRandomState::binomial(int64_t n, double p) {
    MT_CHECK(n >= 0 && p >= 0.0 && p <= 1.0, "RandomState.binomial: n ", n, " and p ", p,
             " out of range");
    // (Legacy numpy draws even for n = 0 or p = 0.)
    // random_binomial_inversion: X with P(X) by the recurrence of the pmf from (1 - p)^n, one
    // uniform draw (again after X passes the bound).
    auto inversion = [&](double pp) {
        MT_CHECK(pp * double(n) <= 30.0,
                 "not supported yet: RandomState.binomial beyond the inversion range (n ", n,
                 ", p ", p, ")");
        const double q = 1.0 - pp, qn = std::exp(double(n) * std::log(q)), np = double(n) * pp;
        const int64_t bound =
            static_cast<int64_t>(std::min(double(n), np + 10.0 * std::sqrt(np * q + 1)));
        int64_t x = 0;
        double px = qn, u = random_sample();
        while (u > px) {
            ++x;
            if (x > bound) {
                x = 0;
                px = qn;
                u = random_sample();
            } else {
                u -= px;
                px = (double(n - x + 1) * pp * px) / (double(x) * q);
            }
        }
        return x;
    };
    return p <= 0.5 ? inversion(p) : n - inversion(1.0 - p);
}

int64_t NumpyRandomState::choice(std::span<const double> p) {
    MT_CHECK(!p.empty(), "RandomState.choice: empty probabilities");
    // numpy's cumsum adds left to right; the cdf is then scaled so its last entry is 1.
    std::vector<double> cdf(p.size());
    double running = 0.0;
    for (size_t i = 0; i < p.size(); ++i) {
        MT_CHECK(p[i] >= 0.0, "RandomState.choice: probability ", i, " is negative (", p[i], ")");
        running = i == 0 ? p[0] : running + p[i];
        cdf[i] = running;
    }
    // numpy checks a Kahan sum against 1 with tolerance sqrt(float64 eps).
    double sum = p[0], carry = 0.0;
    for (size_t i = 1; i < p.size(); ++i) {
        double y = p[i] - carry, t = sum + y;
        carry = (t - sum) - y;
        sum = t;
    }
    MT_CHECK(std::fabs(sum - 1.0) <= 1.4901161193847656e-08,
             "RandomState.choice: probabilities do not sum to 1 (", sum, ")");
    const double last = cdf.back();
    for (double& c : cdf) c /= last;
    const double u = random_sample();
    // searchsorted(side='right'): the number of cdf entries <= u.
    int64_t index = 0;
    while (index < static_cast<int64_t>(cdf.size()) && cdf[index] <= u) ++index;
    return index;
}

int64_t NumpyRandomState::geometric(double p) {
    MT_CHECK(p > 0.0 && p < 1.0 / 3.0, "RandomState.geometric(", p,
             "): only p in (0, 1/3) (numpy's inversion method) is implemented");
    return static_cast<int64_t>(std::ceil(std::log1p(-random_sample()) / std::log(1.0 - p)));
}

}  // namespace mt::data
