// A model's FP8 state: the pass counter; the delayed recipe's meters, amax reduction and TE's
// scale update.
#include "mt/nn/fp8_scaling.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "mt/backend.h"
#include "mt/communicator.h"
#include "mt/nn/fp8.h"

namespace mt::nn {

Fp8Scaling::Fp8Scaling(const Fp8DelayedRecipe& recipe, std::vector<Communicator*> groups)
    : recipe_(recipe), groups_(std::move(groups)) {}

std::shared_ptr<Fp8LinearMeters> Fp8Scaling::add_linear() {
    auto meters = std::make_shared<Fp8LinearMeters>();
    for (Fp8Meter* m : {&meters->input, &meters->weight, &meters->grad})
        m->history.assign(size_t(recipe_.amax_history_len), 0.0f);
    linears_.push_back(meters);
    return meters;
}

Tensor Fp8Scaling::quantize(Backend& backend, const Tensor& x, Fp8Meter& meter,
                            ops::Fp8Type type) const {
    const Tensor in = backend.contiguous(x);
    // TE's cast kernel folds |x| into the amax slot with fmaxf, which skips NaN.
    const float amax = float(backend.abs_max(in));
    if (!std::isnan(amax)) meter.history[0] = std::max(meter.history[0], amax);
    return fp8_quantized(backend, in, meter.scale, type);
}

void Fp8Scaling::update(bool forward, ops::Fp8Type grad_type) {
    // One amax per meter of the pass, reduced together (TE's contiguous amax buffer).
    std::vector<Fp8Meter*> meters;
    for (const auto& linear : linears_) {
        if (forward) {
            meters.push_back(&linear->input);
            meters.push_back(&linear->weight);
        } else {
            meters.push_back(&linear->grad);
        }
    }
    if (meters.empty()) return;
    Tensor amaxes = Tensor::empty({int64_t(meters.size())}, DType::f32);
    for (size_t i = 0; i < meters.size(); ++i) amaxes.data<float>()[i] = meters[i]->history[0];
    for (Communicator* group : groups_)
        if (group->size() > 1) group->all_reduce(amaxes, ReduceOp::max);
    const float max_fp8 = ops::fp8_max(forward ? ops::Fp8Type::e4m3 : grad_type);
    for (size_t i = 0; i < meters.size(); ++i) {
        // TE takes the reduced amax unless it is 0, then the meter's own (0 as well).
        const float reduced = amaxes.data<float>()[i];
        fp8_delayed_update(*meters[i], reduced != 0.0f ? reduced : meters[i]->history[0], max_fp8,
                           recipe_);
    }
}

void fp8_delayed_update(Fp8Meter& meter, float amax, float max_fp8,
                        const Fp8DelayedRecipe& recipe) {
    if (amax == 0.0f) return;  // no pass reached it: history and scale stay
    std::vector<float>& h = meter.history;
    const size_t n = h.size();
    // Slot i takes slot i + 1's amax, the last slot the new one; the window's largest counts the
    // oldest (slot 1) that the roll drops, as TE's kernel does.
    float window = 0.0f;
    for (size_t i = 0; i < n; ++i) {
        const float a = i + 1 < n ? h[i + 1] : amax;
        window = std::fmax(window, a);
        h[i] = i > 0 ? a : 0.0f;
    }
    const float used = recipe.amax_max ? window : amax;
    const float scaled_max = max_fp8 * std::pow(2.0f, -float(recipe.margin));
    float scale = std::isfinite(used) && used > 0.0f ? scaled_max / used : meter.scale;
    if (std::isinf(scale)) scale = std::numeric_limits<float>::max();
    meter.scale = scale;
}

}  // namespace mt::nn
