#include "cpu_features.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "mt/error.h"

namespace mt::cpu {

namespace {

// CPUID leaf 7: AMX-BF16 (EDX bit 22) and AMX-TILE (bit 24); read directly, as GCC 12 and
// clang 14 do not agree on __builtin_cpu_supports names for them.
bool cpu_has_amx_bf16() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
    return (edx >> 22 & 1) && (edx >> 24 & 1);
}

// Linux hands a process AMX's 8 KiB tile state only when asked (arch_prctl ARCH_REQ_XCOMP_PERM
// for XFEATURE_XTILEDATA, kernel 5.16 and later); without it the first tile instruction faults.
bool amx_permitted() {
    constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
}

}  // namespace

const CpuFeatures& cpu_features() {
    static const CpuFeatures features = [] {
        CpuFeatures f;
        f.avx512f = __builtin_cpu_supports("avx512f");
        f.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
        const char* isa = std::getenv("MT_CPU_ISA");
        const std::string_view limit = isa ? isa : "";
        MT_CHECK(limit.empty() || limit == "native" || limit == "portable" || limit == "avx2" ||
                     limit == "avx512f" || limit == "avx512",
                 "MT_CPU_ISA=", limit.substr(0, 40),
                 ": expected portable, avx2, avx512f, avx512 or native");
        if (limit == "avx2" || limit == "portable") f.avx512f = f.avx512bf16 = false;
        if (limit == "avx512f") f.avx512bf16 = false;
        if (limit == "portable") f.avx2 = false;
        f.amx_bf16 = limit.empty() || limit == "native"
                         ? f.avx512bf16 && cpu_has_amx_bf16() && amx_permitted()
                         : false;
        return f;
    }();
    return features;
}

}  // namespace mt::cpu
