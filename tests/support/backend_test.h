// Op and layer tests parameterised by backend: each suite runs once per backend this build can
// use here (the CPU always; a plugin backend such as cuda where it loads and finds a device), so
// a backend that lacks an op fails that op's tests by name instead of passing unseen.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "mt/backend.h"

namespace mt::test {

// "cpu", then every other backend that can be created here.
std::vector<std::string> test_backends();
// The backend of that name, one per process.
Backend& test_backend(const std::string& name);

// A suite over the backends alone.
class BackendTest : public testing::TestWithParam<std::string> {
  protected:
    Backend& be() const { return test_backend(GetParam()); }
};

// A suite over the backends crossed with a second parameter (an op, a shape, a dtype).
template <class Extra>
class BackendTestWith : public testing::TestWithParam<std::tuple<std::string, Extra>> {
  protected:
    Backend& be() const { return test_backend(std::get<0>(this->GetParam())); }
    const Extra& param() const { return std::get<1>(this->GetParam()); }
};

// A test-name part from a parameter's PrintTo text (letters and digits only, as gtest wants).
template <class T>
std::string printed_name(const T& value) {
    std::ostringstream os;
    PrintTo(value, &os);
    std::string name;
    for (char ch : os.str())
        if (std::isalnum(static_cast<unsigned char>(ch))) name += ch;
    return name;
}

}  // namespace mt::test

#define MT_INSTANTIATE_BACKENDS(Suite)                                                      \
    INSTANTIATE_TEST_SUITE_P(Backends, Suite, testing::ValuesIn(mt::test::test_backends()), \
                             [](const auto& info) { return info.param; })

// `values` is a testing::Values(...) generator; `name` maps one Extra to a test-name part.
#define MT_INSTANTIATE_BACKENDS_WITH(Suite, values, name)                                        \
    INSTANTIATE_TEST_SUITE_P(                                                                    \
        Backends, Suite, testing::Combine(testing::ValuesIn(mt::test::test_backends()), values), \
        [](const auto& info) {                                                                   \
            return std::get<0>(info.param) + "_" + name(std::get<1>(info.param));                \
        })
