// The builds of a run-time-dispatched CPU kernel (portable, AVX2, AVX-512) that this machine can
// run, by name, for the tests that hold each build to the reference: what cpu_features() allows
// (MT_CPU_ISA=avx2 withholds the AVX-512 ones).
#pragma once

#include <string>
#include <vector>

#include "backends/cpu/cpu_features.h"

namespace mt::test {

template <class Fn>
struct CpuBuild {
    std::string name;
    Fn fn;
};

template <class Fn>
std::vector<CpuBuild<Fn>> cpu_builds(Fn portable, Fn avx2, Fn avx512) {
    std::vector<CpuBuild<Fn>> out = {{"portable", portable}};
    if (mt::cpu::cpu_features().avx2) out.push_back({"avx2", avx2});
    if (mt::cpu::cpu_features().avx512f) out.push_back({"avx512", avx512});
    return out;
}

}  // namespace mt::test
