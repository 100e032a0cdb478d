#include "mt/optim/grad_clip.h"

#include <cmath>

#include "mt/error.h"

namespace mt::optim {

double global_l2_norm(Backend& backend, std::span<const Tensor> grads) {
    double sum = 0;
    for (const Tensor& g : grads) {
        const Tensor c = backend.contiguous(g);
        sum += backend.dot(c, c);
    }
    return std::sqrt(sum);
}

double clip_coefficient(double max_norm, double total_norm) {
    MT_CHECK(max_norm > 0, "--clip-grad must be positive, got ", max_norm);
    const double coeff = max_norm / (total_norm + 1.0e-6);
    return coeff < 1.0 ? coeff : 1.0;
}

}  // namespace mt::optim
