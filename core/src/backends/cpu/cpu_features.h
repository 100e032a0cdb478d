// The instruction sets the CPU kernels may use: what this CPU has, less what the environment
// variable MT_CPU_ISA withholds. MT_CPU_ISA=avx2 runs the paths of AVX2-only machines (older
// EPYCs: no AVX-512, no bf16 dot products) on an AVX-512 one, so both are tested anywhere;
// pair it with OPENBLAS_CORETYPE=Haswell for OpenBLAS's own kernels.
#pragma once

namespace mt::cpu {

struct CpuFeatures {
    bool avx512f = false;     // the AVX-512 skinny GEMM, the selective scan's AVX-512 build
    bool avx2 = false;        // the selective scan's AVX2 build
    bool avx512bf16 = false;  // the bf16 dot-product GEMM (else bf16 is widened to f32)
};

const CpuFeatures& cpu_features();

}  // namespace mt::cpu
