// Helpers for the kernel and CPU-op tests: random f32 tensors, element access, and central
// finite differences of a whole op through a double-precision weighted-sum loss.
#pragma once

#include <functional>
#include <random>
#include <vector>

#include "mt/tensor.h"

namespace mt::test {

// f32 tensor with entries uniform in [lo, hi).
Tensor random_tensor(const Shape& shape, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f);
// Like random_tensor, with every |entry| >= gap (keeps finite differences off the ReLU kink).
Tensor random_away_from_zero(const Shape& shape, std::mt19937& rng, float gap);

std::vector<double> to_doubles(const Tensor& t);
float* f32(const Tensor& t);

// sum_k w[k] * y[k] in double.
double weighted_sum(const Tensor& y, const std::vector<double>& w);

// d/dx_i of L = sum_k w[k] y[k] by central differences with step h, for every element of x;
// run() must recompute y from x's current contents. x is restored afterwards.
std::vector<double> numeric_grad(Tensor& x, const std::function<void()>& run, const Tensor& y,
                                 const std::vector<double>& w, double h);

// Expects |actual[i] - expected[i]| <= atol + rtol |expected[i]| for all i; `what` names it.
void expect_close(const std::vector<double>& actual, const std::vector<double>& expected,
                  double atol, double rtol, const char* what);

}  // namespace mt::test
