// Values both the C++ tests and the PyTorch fixture scripts compute from a formula of
// (name, index), so fixtures need not store weights or data: splitmix64(fnv1a64(name) +
// index · golden ratio), see tests/fixtures/gpt/make_model_fixtures.py.
#pragma once

#include <cstdint>
#include <string>

#include "mt/nn/parameter.h"

namespace mt::test {

uint64_t fnv1a64(const std::string& s);
// The index-th hash of a name's stream.
uint64_t formula_hash(uint64_t name_hash, uint64_t index);
// The fixtures' weight formula, exact in float32: matrices u/4, biases u/8, norm weights
// 1 + u/8, with u in [-1, 1) from the top 24 bits of the hash.
void fill_formula_weight(nn::Parameter& p);

}  // namespace mt::test
