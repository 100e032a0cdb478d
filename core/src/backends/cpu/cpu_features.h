// The instruction sets the CPU kernels may use: what this CPU (and, for AMX, the kernel) allows,
// less what the environment variable MT_CPU_ISA withholds. MT_CPU_ISA=avx2 runs the paths of
// AVX2-only machines (older EPYCs: no AVX-512, no bf16 dot products) on an AVX-512 one,
// MT_CPU_ISA=avx512 those of AVX-512 machines without AMX (Zen 4) on one with it,
// MT_CPU_ISA=avx512f those of AVX-512 machines without bf16 dot products (Skylake-X, Ice Lake),
// and MT_CPU_ISA=portable the builds without vector instructions, so every path is tested anywhere
// that has its instructions; pair avx2 with OPENBLAS_CORETYPE=Haswell for
// OpenBLAS's own kernels.
#pragma once

#include "mt/api.h"

namespace mt::cpu {

struct CpuFeatures {
    bool avx512f = false;     // the AVX-512 skinny GEMM, the selective scan's AVX-512 build
    bool avx2 = false;        // the selective scan's AVX2 build
    bool avx512bf16 = false;  // the bf16 dot-product GEMM (else bf16 is widened to f32)
    bool amx_bf16 = false;    // the bf16 GEMM on AMX tiles (Sapphire Rapids and later)
};

// Exported for the tests, which run each kernel the machine has.
MT_API const CpuFeatures& cpu_features();

}  // namespace mt::cpu
