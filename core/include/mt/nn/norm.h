// Norm: LayerNorm or RMSNorm over the hidden dimension as a module (Megatron's
// --normalization LayerNorm / RMSNorm, --layernorm-epsilon, --apply-layernorm-1p), over
// ops::layer_norm_* / rms_norm_*.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/backend.h"
#include "mt/nn/parameter.h"

namespace mt::nn {

enum class NormKind : uint8_t { layer_norm, rms_norm };

class MT_API Norm {
  public:
    struct Saved {
        Tensor input;  // (..., C) the forward's x
        Tensor mean;   // (...) LayerNorm only
        Tensor rstd;   // (...)
    };

    // weight_name (C), initialised to 1 (0 with zero-centred gamma), and for LayerNorm
    // bias_name (C) = 0. Neither is weight-decayed; both are replicated over `tp` (and marked
    // grad_partial_over_tp when the norm runs on sequence shards).
    Norm(NormKind kind, const std::string& weight_name, const std::string& bias_name,
         int64_t hidden, const ops::NormConfig& config, DType dtype, Backend& backend,
         const TensorParallel& tp = {});

    // x (..., C) -> y (..., C).
    Tensor forward(const Tensor& x, Saved* saved) const;
    // dy (..., C) -> dx; weight.grad (and bias.grad) +=.
    Tensor backward(const Tensor& dy, const Saved& saved);

    void collect_parameters(std::vector<Parameter*>& out);
    Parameter& weight() { return weight_; }
    Parameter* bias() { return kind_ == NormKind::layer_norm ? &bias_ : nullptr; }

  private:
    NormKind kind_;
    ops::NormConfig config_;
    Parameter weight_, bias_;
    Backend* backend_;
};

}  // namespace mt::nn
