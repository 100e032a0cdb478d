// MambaMixer: Megatron-core's Mamba-2 mixer ("<prefix>.mixer"), a sublayer of a hybrid model:
//   z, xBC, dt = in_proj(x)                      (in_proj: H -> 2 di + 2 ng N + nh)
//   xBC = silu(conv1d(xBC))                      (depthwise, causal, width K, with bias)
//   x, B, C = xBC;  y = SSD scan(x, dt, A = -exp(A_log), B, C) + D x   (dt: softplus(dt + dt_bias))
//   out = out_proj(gated_group_rms_norm(y, z))   (norm(y silu(z)), groups of di / ng channels)
// Parameters in Megatron-core's order: in_proj.weight (its norm fused in with Transformer
// Engine's names: in_proj.layer_norm_weight), conv1d.weight (C, 1, K), conv1d.bias, dt_bias,
// A_log, D, norm.weight, out_proj.weight; A_log, D and dt_bias without weight decay.
// Over a tensor-parallel group each rank holds whole heads and groups (Megatron's layout):
// in_proj and conv1d keep the rank's slice of each of their parts (mt::ShardSpec::part_sizes),
// A_log, D, dt_bias and the norm the rank's heads, out_proj is row-parallel; the sizes below are
// the rank's.
// Inference keeps the last K - 1 convolution inputs and the SSM state per row: constant memory
// in the sequence length. Under context parallelism each rank gathers in_proj's output along the
// whole sequence for the convolution and the scan and keeps its own positions for out_proj. A bf16
// / fp16 mixer computes between in_proj and out_proj in f32.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/nn/layer_spec.h"
#include "mt/nn/linear.h"
#include "mt/nn/parameter.h"
#include "mt/nn/transformer_config.h"

namespace mt::nn {

// The mixer's inference state: conv (B, K - 1, C) the last inputs of the convolution, ssm
// (B, nh, hp, N) the scan's state.
struct MambaState final : SublayerState {
    Tensor conv, ssm;
    int64_t bytes() const override { return held_bytes(conv) + held_bytes(ssm); }
};

class MT_API MambaMixer {
  public:
    struct Saved {
        Linear::Saved in_proj;
        Tensor z;            // (B, T, di)
        Tensor conv_in;      // (B, T + K - 1, C): xBC after K - 1 zeros
        Tensor conv_out;     // (B, T, C) before the SiLU
        Tensor x, dt, B, C;  // the scan's inputs
        Tensor y;            // (B, T, nh, hp) the scan's output
        Tensor rstd;         // the gated norm's
        Linear::Saved out_proj;
    };

    // prefix: the layer's ("decoder.layers.3"); parameters under "<prefix>.mixer".
    MambaMixer(const std::string& prefix, const TransformerConfig& config, Backend& backend);

    // x (B, T, H) -> (B, T, H). With `state` (inference; saved null) x holds positions past ..
    // and the state is read (past > 0) and left after the last position.
    Tensor forward(const Tensor& x, Saved* saved, MambaState* state = nullptr,
                   int64_t past = 0) const;
    // dy (B, T, H) -> dx; every parameter grad +=.
    Tensor backward(const Tensor& dy, const Saved& saved);

    // In Megatron-core's order, with `fused_norm` (the layer's norm, Transformer Engine's
    // in_proj.layer_norm_weight) first when given.
    void collect_parameters(std::vector<Parameter*>& out, Norm* fused_norm);
    std::unique_ptr<MambaState> make_state(int64_t batch, int64_t capacity) const;
    Linear& in_proj() { return in_proj_; }

  private:
    // Columns of in_proj's output: z, then xBC (x, B, C), then dt.
    int64_t conv_channels() const { return di_ + 2 * ng_ * n_; }

    int64_t nh_, hp_, ng_, n_, di_, k_;
    Linear in_proj_;
    Parameter conv_weight_, conv_bias_, dt_bias_, a_log_, d_, norm_weight_;
    Linear out_proj_;
    DType dtype_;    // the model's
    DType compute_;  // between the projections: f32 for a bf16 / fp16 model
    Backend* backend_;
    // Under context parallelism the convolution and scan see the whole sequence (forward).
    ContextParallel cp_;
};

// The sublayer spec of a Mamba layer: the mixer behind its norm ("mixer.in_proj" fused, "norm"
// as a module of its own).
MT_API SublayerSpec mamba_sublayer();

}  // namespace mt::nn
