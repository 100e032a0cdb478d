#include "cpu_features.h"

#include <cstdlib>
#include <string_view>

#include "mt/error.h"

namespace mt::cpu {

const CpuFeatures& cpu_features() {
    static const CpuFeatures features = [] {
        CpuFeatures f;
        f.avx512f = __builtin_cpu_supports("avx512f");
        f.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
        const char* isa = std::getenv("MT_CPU_ISA");
        const std::string_view limit = isa ? isa : "";
        MT_CHECK(limit.empty() || limit == "native" || limit == "avx2",
                 "MT_CPU_ISA=", limit.substr(0, 40), ": expected avx2 or native");
        if (limit == "avx2") f.avx512f = f.avx512bf16 = false;
        return f;
    }();
    return features;
}

}  // namespace mt::cpu
