#include "mt/nn/moe_tracker.h"

#include "mt/error.h"

namespace mt::nn {

bool reports_load_balancing(const RouterConfig& r) {
    return (r.load_balancing == LoadBalancing::aux_loss ||
            r.load_balancing == LoadBalancing::seq_aux_loss) &&
           r.aux_loss_coeff > 0;
}

bool reports_z_loss(const RouterConfig& r) {
    return r.z_loss_coeff > 0;
}

MoeTracker::MoeTracker(const RouterConfig& router, int64_t moe_layers) : moe_layers_(moe_layers) {
    MT_CHECK(moe_layers > 0, "MoeTracker: a model with ", moe_layers, " MoE layers");
    if (reports_load_balancing(router)) sums_.emplace_back("load_balancing_loss", 0.0);
    if (reports_z_loss(router)) sums_.emplace_back("z_loss", 0.0);
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
