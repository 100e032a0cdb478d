// Two JSON texts compared as values: the same keys, array lengths, strings, integers and
// booleans exactly, and floating-point numbers within a relative tolerance. For answers whose
// numbers may legitimately differ in the last bits (tensor-parallel ranks summing in another
// order, another CPU's kernels) while everything else must be the same.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace mt::test {

// |got - want| <= tolerance * max(1, |want|) for each floating-point number.
::testing::AssertionResult json_near(const std::string& got, const std::string& want,
                                     double tolerance);

}  // namespace mt::test
