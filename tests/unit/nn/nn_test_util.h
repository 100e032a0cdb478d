// Helpers for the mt::nn tests: random f64/f32 tensors, and the finite-difference check of a
// module's backward (input and every parameter gradient) through L = sum_k w[k] y[k].
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "mt/nn/dropout.h"
#include "mt/nn/parameter.h"
#include "mt/tensor.h"

namespace mt::test {

// Entries uniform in [lo, hi), f32 or f64.
Tensor random_like(const Shape& shape, DType dtype, std::mt19937& rng, double lo = -1.0,
                   double hi = 1.0);
// Overwrites a tensor with uniform entries in [lo, hi).
void fill_random(Tensor& t, std::mt19937& rng, double lo = -1.0, double hi = 1.0);
// (B, T) i64 ids uniform in [0, vocab).
Tensor random_ids(int64_t batch, int64_t seq, int64_t vocab, std::mt19937& rng);

std::vector<double> values(const Tensor& t);  // f32 or f64, any contiguity

// A tensor of a reference fixture (tests/fixtures/nn, tests/fixtures/fp8): per tensor a line
// "<name> <ndim> <dims...>" and a line of its values, as the fixture scripts write them.
struct Stored {
    Shape shape;
    std::vector<double> values;
};
std::map<std::string, Stored> load_stored_tensors(const std::filesystem::path& file);
void zero_grads(const std::vector<nn::Parameter*>& params);

// One tensor whose analytic gradient is checked: d L / d value against grad.
struct GradTarget {
    std::string name;
    Tensor value;  // perturbed in place by the check (restored after)
    Tensor grad;   // analytic gradient to compare
};

// Runs the check: `forward` recomputes y from the current values (and must replay any
// dropout from the same context); targets are compared with central differences of step h:
// |analytic - numeric| <= atol + rtol |numeric|.
void expect_grads_match(const std::function<Tensor()>& forward, const std::vector<double>& w,
                        const std::vector<GradTarget>& targets, double h, double atol, double rtol);

// The weighted-sum weights for an output y (uniform in [-1, 1)) and as a tensor of y's dtype.
std::vector<double> random_weights(const Tensor& y, std::mt19937& rng);
Tensor weights_tensor(const Tensor& y, const std::vector<double>& w);

// A module's parameters (collect_parameters order), each filled uniform in [lo, hi).
template <class Module>
std::vector<nn::Parameter*> random_parameters(Module& m, std::mt19937& rng, double lo = -0.5,
                                              double hi = 0.5) {
    std::vector<nn::Parameter*> params;
    m.collect_parameters(params);
    for (nn::Parameter* p : params) fill_random(p->value, rng, lo, hi);
    return params;
}
// Targets for every parameter of a module (name, value, grad).
std::vector<GradTarget> parameter_targets(const std::vector<nn::Parameter*>& params);

// For a module whose forward takes a dropout context (attention, transformer layer): forward
// from `start` keeping Saved, backward of random output weights, then the finite-difference
// check of the input and every parameter, each re-forward replaying the same dropout.
template <class Module>
void expect_module_grads_match(Module& m, const Tensor& x,
                               const std::vector<nn::Parameter*>& params,
                               const nn::DropoutContext& start, std::mt19937& rng) {
    nn::DropoutContext ctx = start;
    typename Module::Saved saved;
    Tensor y = m.forward(x, ctx, &saved);
    auto w = random_weights(y, rng);
    Tensor dx = m.backward(weights_tensor(y, w), saved);
    auto targets = parameter_targets(params);
    targets.insert(targets.begin(), {"x", x, dx});
    auto run = [&] {
        nn::DropoutContext replay = start;
        return m.forward(x, replay, nullptr);
    };
    expect_grads_match(run, w, targets, 1e-6, 1e-8, 1e-6);
}

}  // namespace mt::test
