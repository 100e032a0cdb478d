// numpy's random_interval (numpy/random/src/distributions/distributions.c, legacy path).
#include "mt/data/numpy_random.h"

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

}  // namespace mt::data
