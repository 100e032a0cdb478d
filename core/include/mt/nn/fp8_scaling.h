// A model's FP8 state. The pass counter: Megatron's set_is_first_microbatch starts a
// forward-backward pass, and every recipe's linears quantize their weights once per pass, reusing
// that copy in the later micro-batches and the backward, as TE's linears do when Megatron passes
// is_first_microbatch. And the delayed recipe's meters (--fp8-recipe delayed, Transformer
// Engine's DelayedScaling): each FP8 operand is quantized with a scale derived from the amaxes of
// earlier passes, not its own. Every linear keeps, for its input, its weight and its output
// gradient, a scale (1 at first) and an amax history of --fp8-amax-history-len slots;
// quantizing writes the operand's amax into slot 0 (the largest since the last update). At the
// end of each micro-batch's forward through the layers (TE's fp8_autocast exit, only when
// training) and of its backward (the first FP8 module's backward), the pass's slot-0 amaxes are
// reduced (max) over the tensor-, data- and context-parallel ranks, then each operand that saw an
// amax has its history rolled and its scale set to fp8 max * 2^-margin / amax, the amax being the
// most recent one or the window's largest (--fp8-amax-compute-algo); TE's fused kernel
// (delayed_scaling.cu's kernel_bulk).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "mt/api.h"
#include "mt/op_types.h"
#include "mt/tensor.h"

namespace mt {
class Backend;
class Communicator;
}  // namespace mt

namespace mt::nn {

// The recipe's settings (Megatron's TEDelayedScaling arguments).
struct Fp8DelayedRecipe {
    int64_t amax_history_len = 1;  // --fp8-amax-history-len
    bool amax_max = false;         // --fp8-amax-compute-algo max (default most_recent)
    int64_t margin = 0;            // --fp8-margin
};

// One quantized tensor's state: TE's fp8_meta scale and amax_history column.
struct Fp8Meter {
    float scale = 1.0f;
    std::vector<float> history;  // [0]: this pass's amax so far; [1..]: oldest to newest
};

// A linear's three meters.
struct Fp8LinearMeters {
    Fp8Meter input, weight, grad;
};

class MT_API Fp8Scaling {
  public:
    // The delayed recipe's amaxes are reduced over `groups` in turn (a max over each: together
    // the TE group), those of size 1 skipped. recipe.amax_history_len >= 1 (read_transformer_args
    // checks the flag).
    Fp8Scaling(const Fp8DelayedRecipe& recipe, std::vector<Communicator*> groups);

    // A delayed-scaling linear's meters, registered in build order (the order of the reduced
    // amaxes).
    std::shared_ptr<Fp8LinearMeters> add_linear();

    // x quantized to `type` with the meter's scale and read back in f32; x's amax is recorded.
    Tensor quantize(Backend& backend, const Tensor& x, Fp8Meter& meter, ops::Fp8Type type) const;

    // Megatron's set_is_first_microbatch: the next forward starts a pass (weights quantized
    // anew). pass(): the current one, from 1.
    void start_pass() { ++pass_; }
    uint64_t pass() const { return pass_; }
    // The amax reduction and scale update after a training forward (forward: the inputs' and
    // weights' meters, E4M3) or a backward (the gradients', `grad_type`).
    void update(bool forward, ops::Fp8Type grad_type);

  private:
    Fp8DelayedRecipe recipe_;
    std::vector<Communicator*> groups_;
    std::vector<std::shared_ptr<Fp8LinearMeters>> linears_;
    uint64_t pass_ = 1;
};

// TE's update of one meter whose pass amax (after the reduction) is `amax`: nothing when it is
// 0; otherwise the history rolled (amax appended, the oldest dropped, slot 0 cleared) and the
// scale max_fp8 * 2^-margin / (amax or the window's largest), kept when that amax is 0, infinite
// or NaN, the largest float when the quotient overflows.
MT_API void fp8_delayed_update(Fp8Meter& meter, float amax, float max_fp8,
                               const Fp8DelayedRecipe& recipe);

}  // namespace mt::nn
