// GFLOP/s of the bf16 GEMMs we could train --bf16 with, on the products of a GPT-2 124M step
// (1024 tokens): our AVX512-BF16 kernel (mt::cpu::gemm_bf16), oneDNN's bf16 GEMM and matmul
// primitive when oneDNN is installed, and the f32 OpenBLAS path the CPU backend uses today (the
// OpenMP threads each running single-threaded cblas_sgemm on a share of C). Best of --reps runs.
//   mt_bench_gemm_bf16 [--reps N]          (threads: OMP_NUM_THREADS)
#include <cblas.h>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/gemm_bf16.h"
#include "mt/dtype.h"

#ifdef MT_HAVE_DNNL
#include <dnnl.hpp>

// Exported by libdnnl 2.x but left out of its header: the row-major dnnl_sgemm with bf16 A, B.
extern "C" dnnl_status_t dnnl_gemm_bf16bf16f32(char transa, char transb, dnnl_dim_t m, dnnl_dim_t n,
                                               dnnl_dim_t k, float alpha, const uint16_t* a,
                                               dnnl_dim_t lda, const uint16_t* b, dnnl_dim_t ldb,
                                               float beta, float* c, dnnl_dim_t ldc);
#endif

namespace {

struct Shape {
    const char* what;
    bool trans_a, trans_b;
    int64_t m, n, k;
};

// The operands of one product, in bf16 and (for OpenBLAS) f32, and an f32 and a bf16 C.
struct Operands {
    std::vector<uint16_t> a, b, c_bf16;
    std::vector<float> af, bf, c;
    int64_t lda, ldb;

    explicit Operands(const Shape& s) {
        std::mt19937 rng(1);
        std::uniform_real_distribution<float> dist(-1, 1);
        auto fill = [&](std::vector<uint16_t>& x, std::vector<float>& xf, int64_t count) {
            x.resize(size_t(count));
            xf.resize(size_t(count));
            for (int64_t i = 0; i < count; ++i) {
                x[i] = mt::float_to_bfloat16(dist(rng));
                xf[i] = mt::bfloat16_to_float(x[i]);
            }
        };
        fill(a, af, s.m * s.k);
        fill(b, bf, s.k * s.n);
        c.assign(size_t(s.m * s.n), 0.0f);
        c_bf16.assign(size_t(s.m * s.n), 0);
        lda = s.trans_a ? s.m : s.k;
        ldb = s.trans_b ? s.k : s.n;
    }
};

// Best GFLOP/s of `reps` timed calls after one warm-up call.
double gflops(const Shape& s, int reps, const std::function<void()>& run) {
    run();
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        run();
        best = std::min(
            best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return 2.0 * double(s.m) * double(s.n) * double(s.k) / best * 1e-9;
}

// As the CPU backend: C split over the OpenMP threads (by rows when taller than wide), each
// calling single-threaded OpenBLAS.
void openblas_sgemm(const Shape& s, const Operands& o, float* c) {
    const bool split_rows = s.m > s.n;
    const int64_t extent = split_rows ? s.m : s.n;
#pragma omp parallel
    {
        const int64_t parts = omp_get_num_threads(), part = omp_get_thread_num();
        const int64_t step = (extent / parts + 15) / 16 * 16;
        const int64_t first = std::min(extent, part * step);
        const int64_t last = part + 1 == parts ? extent : std::min(extent, first + step);
        if (first < last) {
            const float* a = o.af.data();
            const float* b = o.bf.data();
            float* cp = c;
            int64_t rows = s.m, cols = s.n;
            if (split_rows) {
                a += s.trans_a ? first : first * o.lda;
                cp += first * s.n;
                rows = last - first;
            } else {
                b += s.trans_b ? first * o.ldb : first;
                cp += first;
                cols = last - first;
            }
            cblas_sgemm(CblasRowMajor, s.trans_a ? CblasTrans : CblasNoTrans,
                        s.trans_b ? CblasTrans : CblasNoTrans, int(rows), int(cols), int(s.k), 1.0f,
                        a, int(o.lda), b, int(o.ldb), 0.0f, cp, int(s.n));
        }
    }
}

#ifdef MT_HAVE_DNNL
// oneDNN's matmul primitive on the same row-major operands (transposes as strides), created
// once outside the timing as a framework would cache it.
double dnnl_matmul_gflops(const Shape& s, Operands& o, int reps, std::string& impl) {
    using dnnl::memory;
    static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    static dnnl::stream stream(engine);
    const memory::desc a_md({s.m, s.k}, memory::data_type::bf16,
                            s.trans_a ? memory::dims{1, o.lda} : memory::dims{o.lda, 1});
    const memory::desc b_md({s.k, s.n}, memory::data_type::bf16,
                            s.trans_b ? memory::dims{1, o.ldb} : memory::dims{o.ldb, 1});
    const memory::desc c_md({s.m, s.n}, memory::data_type::f32, memory::dims{s.n, 1});
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), engine);
    impl = pd.impl_info_str();
    const dnnl::matmul matmul(pd);
    memory a(a_md, engine, o.a.data()), b(b_md, engine, o.b.data()), c(c_md, engine, o.c.data());
    return gflops(s, reps, [&] {
        matmul.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
        stream.wait();
    });
}
#endif

}  // namespace

int main(int argc, char** argv) {
    int reps = 5;
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(1, std::atoi(argv[++i]));
    }
    openblas_set_num_threads(1);  // the OpenMP threads split the work, as in the backend
    const int64_t tokens = 1024;  // batch 4 x sequence 256
    // (in, out) of GPT-2 124M's linear layers: QKV, attention projection, MLP up, MLP down, the
    // output layer (vocabulary padded to 50304). Forward y = x W^T (NT), backward dx = dy W (NN)
    // and dW = dy^T x (TN).
    const int64_t layers[][2] = {{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}, {768, 50304}};
    std::vector<Shape> shapes;
    for (const auto& l : layers) {
        shapes.push_back({"fwd  NT", false, true, tokens, l[1], l[0]});
        shapes.push_back({"dx   NN", false, false, tokens, l[0], l[1]});
        shapes.push_back({"dW   TN", true, false, l[1], l[0], tokens});
    }
    std::printf("threads %d, best of %d; GFLOP/s\n", omp_get_max_threads(), reps);
#ifdef MT_HAVE_DNNL
    std::printf("%-8s %6s %6s %6s | %9s %9s | %9s %9s | %9s\n", "product", "m", "n", "k",
                "ours f32C", "ours bf16C", "dnnl gemm", "dnnl mm", "f32 BLAS");
#else
    std::printf("oneDNN not found: skipped\n");
    std::printf("%-8s %6s %6s %6s | %9s %9s | %9s\n", "product", "m", "n", "k", "ours f32C",
                "ours bf16C", "f32 BLAS");
#endif
    for (const Shape& s : shapes) {
        Operands o(s);
        const double ours = gflops(s, reps, [&] {
            mt::cpu::gemm_bf16(s.trans_a, s.trans_b, s.m, s.n, s.k, 1.0f, o.a.data(), o.lda,
                               o.b.data(), o.ldb, 0.0f, o.c.data(), s.n, false);
        });
        const double ours_bf16 = gflops(s, reps, [&] {
            mt::cpu::gemm_bf16(s.trans_a, s.trans_b, s.m, s.n, s.k, 1.0f, o.a.data(), o.lda,
                               o.b.data(), o.ldb, 0.0f, o.c_bf16.data(), s.n, true);
        });
        const double blas = gflops(s, reps, [&] { openblas_sgemm(s, o, o.c.data()); });
        std::printf("%-8s %6ld %6ld %6ld | %9.1f %9.1f", s.what, long(s.m), long(s.n), long(s.k),
                    ours, ours_bf16);
#ifdef MT_HAVE_DNNL
        const double dnnl_gemm = gflops(s, reps, [&] {
            dnnl_gemm_bf16bf16f32(s.trans_a ? 'T' : 'N', s.trans_b ? 'T' : 'N', s.m, s.n, s.k, 1.0f,
                                  o.a.data(), o.lda, o.b.data(), o.ldb, 0.0f, o.c.data(), s.n);
        });
        std::string impl;
        const double dnnl_mm = dnnl_matmul_gflops(s, o, reps, impl);
        std::printf(" | %9.1f %9.1f | %9.1f   (matmul: %s)\n", dnnl_gemm, dnnl_mm, blas,
                    impl.c_str());
#else
        std::printf(" | %9.1f\n", blas);
#endif
    }
    return 0;
}
