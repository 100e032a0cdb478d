// InferenceState: the filled-length bookkeeping.
#include "mt/nn/inference_state.h"

#include "mt/error.h"

namespace mt::nn {

InferenceState::InferenceState(int64_t batch, int64_t capacity, std::vector<LayerStates> layers)
    : batch_(batch), capacity_(capacity), layers_(std::move(layers)) {
    MT_CHECK(batch > 0 && capacity > 0, "InferenceState: sizes must be positive (batch ", batch,
             ", capacity ", capacity, ")");
}

InferenceState::~InferenceState() {
    if (on_release) on_release();
}

int64_t InferenceState::bytes() const {
    int64_t total = 0;
    for (const LayerStates& layer : layers_)
        for (const auto& state : layer)
            if (state) total += state->bytes();
    return total;
}

void InferenceState::advance(int64_t n) {
    MT_CHECK(n >= 0 && length_ + n <= capacity_, "InferenceState: ", length_, " + ", n,
             " positions exceed the capacity of ", capacity_);
    length_ += n;
}

}  // namespace mt::nn
