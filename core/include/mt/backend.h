// Backend: one compute device. Owns allocation and copies, and runs the closed set of ops the
// layers, the optimizer and the trainer use: layers built with a backend allocate and compute
// only through it, so the same model code runs on every device. The CPU backend lives in core
// (OpenBLAS + OpenMP, core/src/backends/cpu); the CUDA one is the plugin backends/cuda.
//
// An op a backend does not implement throws mt::Error naming the op and the backend: there is
// no silent fallback to another device. Outputs are preallocated by the caller (contiguous,
// on this device) unless an op says otherwise; dtypes are the inputs' (f32, and f64 on the CPU
// for finite-difference checks) unless an op says otherwise.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "mt/api.h"
#include "mt/op_types.h"
#include "mt/tensor.h"

namespace mt {

enum class Transpose : uint8_t { no, yes };

class MT_API Backend {
  public:
    virtual ~Backend() = default;
    virtual std::string_view name() const = 0;
    virtual Device device() const = 0;

    // ---- Memory ----------------------------------------------------------------------------
    // Uninitialised storage of `bytes` on this backend's device.
    virtual std::shared_ptr<Storage> allocate(int64_t bytes) = 0;
    // Copy between equal shapes and dtypes, any strides, between any two devices this backend
    // can reach (host <-> its device).
    virtual void copy(const Tensor& src, Tensor& dst) = 0;
    // Waits until all queued work on the device is done.
    virtual void synchronize() = 0;
    // x = value everywhere.
    virtual void fill(Tensor& x, double value);
    // dst = src converted to dst's dtype (equal shapes; floats narrow with round to nearest,
    // ties to even, as torch does).
    virtual void cast(const Tensor& src, Tensor& dst);

    // A new tensor on this device: uninitialised / zero (by default allocate + fill).
    Tensor empty(const Shape& shape, DType dtype);
    virtual Tensor zeros(const Shape& shape, DType dtype);
    // `x` as a contiguous tensor on this device: x itself when it already is one, else a copy
    // (from the host or another layout).
    Tensor contiguous(const Tensor& x);
    // `x` in `dtype` on this device: x itself when it already is, else a cast copy.
    Tensor cast_to(const Tensor& x, DType dtype);

    // ---- Matrix products -------------------------------------------------------------------
    // C = alpha * op(A) @ op(B) + beta * C for 2-D row-major tensors of one dtype (leading
    // strides may exceed the row length). op = transpose when the flag says so.
    virtual void gemm(Transpose ta, Transpose tb, float alpha, const Tensor& a, const Tensor& b,
                      float beta, Tensor& c) = 0;
    // Batched over the leading dimension of 3-D tensors: C[i] = alpha op(A[i]) op(B[i]) + beta
    // C[i].
    virtual void gemm_batched(Transpose ta, Transpose tb, float alpha, const Tensor& a,
                              const Tensor& b, float beta, Tensor& c) = 0;
    // Row groups, each with its own weight: for group j, its rows[j] rows of x (M, K) (the
    // groups in order, Σ rows = M) times weights[j] (N, K) transposed give the same rows of y
    // (M, N): a MoE layer's experts, each on its tokens. The default is a gemm per group; a
    // backend may run them as one.
    virtual void grouped_gemm_nt(const Tensor& x, const std::vector<int64_t>& rows,
                                 const std::vector<Tensor>& weights, Tensor& y);

    // ---- Elementwise (x, y any equal shapes; y may alias an input of its shape) -------------
    // y = op(x).
    virtual void unary_forward(ops::UnaryOp op, const Tensor& x, Tensor& y);
    // dx = op'(x) * dy (x is the forward's input).
    virtual void unary_backward(ops::UnaryOp op, const Tensor& x, const Tensor& dy, Tensor& dx);
    // A gated linear unit as Megatron splits it (SwiGLU, quick GeGLU; ops::GluConfig): x (..., 2F)
    // = [gate | linear] along the last dim, y (..., F). Backward writes dx (..., 2F) =
    // [d_gate | d_linear] from x and dy (..., F).
    virtual void glu_forward(const ops::GluConfig& glu, const Tensor& x, Tensor& y);
    virtual void glu_backward(const ops::GluConfig& glu, const Tensor& x, const Tensor& dy,
                              Tensor& dx);
    // y = a + b.
    virtual void add(const Tensor& a, const Tensor& b, Tensor& y);
    // y = alpha * x.
    virtual void scale(const Tensor& x, float alpha, Tensor& y);
    // y += alpha * x (gradient accumulation).
    virtual void axpy(float alpha, const Tensor& x, Tensor& y);
    // y (..., C) += bias (C) on every row.
    virtual void add_bias(const Tensor& bias, Tensor& y);
    // dbias (C) += sum over the rows of dy (..., C).
    virtual void add_column_sums(const Tensor& dy, Tensor& dbias);
    // y (N, C) = x (N, C) with row i times s[i]; s (N) in x's dtype, f32 for a half x (the
    // product rounds once to x's dtype, as torch's half x · f32 probs then .to(half)). y may
    // alias x. (Megatron-core's MoE experts weigh each token's activation by its routing prob.)
    virtual void scale_rows(const Tensor& x, const Tensor& s, Tensor& y);
    // out (N) = Σ_c a[i, c]·b[i, c] for (N, C) a and b, in out's dtype (x's, f32 for halves):
    // the gradient of scale_rows' s.
    virtual void row_dots(const Tensor& a, const Tensor& b, Tensor& out);

    // ---- Reductions to the host (in double, the same result for any thread count) -----------
    // Σ a·b over equal shapes (a·a: the squared L2 norm).
    virtual double dot(const Tensor& a, const Tensor& b);
    // Σ x.
    virtual double sum(const Tensor& x);
    // The number of elements equal to zero.
    virtual int64_t count_zeros(const Tensor& x);
    // max |x| (0 for an empty tensor; NaN when x holds a NaN).
    virtual double abs_max(const Tensor& x);

    // ---- FP8 emulation (Transformer Engine's recipes computed in f32) -----------------------
    // y (f32, x's shape) = fp8(x * scale) * (1 / scale): x quantized to `type` as TE casts it
    // (the product in f32, rounded to nearest even, saturated at the type's largest finite
    // value; NaN stays NaN) and read back with TE's scale_inv, the operand an FP8 GEMM sees.
    virtual void fp8_quantize(const Tensor& x, float scale, ops::Fp8Type type, Tensor& y);
    // The same per block of x (R, C) (ops::Fp8Blocks), each block quantized with its own scale:
    // e8m0 (MXFP8BlockScaling): x * 2^(127 - e), e = float_to_e8m0(amax * (1 / fp8 max)) (the
    // f32 exponent, rounded up when the mantissa is not 0), read back times 2^(e - 127);
    // power_of_two (Float8BlockScaling): scale = fp8 max / amax rounded down to a power of two
    // (1 for amax 0; the input dtype's max where the quotient overflows), read back times its
    // reciprocal.
    virtual void fp8_quantize_blocks(const Tensor& x, const ops::Fp8Blocks& blocks, Tensor& y);

    // ---- Norms over the last dimension (Megatron's definitions, mt/kernels/norms.h) ---------
    // Parameter grads accumulate (+=), dx is overwritten.
    // x (..., C); weight, bias (C); y like x; mean, rstd (...) = x's leading dims.
    //   y = (x - mean) * rstd * gamma + bias,  rstd = 1 / sqrt(var + eps)
    virtual void layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                    const ops::NormConfig& config, Tensor& y, Tensor& mean,
                                    Tensor& rstd);
    virtual void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                     const Tensor& mean, const Tensor& rstd,
                                     const ops::NormConfig& config, Tensor& dx, Tensor& dweight,
                                     Tensor& dbias);
    // x (..., C); weight (C); y like x; rstd (...) = 1 / sqrt(mean(x^2) + eps). y = x rstd gamma.
    virtual void rms_norm_forward(const Tensor& x, const Tensor& weight,
                                  const ops::NormConfig& config, Tensor& y, Tensor& rstd);
    virtual void rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                   const Tensor& rstd, const ops::NormConfig& config, Tensor& dx,
                                   Tensor& dweight);

    // ---- Softmax over the last dimension, scale applied first ---------------------------------
    // x, y: (..., T, S) for a causal mask, (..., S) otherwise. y = softmax(scale * x).
    virtual void softmax_forward(const Tensor& x, float scale, ops::SoftmaxMask mask, Tensor& y);
    // y (the forward's output), dy, dx: equal shapes. dx = scale * y * (dy - sum(y * dy)).
    virtual void softmax_backward(const Tensor& y, const Tensor& dy, float scale, Tensor& dx);

    // ---- Cross-entropy per row (no reduction: the caller applies the loss mask) -------------
    // logits (N, V) or (B, T, V); targets (N) or (B, T), i64 or i32, each in [0, V). Writes
    // losses = lse - logits[target] and lse = log sum exp(logits), shaped like targets, of the
    // logits' dtype.
    virtual void cross_entropy_forward(const Tensor& logits, const Tensor& targets, Tensor& losses,
                                       Tensor& lse);
    // dlogits (like logits) = dlosses[row] * (softmax(logits) - onehot(target)).
    virtual void cross_entropy_backward(const Tensor& logits, const Tensor& targets,
                                        const Tensor& lse, const Tensor& dlosses, Tensor& dlogits);
    // Vocab-parallel pieces (Megatron's vocab_parallel_cross_entropy): logits (N, V) hold the
    // vocabulary columns [vocab_start, vocab_start + V) of each row; targets are whole-vocabulary
    // ids. Writes this piece's row log-sum-exp and target_logit = the target's logit when it
    // falls in the piece, else 0.
    virtual void cross_entropy_shard_forward(const Tensor& logits, const Tensor& targets,
                                             int64_t vocab_start, Tensor& lse,
                                             Tensor& target_logit);
    // dlogits of the piece = dlosses[row] * (exp(logits - lse) - onehot(target in this piece)),
    // lse the whole row's (merged) log-sum-exp.
    virtual void cross_entropy_shard_backward(const Tensor& logits, const Tensor& targets,
                                              int64_t vocab_start, const Tensor& lse,
                                              const Tensor& dlosses, Tensor& dlogits);

    // ---- Embedding ---------------------------------------------------------------------------
    // table (V, H); ids (...) i64 or i32 in [0, V); y (..., H) = table[ids].
    virtual void embedding_forward(const Tensor& table, const Tensor& ids, Tensor& y);
    // dtable (V, H) += the rows of dy (..., H) at ids.
    virtual void embedding_backward(const Tensor& dy, const Tensor& ids, Tensor& dtable);
    // A vocab-parallel piece (Megatron's VocabParallelEmbedding): table (V, H) holds the rows of
    // ids [vocab_start, vocab_start + V); other ids give zero rows and no gradient.
    virtual void embedding_shard_forward(const Tensor& table, const Tensor& ids,
                                         int64_t vocab_start, Tensor& y);
    virtual void embedding_shard_backward(const Tensor& dy, const Tensor& ids, int64_t vocab_start,
                                          Tensor& dtable);

    // ---- Rotary position embeddings (Megatron's RotaryEmbedding) -----------------------------
    // Tables for positions [0, seq_len). f32 follows Megatron's float32 arithmetic (inv_freq,
    // the position and the angle rounded to float before cos/sin); f64 is exact.
    virtual ops::RopeTables rope_tables(int64_t seq_len, const ops::RopeConfig& config,
                                        DType dtype);
    // x, y (B, T, heads, D), R = 2 * cos.size(1) <= D; per head and pair i, with x1 = x[i],
    // x2 = x[i + R/2] (x1 = x[2i], x2 = x[2i + 1] when tables.interleaved):
    // y1 = x1 c - x2 s, y2 = x2 c + x1 s, and y[R:] = x[R:]. y may alias x.
    virtual void rope_forward(const Tensor& x, const ops::RopeTables& tables, Tensor& y);
    // The transpose (rotation by -angle); dx may alias dy.
    virtual void rope_backward(const Tensor& dy, const ops::RopeTables& tables, Tensor& dx);

    // ---- Dropout from the counter-based Philox stream (mt/kernels/rng.h) ---------------------
    // y = x * keep / (1 - p), keep ~ Bernoulli(1 - p), element i from counter offset + i: no
    // mask is stored, a backward or a recompute draws the same one.
    virtual void dropout_forward(const Tensor& x, float p, uint64_t seed, uint64_t offset,
                                 Tensor& y);
    virtual void dropout_backward(const Tensor& dy, float p, uint64_t seed, uint64_t offset,
                                  Tensor& dx);
    // y = x * U(low, high), element i's factor from counter offset + i (mt/kernels/rng.h
    // UniformScale): the MoE router's input jitter, whose backward is the same call on dy.
    virtual void uniform_scale(const Tensor& x, float low, float high, uint64_t seed,
                               uint64_t offset, Tensor& y);

    // ---- Attention (online softmax, no T x T matrix stored) ----------------------------------
    // q (B, Tq, nq, hd); k, v (B, Tk, ng, hd), nq a multiple of ng (query head h reads group
    // h / (nq / ng)); Tk != Tq (cross-attention) only without the causal and per-document
    // masks. out (B, Tq, nq, hd) = dropout(softmax(scale q k^T)) v, lse (B, nq, Tq) =
    // log sum_s exp(scale q.k) over the visible keys.
    virtual void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v,
                                   const ops::AttentionConfig& config, Tensor& out, Tensor& lse);
    // dq (like q), dk and dv (like k and v; group gradients sum over their query heads).
    virtual void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& out, const Tensor& lse, const Tensor& dout,
                                    const ops::AttentionConfig& config, Tensor& dq, Tensor& dk,
                                    Tensor& dv);
    // Context parallelism: folds a partial (out_part, lse_part), shaped like (out, lse) and
    // computed over other keys, into out and lse for query rows [row_begin, row_end)
    // (mt/kernels/attention_merge.h); the other rows are left alone.
    virtual void attention_merge(Tensor& out, Tensor& lse, const Tensor& out_part,
                                 const Tensor& lse_part, int64_t row_begin, int64_t row_end);
    // Inference over a key/value cache (no dropout, causal): q (B, Tq, nq, hd) holds positions
    // past .. past+Tq-1; k_cache, v_cache (B, C, ng, hd) hold position s at slot s % C, C >=
    // past + Tq (C >= window + Tq with a window: a ring). Query t sees keys s <= past + t, and
    // s >= past + t - window unless window is -1 (AttentionConfig::window).
    // bias: undefined, or (nq, Tq, past + Tq) added to the scaled scores as
    // AttentionConfig::bias is; sink: undefined, or (nq) as AttentionConfig::sink.
    virtual void attention_cached(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                                  int64_t past, int64_t window, double scale, const Tensor& bias,
                                  const Tensor& sink, Tensor& out);

    // ---- Mamba-2 (Megatron's MambaMixer; f32, and f64 for finite-difference checks) ---------
    // Depthwise causal convolution: x (B, T + K - 1, C) holds the K - 1 positions before the
    // first output (zeros in training, the previous inputs in decoding); weight (C, K); bias (C)
    // or undefined; y (B, T, C) = bias[c] + Σ_k weight[c, k] x[b, t + k, c] (torch's Conv1d with
    // groups = C and padding K - 1, its first T outputs).
    virtual void depthwise_conv1d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                          Tensor& y);
    // dx like x (overwritten); dweight, dbias (undefined without a bias) +=.
    virtual void depthwise_conv1d_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                           Tensor& dx, Tensor& dweight, Tensor& dbias);
    // The selective scan of Mamba-2 (SSD), per row, head h and its group g = h / (nh / ng):
    //   dt_t = softplus(dt[t, h] + dt_bias[h]),  a = -exp(A_log[h])
    //   S_t = exp(dt_t a) S_{t-1} + dt_t x[t, h] B[t, g]^T        (S: hp x N)
    //   y[t, h] = S_t C[t, g] + D[h] x[t, h]
    // x, y (B, T, nh, hp); dt (B, T, nh); B, C (B, T, ng, N); dt_bias, A_log, D (nh). state
    // (B, nh, hp, N), of x's dtype: S_0 on entry, S_T on return; undefined: S_0 = 0, not kept.
    virtual void ssm_scan_forward(const Tensor& x, const Tensor& dt, const Tensor& dt_bias,
                                  const Tensor& A_log, const Tensor& B, const Tensor& C,
                                  const Tensor& D, Tensor& y, Tensor& state);
    // The scan's backward from S_0 = 0: dx, ddt, dB, dC like their inputs (overwritten);
    // ddt_bias, dA_log, dD +=.
    virtual void ssm_scan_backward(const Tensor& x, const Tensor& dt, const Tensor& dt_bias,
                                   const Tensor& A_log, const Tensor& B, const Tensor& C,
                                   const Tensor& D, const Tensor& dy, Tensor& dx, Tensor& ddt,
                                   Tensor& dB, Tensor& dC, Tensor& ddt_bias, Tensor& dA_log,
                                   Tensor& dD);
    // Mamba-2's gated group RMSNorm (norm_before_gate = False): with g = x * silu(z),
    // y = g rstd weight, rstd = 1 / sqrt(mean over the group (g^2) + eps), per row and group of
    // `group_size` consecutive channels. x, z, y (..., C); weight (C); rstd (..., C/group_size).
    virtual void gated_rms_norm_forward(const Tensor& x, const Tensor& z, const Tensor& weight,
                                        int64_t group_size, double eps, Tensor& y, Tensor& rstd);
    // dx, dz (overwritten); dweight +=.
    virtual void gated_rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& z,
                                         const Tensor& weight, const Tensor& rstd,
                                         int64_t group_size, Tensor& dx, Tensor& dz,
                                         Tensor& dweight);

    // ---- Optimizer steps (f32, in place; `step` counts from 1) -------------------------------
    // torch.optim.AdamW / Megatron's fused Adam (mt/kernels/adam.h).
    virtual void adamw_step(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                            const ops::AdamWConfig& config, int64_t step);
    // adamw_step on f32 main parameters, then `model_param` (bf16 or f16, their shape) = them
    // rounded: Megatron's mixed-precision step. The default runs the two ops; a backend may round
    // each piece while it is in cache.
    virtual void adamw_step_rounded(Tensor& main_param, const Tensor& grad, Tensor& exp_avg,
                                    Tensor& exp_avg_sq, const ops::AdamWConfig& config,
                                    int64_t step, Tensor& model_param);
    // torch.optim.SGD with momentum buffer `momentum_buffer`.
    virtual void sgd_step(Tensor& param, const Tensor& grad, Tensor& momentum_buffer,
                          const ops::SgdConfig& config, int64_t step);

  protected:
    // Throws "the <name> backend does not implement <op>".
    [[noreturn]] void unsupported(const char* op) const;
};

// The CPU backend (OpenBLAS + OpenMP), always available.
MT_API std::unique_ptr<Backend> make_cpu_backend();

}  // namespace mt
