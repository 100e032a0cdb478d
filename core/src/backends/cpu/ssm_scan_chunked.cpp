// Mamba-2's selective scan in chunks of kQ positions on GEMMs (the SSD algorithm of the Mamba-2
// paper). Within a chunk, with cum_t = a Σ_{u<=t} dt_u (inclusive) and S_in the state before it:
//   y_t   = Σ_{s<=t} (C_t·B_s) exp(cum_t - cum_s) dt_s x_s  +  exp(cum_t) S_in C_t  +  D x_t
//   S_out = exp(cum_last) S_in  +  Σ_s exp(cum_last - cum_s) dt_s x_s B_s^T
// so a chunk is a masked (q x q) product, two (q x hp x N) products and a state update, instead
// of q rank-1 updates of the hp x N state. C B^T is a group's, shared by its heads: computed once
// per (row, group, chunk). A task is a block of kHeadBlock heads of a group: the products with the
// state (and the gradients of the group's B and C, which sum heads) are then one GEMM for the
// block, kHeadBlock times as wide; one head's alone ran at a third of the GEMM speed. The backward
// recomputes the states at chunk starts and runs the chunks in reverse, the state's gradient
// flowing back between them; the blocks' parts of dB and dC, and the parameter grads, are summed
// in a fixed order afterwards, so the result does not depend on the thread count. One OpenBLAS
// thread per OpenMP task (blas_calls.h).
#include <omp.h>

#include <algorithm>
#include <vector>

#include "blas_calls.h"
#include "mt/kernels/activations.h"
#include "mt/tensor.h"
#include "ssm_scan.h"

namespace mt::cpu::ssm {

namespace {

// Chunk length: the masked q x q products' waste (their upper half) against the state products'
// sizes; megatron-core's kernels use 128 on GPUs.
constexpr int64_t kQ = 64;
// Heads per task: wider state GEMMs against fewer tasks (a Mamba-2 130M layer's 24 heads make 6).
constexpr int64_t kHeadBlock = 4;

int64_t chunk_count(const ScanShape& s) {
    return (s.T + kQ - 1) / kQ;
}

// An uninitialised buffer of n T's in Tensor storage, which recycles large blocks: fresh pages
// on every call would cost a page fault each (the buffers here are megabytes per layer).
template <class T>
Tensor scratch(int64_t n) {
    return Tensor::empty({n}, dtype_of<T>());
}

int64_t blocks_per_group(const ScanShape& s) {
    return (s.nh / s.ng + kHeadBlock - 1) / kHeadBlock;
}

// Heads [h0, h0 + nb) of group g in row b; k: the block's index in its group.
struct Block {
    int64_t b, g, k, h0, nb;
};

Block block_at(const ScanShape& s, int64_t i) {
    const int64_t per_group = s.nh / s.ng, bpg = blocks_per_group(s);
    const int64_t k = i % bpg, g = i / bpg % s.ng, b = i / bpg / s.ng;
    const int64_t h0 = g * per_group + k * kHeadBlock;
    return {b, g, k, h0, std::min(kHeadBlock, (g + 1) * per_group - h0)};
}

// Where a block's chunk starts in each tensor, and its length.
struct ChunkAt {
    int64_t t0, q;
    int64_t x, bc, dt;  // offsets in (B,T,nh,hp), (B,T,ng,N), (B,T,nh)
};

ChunkAt chunk_at(const ScanShape& s, int64_t b, int64_t g, int64_t h0, int64_t c) {
    const int64_t t0 = c * kQ, row = b * s.T + t0;
    return {t0, std::min(kQ, s.T - t0), (row * s.nh + h0) * s.hp, (row * s.ng + g) * s.N,
            row * s.nh + h0};
}

// G = C B^T of each (row, group, chunk): q x q at leading dimension kQ (the rest of a partial
// chunk's kQ x kQ unset).
template <class T>
Tensor chunk_products(const ScanShape& s, const T* B, const T* C) {
    const int64_t chunks = chunk_count(s), ld = s.ng * s.N;
    Tensor G = scratch<T>(s.B * s.ng * chunks * kQ * kQ);
    T* g = G.data<T>();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < s.B * s.ng * chunks; ++i) {
        const ChunkAt at = chunk_at(s, i / chunks / s.ng, i / chunks % s.ng, 0, i % chunks);
        blas_gemm(false, true, at.q, at.q, s.N, T(1), C + at.bc, ld, B + at.bc, ld, T(0),
                  g + i * kQ * kQ, kQ);
    }
    return G;
}

// One head's decays over a chunk: dt after softplus, its prefix sums, cum, e = exp(cum), to_end =
// exp(cum_last - cum), w = to_end dt, and (with the mask) L = exp(cum_t - cum_s) for t >= s, 0
// above: row t is row t - 1 times position t's decay exp(a dt_t) (the products the recurrence
// forms; one exp per row instead of one per element).
template <class T>
struct Decays {
    std::vector<T> delta, psum, cum, e, to_end, w, L;
    Decays() : delta(kQ), psum(kQ), cum(kQ), e(kQ), to_end(kQ), w(kQ), L(kQ * kQ) {}

    void compute(const T* dt, int64_t stride, int64_t q, T bias, T a, bool mask) {
        T acc = 0;
        for (int64_t t = 0; t < q; ++t) {
            delta[t] = softplus(dt[t * stride] + bias);
            acc += delta[t];
            psum[t] = acc;
            cum[t] = a * acc;
            e[t] = std::exp(cum[t]);
        }
        for (int64_t t = 0; t < q; ++t) {
            to_end[t] = std::exp(cum[q - 1] - cum[t]);
            w[t] = to_end[t] * delta[t];
        }
        if (!mask) return;
        for (int64_t t = 0; t < q; ++t) {
            T* row = L.data() + t * kQ;
            if (t > 0) {
                const T* above = row - kQ;
                const T decay = std::exp(a * delta[t]);
                for (int64_t u = 0; u < t; ++u) row[u] = above[u] * decay;
            }
            row[t] = 1;
            std::fill(row + t + 1, row + q, T(0));
        }
    }
};

// One task's buffers: its heads' decays, a head's mixing M = G ∘ L ∘ dt_s (and dM), and the
// block-wide q x (nb hp) products (leading dimension nb hp).
template <class T>
struct Work {
    std::vector<Decays<T>> dec;
    std::vector<T> M, dM, Z, Xw, dXw;
    explicit Work(const ScanShape& s)
        : dec(kHeadBlock),
          M(kQ * kQ),
          dM(kQ * kQ),
          Z(size_t(kQ * kHeadBlock * s.hp)),
          Xw(Z.size()),
          dXw(Z.size()) {}

    void decays(const ScanShape& s, const ScanInputs<T>& in, const Block& blk, const ChunkAt& at,
                bool mask) {
        for (int64_t j = 0; j < blk.nb; ++j) {
            const int64_t h = blk.h0 + j;
            dec[j].compute(in.dt + at.dt + j, s.nh, at.q, in.dt_bias[h], -std::exp(in.A_log[h]),
                           mask);
        }
    }

    void mixing(const T* G, const Decays<T>& d, int64_t q) {
        for (int64_t t = 0; t < q; ++t)
            for (int64_t u = 0; u < q; ++u)
                M[t * kQ + u] = G[t * kQ + u] * d.L[t * kQ + u] * d.delta[u];
    }

    // Xw = the block's inputs as they reach the state at the chunk's end: head j's scaled by w.
    void weighted_inputs(const T* x, int64_t ldx, int64_t q, int64_t nb, int64_t hp) {
        const int64_t W = nb * hp;
        for (int64_t t = 0; t < q; ++t)
            for (int64_t j = 0; j < nb; ++j)
                for (int64_t p = 0; p < hp; ++p)
                    Xw[t * W + j * hp + p] = dec[j].w[t] * x[t * ldx + j * hp + p];
    }
};

// S = exp(cum_last) S + Xw^T B for each head of the block (S: nb hp x N; weighted_inputs first).
template <class T>
void advance_state(const ScanShape& s, const Work<T>& wk, const T* B, int64_t q, int64_t nb, T* S) {
    const int64_t HN = s.hp * s.N;
    for (int64_t j = 0; j < nb; ++j) {
        const T decay = wk.dec[j].e[q - 1];
        for (int64_t i = 0; i < HN; ++i) S[j * HN + i] *= decay;
    }
    blas_gemm(true, false, nb * s.hp, s.N, q, T(1), wk.Xw.data(), nb * s.hp, B, s.ng * s.N, T(1), S,
              s.N);
}

template <class T>
void forward_block(const ScanShape& s, const ScanInputs<T>& in, const T* G, const Block& blk, T* y,
                   T* S, bool from_zero, bool keep_state, Work<T>& wk) {
    const int64_t chunks = chunk_count(s), ldx = s.nh * s.hp, ldbc = s.ng * s.N;
    const int64_t W = blk.nb * s.hp;
    for (int64_t c = 0; c < chunks; ++c) {
        const ChunkAt at = chunk_at(s, blk.b, blk.g, blk.h0, c);
        const int64_t q = at.q;
        const T *x = in.x + at.x, *Bc = in.B + at.bc, *Cc = in.C + at.bc;
        T* yc = y + at.x;
        wk.decays(s, in, blk, at, true);
        for (int64_t j = 0; j < blk.nb; ++j) {
            wk.mixing(G + ((blk.b * s.ng + blk.g) * chunks + c) * kQ * kQ, wk.dec[j], q);
            blas_gemm(false, false, q, s.hp, q, T(1), wk.M.data(), kQ, x + j * s.hp, ldx, T(0),
                      yc + j * s.hp, ldx);
        }
        if (!from_zero)
            blas_gemm(false, true, q, W, s.N, T(1), Cc, ldbc, S, s.N, T(0), wk.Z.data(), W);
        for (int64_t t = 0; t < q; ++t)
            for (int64_t j = 0; j < blk.nb; ++j) {
                const T d = in.D[blk.h0 + j], e = wk.dec[j].e[t];
                T* yt = yc + t * ldx + j * s.hp;
                const T* xt = x + t * ldx + j * s.hp;
                const T* zt = wk.Z.data() + t * W + j * s.hp;
                for (int64_t p = 0; p < s.hp; ++p)
                    yt[p] += d * xt[p] + (from_zero ? T(0) : e * zt[p]);
            }
        if (c + 1 == chunks && !keep_state) break;
        if (from_zero) std::fill(S, S + W * s.N, T(0));
        wk.weighted_inputs(x, ldx, q, blk.nb, s.hp);
        advance_state(s, wk, Bc, q, blk.nb, S);
        from_zero = false;
    }
}

// The backward's buffers beyond Work: the block's states at chunk starts (this thread's share of
// a scratch tensor: chunks x kHeadBlock hp x N), dL/dS, and dL/dG of a chunk summed over the
// block's heads.
template <class T>
struct BackwardWork : Work<T> {
    T* starts;
    std::vector<T> dS, dG;
    BackwardWork(const ScanShape& s, T* starts)
        : Work<T>(s), starts(starts), dS(size_t(kHeadBlock * s.hp * s.N)), dG(kQ * kQ) {}
};

// Elements of one thread's share of the chunk-start states.
int64_t starts_size(const ScanShape& s) {
    return chunk_count(s) * kHeadBlock * s.hp * s.N;
}

// Where a block's part of dB and dC at (row, position t) lies in the (B, T, ng, blocks per
// group, N) buffers.
int64_t part_at(const ScanShape& s, const Block& blk, int64_t t) {
    return (((blk.b * s.T + t) * s.ng + blk.g) * blocks_per_group(s) + blk.k) * s.N;
}

// The backward of one block: dx and ddt into the grads, its part of dB and dC into part_dB and
// part_dC, and each head's dt_bias, A_log and D grads into params[3 j .. 3 j + 2].
template <class T>
void backward_block(const ScanShape& s, const ScanInputs<T>& in, const T* dy,
                    const ScanGrads<T>& grads, const T* G, const Block& blk, T* part_dB, T* part_dC,
                    double* params, BackwardWork<T>& wk) {
    const int64_t chunks = chunk_count(s), ldx = s.nh * s.hp, ldbc = s.ng * s.N;
    const int64_t HN = s.hp * s.N, W = blk.nb * s.hp, WN = W * s.N, nb = blk.nb;
    const int64_t ldp = s.ng * blocks_per_group(s) * s.N;
    // The block's state at each chunk's start.
    std::fill(wk.starts, wk.starts + WN, T(0));
    for (int64_t c = 0; c + 1 < chunks; ++c) {
        const ChunkAt at = chunk_at(s, blk.b, blk.g, blk.h0, c);
        T* next = wk.starts + (c + 1) * WN;
        std::copy(next - WN, next, next);
        wk.decays(s, in, blk, at, false);
        wk.weighted_inputs(in.x + at.x, ldx, at.q, nb, s.hp);
        advance_state(s, wk, in.B + at.bc, at.q, nb, next);
    }
    T* dS = wk.dS.data();
    std::fill(dS, dS + WN, T(0));
    double g_bias[kHeadBlock] = {}, g_a[kHeadBlock] = {}, g_d[kHeadBlock] = {};
    std::vector<T> dcum(size_t(nb * kQ)), ddelta(dcum.size());
    for (int64_t c = chunks - 1; c >= 0; --c) {
        const ChunkAt at = chunk_at(s, blk.b, blk.g, blk.h0, c);
        const int64_t q = at.q;
        const T *x = in.x + at.x, *Bc = in.B + at.bc, *Cc = in.C + at.bc, *dyc = dy + at.x;
        const T* Gc = G + ((blk.b * s.ng + blk.g) * chunks + c) * kQ * kQ;
        T* dx = grads.dx + at.x;
        T *pdB = part_dB + part_at(s, blk, at.t0), *pdC = part_dC + part_at(s, blk, at.t0);
        wk.decays(s, in, blk, at, true);
        std::fill(dcum.begin(), dcum.end(), T(0));
        std::fill(ddelta.begin(), ddelta.end(), T(0));
        std::fill(wk.dG.begin(), wk.dG.end(), T(0));
        // Within the chunk, per head: dX = M^T dY + D dY, dM = dY X^T, and through M to G, cum
        // and dt.
        for (int64_t j = 0; j < nb; ++j) {
            const Decays<T>& d = wk.dec[j];
            const T *xj = x + j * s.hp, *dyj = dyc + j * s.hp;
            T* dxj = dx + j * s.hp;
            T *dcj = dcum.data() + j * kQ, *ddj = ddelta.data() + j * kQ;
            const T D = in.D[blk.h0 + j];
            wk.mixing(Gc, d, q);
            blas_gemm(true, false, q, s.hp, q, T(1), wk.M.data(), kQ, dyj, ldx, T(0), dxj, ldx);
            for (int64_t t = 0; t < q; ++t)
                for (int64_t p = 0; p < s.hp; ++p) {
                    dxj[t * ldx + p] += D * dyj[t * ldx + p];
                    g_d[j] += double(dyj[t * ldx + p]) * xj[t * ldx + p];
                }
            blas_gemm(false, true, q, q, s.hp, T(1), dyj, ldx, xj, ldx, T(0), wk.dM.data(), kQ);
            for (int64_t t = 0; t < q; ++t) {
                const T *dm = wk.dM.data() + t * kQ, *gt = Gc + t * kQ, *lt = d.L.data() + t * kQ;
                T* dg = wk.dG.data() + t * kQ;
                for (int64_t u = 0; u <= t; ++u) {
                    const T dml = dm[u] * lt[u], p = dml * gt[u] * d.delta[u];
                    dcj[t] += p;
                    dcj[u] -= p;
                    ddj[u] += dml * gt[u];
                    dg[u] += dml * d.delta[u];
                }
            }
        }
        // Through the states at the chunk's end: S_out = exp(cum_last) S_in + Xw^T B.
        wk.weighted_inputs(x, ldx, q, nb, s.hp);
        blas_gemm(false, true, q, W, s.N, T(1), Bc, ldbc, dS, s.N, T(0), wk.dXw.data(), W);
        for (int64_t j = 0; j < nb; ++j) {
            const Decays<T>& d = wk.dec[j];
            T *dcj = dcum.data() + j * kQ, *ddj = ddelta.data() + j * kQ;
            for (int64_t u = 0; u < q; ++u) {
                const T* dxw = wk.dXw.data() + u * W + j * s.hp;
                T* dxu = dx + u * ldx + j * s.hp;
                const T dw = dot(dxw, x + u * ldx + j * s.hp, s.hp);
                for (int64_t p = 0; p < s.hp; ++p) dxu[p] += d.w[u] * dxw[p];
                dcj[q - 1] += dw * d.w[u];
                dcj[u] -= dw * d.w[u];
                ddj[u] += dw * d.to_end[u];
            }
        }
        blas_gemm(false, false, q, s.N, W, T(1), wk.Xw.data(), W, dS, s.N, T(0), pdB, ldp);
        // Through S_in (zero in the first chunk): y_t's exp(cum_t) S_in C_t and S_out's share.
        if (c == 0) {
            for (int64_t t = 0; t < q; ++t) std::fill(pdC + t * ldp, pdC + t * ldp + s.N, T(0));
        } else {
            const T* S_in = wk.starts + c * WN;
            blas_gemm(false, true, q, W, s.N, T(1), Cc, ldbc, S_in, s.N, T(0), wk.Z.data(), W);
            T* eDY = wk.Xw.data();  // Xw is spent: e ∘ dY in its place
            for (int64_t t = 0; t < q; ++t)
                for (int64_t j = 0; j < nb; ++j) {
                    const T e = wk.dec[j].e[t];
                    const T* dyt = dyc + t * ldx + j * s.hp;
                    dcum[size_t(j * kQ + t)] += e * dot(dyt, wk.Z.data() + t * W + j * s.hp, s.hp);
                    for (int64_t p = 0; p < s.hp; ++p) eDY[t * W + j * s.hp + p] = e * dyt[p];
                }
            blas_gemm(false, false, q, s.N, W, T(1), eDY, W, S_in, s.N, T(0), pdC, ldp);
            for (int64_t j = 0; j < nb; ++j) {
                const T e_last = wk.dec[j].e[q - 1];
                dcum[size_t(j * kQ + q - 1)] += e_last * dot(dS + j * HN, S_in + j * HN, HN);
                for (int64_t i = 0; i < HN; ++i) dS[j * HN + i] *= e_last;
            }
            blas_gemm(true, false, W, s.N, q, T(1), eDY, W, Cc, ldbc, T(1), dS, s.N);
        }
        // G[t, u] = C_t · B_u
        blas_gemm(false, false, q, s.N, q, T(1), wk.dG.data(), kQ, Bc, ldbc, T(1), pdC, ldp);
        blas_gemm(true, false, q, s.N, q, T(1), wk.dG.data(), kQ, Cc, ldbc, T(1), pdB, ldp);
        // cum_t = a Σ_{u<=t} dt_u: to dt (suffix sums) and to a; then through softplus.
        for (int64_t j = 0; j < nb; ++j) {
            const int64_t h = blk.h0 + j;
            const Decays<T>& d = wk.dec[j];
            const T a = -std::exp(in.A_log[h]);
            T *dcj = dcum.data() + j * kQ, *ddj = ddelta.data() + j * kQ;
            T suffix = 0;
            for (int64_t t = q - 1; t >= 0; --t) {
                suffix += dcj[t];
                ddj[t] += a * suffix;
                g_a[j] += double(dcj[t]) * d.psum[t];
            }
            for (int64_t t = 0; t < q; ++t) {
                const T r = in.dt[at.dt + t * s.nh + j] + in.dt_bias[h];
                const T g_r = r > T(20) ? ddj[t] : ddj[t] * k::Silu::sigmoid(r);
                grads.ddt[at.dt + t * s.nh + j] = g_r;
                g_bias[j] += g_r;
            }
        }
    }
    for (int64_t j = 0; j < nb; ++j) {
        params[3 * j] = g_bias[j];
        params[3 * j + 1] = g_a[j] * -std::exp(double(in.A_log[blk.h0 + j]));  // a = -exp(A_log)
        params[3 * j + 2] = g_d[j];
    }
}

}  // namespace

template <class T>
void chunked_scan_forward(const ScanShape& s, const ScanInputs<T>& in, T* y, T* state) {
    const Tensor G = chunk_products(s, in.B, in.C);
    const int64_t tasks = s.B * s.ng * blocks_per_group(s);
#pragma omp parallel
    {
        Work<T> wk(s);
        std::vector<T> local(state ? 0 : size_t(kHeadBlock * s.hp * s.N));
#pragma omp for schedule(static)
        for (int64_t i = 0; i < tasks; ++i) {
            const Block blk = block_at(s, i);
            T* S = state ? state + (blk.b * s.nh + blk.h0) * s.hp * s.N : local.data();
            forward_block(s, in, G.data<T>(), blk, y, S, !state, state != nullptr, wk);
        }
    }
}

template <class T>
void chunked_scan_backward(const ScanShape& s, const ScanInputs<T>& in, const T* dy,
                           const ScanGrads<T>& grads) {
    const Tensor G = chunk_products(s, in.B, in.C);
    const int64_t bpg = blocks_per_group(s), tasks = s.B * s.ng * bpg;
    // Each block's part of dB and dC (B, T, ng, blocks per group, N; every element written), each
    // (row, head)'s parameter grads, and each thread's chunk-start states.
    const Tensor parts_dB = scratch<T>(s.B * s.T * s.ng * bpg * s.N),
                 parts_dC = scratch<T>(parts_dB.numel()),
                 starts = scratch<T>(omp_get_max_threads() * starts_size(s));
    T *part_dB = parts_dB.data<T>(), *part_dC = parts_dC.data<T>();
    std::vector<double> head_params(size_t(s.B * s.nh * 3));
#pragma omp parallel
    {
        BackwardWork<T> wk(s, starts.data<T>() + omp_get_thread_num() * starts_size(s));
#pragma omp for schedule(static)
        for (int64_t i = 0; i < tasks; ++i) {
            const Block blk = block_at(s, i);
            backward_block(s, in, dy, grads, G.data<T>(), blk, part_dB, part_dC,
                           head_params.data() + (blk.b * s.nh + blk.h0) * 3, wk);
        }
        // The blocks' parts summed in order.
#pragma omp for schedule(static)
        for (int64_t row = 0; row < s.B * s.T * s.ng; ++row) {
            T *ob = grads.dB + row * s.N, *oc = grads.dC + row * s.N;
            const T *pb = part_dB + row * bpg * s.N, *pc = part_dC + row * bpg * s.N;
            std::copy(pb, pb + s.N, ob);
            std::copy(pc, pc + s.N, oc);
            for (int64_t k = 1; k < bpg; ++k)
                for (int64_t n = 0; n < s.N; ++n) {
                    ob[n] += pb[k * s.N + n];
                    oc[n] += pc[k * s.N + n];
                }
        }
    }
    for (int64_t h = 0; h < s.nh; ++h) {
        double sb = 0, sa = 0, sd = 0;
        for (int64_t b = 0; b < s.B; ++b) {
            sb += head_params[size_t((b * s.nh + h) * 3)];
            sa += head_params[size_t((b * s.nh + h) * 3 + 1)];
            sd += head_params[size_t((b * s.nh + h) * 3 + 2)];
        }
        grads.ddt_bias[h] += T(sb);
        grads.dA_log[h] += T(sa);
        grads.dD[h] += T(sd);
    }
}

template void chunked_scan_forward(const ScanShape&, const ScanInputs<float>&, float*, float*);
template void chunked_scan_forward(const ScanShape&, const ScanInputs<double>&, double*, double*);
template void chunked_scan_backward(const ScanShape&, const ScanInputs<float>&, const float*,
                                    const ScanGrads<float>&);
template void chunked_scan_backward(const ScanShape&, const ScanInputs<double>&, const double*,
                                    const ScanGrads<double>&);

}  // namespace mt::cpu::ssm
