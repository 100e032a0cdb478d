#include "mt/nn/moe_tracker.h"

#include "mt/error.h"

namespace mt::nn {

MoeTracker::MoeTracker(std::vector<std::string> names, int64_t moe_layers)
    : moe_layers_(moe_layers) {
    MT_CHECK(moe_layers > 0, "MoeTracker: a model with ", moe_layers, " MoE layers");
    for (std::string& n : names) sums_.emplace_back(std::move(n), 0.0);
}

void MoeTracker::add(const std::string& name, double value) {
    for (auto& [n, sum] : sums_)
        if (n == name) {
            sum += value;
            return;
        }
    MT_FAIL("MoeTracker: no auxiliary loss \"", name, "\" is tracked");
}

std::vector<std::pair<std::string, double>> MoeTracker::take() {
    std::vector<std::pair<std::string, double>> out;
    for (auto& [name, sum] : sums_) {
        out.emplace_back(name, sum / double(moe_layers_));
        sum = 0;
    }
    return out;
}

}  // namespace mt::nn
