#include "mt/nn/moe/tracker.h"

#include <cmath>

#include "mt/backend.h"
#include "mt/error.h"
#include "mt/nn/parameter.h"

namespace mt::nn {

bool reports_load_balancing(const RouterConfig& r) {
    return (r.load_balancing == LoadBalancing::aux_loss ||
            r.load_balancing == LoadBalancing::seq_aux_loss) &&
           r.aux_loss_coeff > 0;
}

bool reports_z_loss(const RouterConfig& r) {
    return r.z_loss_coeff > 0;
}

MoeTracker::MoeTracker(const RouterConfig& router, int64_t moe_layers, int64_t layers)
    : moe_layers_(moe_layers),
      sums_layers_(router.gshard.enabled),
      bias_update_rate_(router.bias_update_rate) {
    MT_CHECK(moe_layers > 0 && layers >= moe_layers, "MoeTracker: a model with ", moe_layers,
             " MoE layers among ", layers);
    const std::vector<double> zeros(size_t(layers), 0.0);
    if (reports_load_balancing(router))
        sums_.emplace_back(router.gshard.enabled ? kDeepSpeedMoeLoss : "load_balancing_loss",
                           zeros);
    if (reports_z_loss(router)) sums_.emplace_back("z_loss", zeros);
}

void MoeTracker::add(const std::string& name, int64_t layer, double value) {
    for (auto& [n, sums] : sums_)
        if (n == name) {
            MT_CHECK(layer >= 0 && layer < int64_t(sums.size()), "MoeTracker: layer ", layer,
                     " of a model of ", sums.size());
            sums[size_t(layer)] += value;
            return;
        }
    MT_FAIL("MoeTracker: no auxiliary loss \"", name, "\" is tracked");
}

std::vector<std::pair<std::string, std::vector<double>>> MoeTracker::take() {
    std::vector<std::pair<std::string, std::vector<double>>> out = sums_;
    for (auto& [name, sums] : sums_) std::fill(sums.begin(), sums.end(), 0.0);
    return out;
}

size_t MoeTracker::add_expert_bias(Parameter& bias) {
    expert_bias_.push_back({&bias, std::vector<double>(size_t(bias.value.numel()), 0.0)});
    return expert_bias_.size() - 1;
}

void MoeTracker::count_routed(size_t slot, const std::vector<uint8_t>& map) {
    MT_CHECK(slot < expert_bias_.size(), "MoeTracker: no expert-bias slot ", slot);
    std::vector<double>& tokens = expert_bias_[slot].tokens;
    const size_t experts = tokens.size();
    MT_CHECK(experts > 0 && map.size() % experts == 0, "MoeTracker: a routing map of ", map.size(),
             " entries for ", experts, " experts");
    for (size_t i = 0; i < map.size(); ++i) tokens[i % experts] += map[i];
}

std::vector<double> MoeTracker::routed_tokens() const {
    std::vector<double> out;
    for (const ExpertBiasSlot& s : expert_bias_)
        out.insert(out.end(), s.tokens.begin(), s.tokens.end());
    return out;
}

void MoeTracker::update_expert_bias(Backend& backend, const std::vector<double>& tokens) {
    size_t counts = 0;
    for (const ExpertBiasSlot& s : expert_bias_) counts += s.tokens.size();
    MT_CHECK(tokens.size() == counts, "MoeTracker: ", tokens.size(), " token counts for ", counts);
    const float rate = float(bias_update_rate_);
    size_t at = 0;
    for (ExpertBiasSlot& s : expert_bias_) {
        const size_t experts = s.tokens.size();
        // Megatron's float32 tensors: the mean count, the offset's sign, the step.
        float sum = 0;
        for (size_t e = 0; e < experts; ++e) sum += float(tokens[at + e]);
        const float mean = sum / float(experts);
        Tensor bias = backend.cast_to(s.bias->value, DType::f32).contiguous();
        std::vector<float> updated(bias.data<float>(), bias.data<float>() + experts);
        for (size_t e = 0; e < experts; ++e) {
            const float offset = mean - float(tokens[at + e]);
            const float sign = offset > 0 ? 1.0f : offset < 0 ? -1.0f : 0.0f;
            updated[e] = updated[e] + sign * rate;
        }
        backend.copy(host_tensor(std::move(updated), s.bias->value.shape()), s.bias->value);
        std::fill(s.tokens.begin(), s.tokens.end(), 0.0);
        at += experts;
    }
}

}  // namespace mt::nn
