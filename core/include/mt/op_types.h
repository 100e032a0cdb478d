// The vocabulary of the ops a Backend runs: which activation, the norm, attention and optimizer
// settings, the softmax mask and the RoPE tables. Plain descriptions, no device code: the layers
// fill them in, each backend reads them (mt/backend.h).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "mt/api.h"
#include "mt/tensor.h"

namespace mt::ops {

enum class UnaryOp : uint8_t {
    gelu,          // tanh approximation (Megatron bias_gelu, --openai-gelu)
    gelu_erf,      // exact erf GELU (F.gelu)
    silu,          //
    quick_gelu,    // x sigmoid(1.702 x) (Megatron's quick_gelu, --quick-geglu's gate)
    relu,          //
    squared_relu,  // --squared-relu
    tanh,          // BERT's pooler
    exp,           // e^x
    log,           // natural log
};
MT_API const char* unary_op_name(UnaryOp op);

// A gated linear unit on fc1's output (..., 2F) = [gate | linear] halves, as megatron-core's
// glu computes it:  y = act(min(gate, clamp)) * (clamp(linear, -clamp, clamp) + linear_offset).
struct GluConfig {
    UnaryOp gate = UnaryOp::silu;  // silu (--swiglu), quick_gelu (--quick-geglu), gelu (--geglu)
    float linear_offset = 0.0f;    // --glu-linear-offset
    // --activation-func-clamp-value; infinity: none. The gradient passes where the clamp
    // did not bind (torch's clamp: bounds included).
    float clamp = std::numeric_limits<float>::infinity();
};

// The 8-bit floats of FP8 training (Transformer Engine's): E4M3 (largest finite 448, no
// infinities: torch.float8_e4m3fn) and E5M2 (largest finite 57344).
enum class Fp8Type : uint8_t { e4m3, e5m2 };
MT_API const char* fp8_type_name(Fp8Type type);
// The type's largest finite value.
MT_API float fp8_max(Fp8Type type);

// Blocks of a 2-D tensor quantized each with its own scale (Backend::fp8_quantize_blocks): `rows`
// x `cols` elements (1 x n: along a row; n x 1: down a column), each scale made from the
// block's amax as Transformer Engine's recipe does: MXFP8's E8M0 exponent (blocks of 32, whole
// ones only) or the blockwise recipe's max / amax rounded down to a power of two (blocks of 128,
// those at the edges partial).
struct Fp8Blocks {
    enum class Scale : uint8_t { e8m0, power_of_two };
    Fp8Type type = Fp8Type::e4m3;
    int64_t rows = 1, cols = 32;
    Scale scale = Scale::e8m0;
};

struct NormConfig {
    float eps = 1e-5f;                 // --layernorm-epsilon, inside the square root
    bool zero_centered_gamma = false;  // --apply-layernorm-1p: the applied scale is weight + 1
};

enum class SoftmaxMask : uint8_t {
    none,
    // Query t (second-last dim, size T) sees keys s <= t + (S - T) (last dim, size S >= T):
    // the upper triangle for T == S, bottom-right aligned when keys include a cached prefix.
    // Masked entries get probability 0.
    causal,
};

struct AttentionConfig {
    double scale = 1.0;  // applied to q.k before the softmax (Megatron: 1 / sqrt(head dim))
    bool causal = true;  // query t sees keys s <= t
    // A causal sliding window (Megatron's --window-size (window, 0)): query t sees keys
    // s >= t - window too; -1: no such limit.
    int64_t window = -1;
    int64_t block = 64;    // query rows and keys per block of the online softmax
    float dropout = 0.0f;  // drop probability of each attention probability
    uint64_t seed = 0;     // dropout stream; element (b, h, t, s) uses counter
    uint64_t offset = 0;   //   offset + ((b * nq + h) * Tq + t) * Tk + s
    // Optional (B, T) i32 on the backend's device: query t of row b sees only keys
    // >= document_start[b, t] (Megatron's --reset-attention-mask: no attention across an EOD).
    // Undefined: no such limit.
    Tensor document_start;
    // Optional (B) i32 on the backend's device: keys s >= key_length[b] of row b are padding no
    // query sees (BERT's padding mask). A query that sees no key gets a zero output.
    Tensor key_length;
    // Optional (nq, Tq, Tk) contiguous on the backend's device, f64 for f64 q and f32 otherwise:
    // added to the scaled scores of every batch row (Transformer Engine's post_scale_bias: T5's
    // relative position buckets).
    Tensor bias;
    // Optional, shaped as bias: attention_backward adds the scores' gradient, summed over the
    // batch, into it (the bias's gradient; the config is shared with the forward, which ignores
    // it).
    Tensor bias_grad;
    // Optional (nq) contiguous on the backend's device, f64 for f64 q and f32 otherwise: each
    // query head's attention sink (Megatron's --softmax-type: off-by-one's 0, learnable's
    // softmax_offset), a logit every row's softmax counts and no value belongs to.
    Tensor sink;
    // Optional, shaped as sink: attention_backward adds the sink's gradient, summed over the
    // batch and the queries, into it.
    Tensor sink_grad;
};

// The dropout counters one attention call over q (B, Tq, nq, hd) and keys (B, Tk, ...) consumes
// (B * nq * Tq * Tk; self-attention: Tk = Tq): the caller advances its offset by this much.
MT_API uint64_t attention_dropout_counters(const Tensor& q, int64_t keys);
inline uint64_t attention_dropout_counters(const Tensor& q) {
    return attention_dropout_counters(q, q.dim() > 1 ? q.size(1) : 0);
}

// Megatron's defaults (--lr has none; --adam-beta1/2, --adam-eps, --weight-decay).
struct AdamWConfig {
    double lr = 0.0;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weight_decay = 0.01;
    // Each gradient is read as float(grad) * float(grad_scale): gradient clipping's factor, the
    // very product clipping would have stored.
    double grad_scale = 1.0;
};

// torch.optim.SGD (coupled weight decay): d = g + wd·p; buf = d on the first step, else
// momentum·buf + d; p -= lr·buf.
struct SgdConfig {
    double lr = 0.0;
    double momentum = 0.9;
    double weight_decay = 0.0;
    double grad_scale = 1.0;  // as AdamWConfig's
};

// Megatron's RotaryEmbedding: inv_freq[i] = 1 / base^(2i / R) for rotary dim R (even),
// optionally rescaled as Llama 3.x does (--use-rope-scaling), positions optionally divided by
// --rotary-seq-len-interpolation-factor; pairs are halves (x[i], x[i + R/2]) or, interleaved,
// neighbours (x[2i], x[2i + 1]).
struct RopeConfig {
    int64_t rotary_dim = 0;
    double base = 10000.0;
    double llama3_scaling_factor = 0;  // --rope-scaling-factor with --use-rope-scaling; 0: off
    double seq_len_interpolation_factor = 0;  // 0: off
    bool interleaved = false;                 // --rotary-interleaved
    // YaRN (megatron-core's YarnRotaryEmbedding: multi-latent attention's rope, and GPT's with
    // --position-embedding-type yarn), 0: off: each inv_freq[i] blends base^(-2i/R) with
    // base^(-2i/R) / factor along a ramp between the correction dims of yarn_beta_fast and
    // yarn_beta_slow rotations in yarn_original_max_positions.
    double yarn_scaling_factor = 0;
    int64_t yarn_original_max_positions = 4096;
    double yarn_beta_fast = 32, yarn_beta_slow = 1;
    // The correction dims floored and ceiled (Megatron's correction_range_round_to_int, HF's
    // truncate), or kept fractional.
    bool yarn_round_to_int = true;
    // cos and sin are multiplied by this (YaRN's yarn_concentration).
    double table_scale = 1.0;
};

// megatron-core's _yarn_get_mscale: 0.1 mscale ln(scale) + 1 (1 for scale <= 1).
MT_API double yarn_mscale(double scale, double mscale);
// Its _yarn_get_concentration_factor, RopeConfig::table_scale under YaRN: mscale(scale, mscale)
// over mscale(scale, mscale_all_dim).
MT_API double yarn_concentration(double scale, double mscale, double mscale_all_dim);

// Megatron's inv_freq of `config` (RotaryEmbedding.__init__, _apply_scaling), each value
// rounded to float after every step as torch's float32 arithmetic does when `f32`; exact
// otherwise.
MT_API std::vector<double> rope_inverse_frequencies(const RopeConfig& config, bool f32);

// The cos and sin of angle[t][i] = position(t) * inv_freq[i], each (T, R/2), for positions t
// in [0, T), on a backend's device; `interleaved` says which elements pair up.
struct RopeTables {
    Tensor cos;  // (T, R/2)
    Tensor sin;  // (T, R/2)
    bool interleaved = false;
};

}  // namespace mt::ops
