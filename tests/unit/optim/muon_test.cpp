// Muon (mt/optim/muon.h) against Megatron core_v0.19's own TensorParallelMuon over
// emerging_optimizers v0.2.0 (tests/fixtures/muon/make_fixture.py: optimizer_steps.json), three
// steps of three configurations on a linear_qkv weight split by query group and weights of
// other shapes: the momentum buffers and weights equal to f32 rounding (bounded in the test by
// a float's rounding and what a bf16 product summed in another order could change).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>

#include "mt/optim/muon.h"
#include "test_support.h"

namespace {

mt::Tensor tensor_of(const simdjson::dom::element& list, const mt::Shape& shape) {
    mt::Tensor t = mt::Tensor::empty(shape, mt::DType::f32);
    float* p = t.data<float>();
    for (double v : list.get_array()) *p++ = float(v);
    return t;
}

// The largest |a - b| over the elements, and the largest |b|.
std::pair<double, double> max_diff(const mt::Tensor& a, const mt::Tensor& b) {
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
        diff = std::max(diff, std::abs(double(a.data<float>()[i]) - b.data<float>()[i]));
        scale = std::max(scale, std::abs(double(b.data<float>()[i])));
    }
    return {diff, scale};
}

TEST(Muon, StepsEqualMegatronsTensorParallelMuon) {
    simdjson::dom::parser parser;
    const simdjson::dom::element fixture =
        parser.load((mt::test::fixtures_dir() / "muon" / "optimizer_steps.json").string());
    auto backend = mt::make_cpu_backend();
    const double lr = double(fixture["lr"]), wd = double(fixture["weight_decay"]);
    std::vector<int64_t> split;
    for (int64_t v : fixture["qkv_split_shapes"].get_array()) split.push_back(v);
    int cases = 0;
    for (auto [case_name, c] : fixture["cases"].get_object()) {
        const simdjson::dom::element s = c["settings"];
        mt::optim::MuonConfig config;
        config.momentum = double(s["momentum"]);
        config.nesterov = bool(s["nesterov"]);
        config.split_qkv = bool(s["split_qkv"]);
        config.fp32_matmul_prec = std::string(std::string_view(s["fp32_matmul_prec"]));
        config.coefficient_type = std::string(std::string_view(s["coefficient_type"]));
        config.num_ns_steps = int(int64_t(s["num_ns_steps"]));
        config.scale_mode = std::string(std::string_view(s["scale_mode"]));
        config.extra_scale_factor = double(s["extra_scale_factor"]);
        config.qkv_split_shapes = split;
        // Each weight moves by up to about lr x scale factor x extra scale: here within a
        // float's rounding of torch's in both precisions (on this project's CPUs); a bf16 product
        // summed in another order may round the other way (2^-8 of that move).
        const double tolerance = config.fp32_matmul_prec == "medium" ? 1e-2 : 1e-5;
        for (auto param : fixture["params"].get_array()) {
            const std::string name{std::string_view(param["name"])};
            mt::Shape shape;
            for (int64_t d : param["shape"].get_array()) shape.push_back(d);
            mt::Tensor value = tensor_of(c["initial_params"][name], shape);
            mt::Tensor momentum = mt::Tensor::zeros(shape, mt::DType::f32);
            int step = 0;
            for (auto expected : c["steps"].get_array()) {
                ++step;
                const mt::Tensor grad = tensor_of(expected["grads"][name], shape);
                mt::optim::muon_step(*backend, value, grad, momentum, name, lr, wd, 1.0, config);
                const auto [m_diff, m_scale] =
                    max_diff(momentum, tensor_of(expected["momentum_buffers"][name], shape));
                EXPECT_LE(m_diff, 1e-6 * m_scale)
                    << case_name << " " << name << " momentum, step " << step;
                const double moved =
                    lr * mt::optim::muon_scale_factor(shape[0], shape[1], config.scale_mode);
                const auto [p_diff, p_scale] =
                    max_diff(value, tensor_of(expected["params"][name], shape));
                EXPECT_LE(p_diff, tolerance * moved * config.extra_scale_factor + 0x1p-23 * p_scale)
                    << case_name << " " << name << " weights, step " << step << " (largest "
                    << p_scale << ")";
            }
        }
        ++cases;
    }
    EXPECT_EQ(cases, 3);
}

}  // namespace
