#include "model_reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "formula_weights.h"
#include "test_support.h"

namespace mt::test {

ModelReference load_model_reference(const std::string& relative) {
    std::ifstream in(fixtures_dir() / relative);
    EXPECT_TRUE(in) << "missing tests/fixtures/" << relative;
    ModelReference r;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream s(line);
        std::string kind;
        s >> kind;
        if (kind == "config") {
            std::string kv;
            while (s >> kv) r.args[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
        } else if (kind == "grad") {
            std::string name;
            GradRecord g;
            size_t samples = 0;
            s >> name >> g.numel >> g.max_abs >> g.sum_abs >> g.signed_sum >> samples;
            for (size_t k = 0; k < samples && std::getline(in, line); ++k) {
                std::istringstream e(line);
                int64_t i;
                double v;
                e >> i >> v;
                g.samples.emplace_back(i, v);
            }
            r.grads[name] = std::move(g);
        } else {
            size_t n = 0;
            s >> n;
            std::vector<double>& v = r.vectors[kind];
            v.resize(n);
            for (double& x : v) s >> x;
        }
    }
    return r;
}

bool close_to(double got, double want, double scale, double tol) {
    return std::fabs(got - want) <= tol * (std::fabs(want) + scale);
}

void expect_grads_match_reference(const std::vector<nn::Parameter*>& params,
                                  const ModelReference& ref, const std::string& label, double tol) {
    ASSERT_EQ(params.size(), ref.grads.size()) << label;
    for (const nn::Parameter* p : params) {
        ASSERT_TRUE(ref.grads.count(p->name)) << p->name << " is not in " << label;
        const GradRecord& g = ref.grads.at(p->name);
        const int64_t n = p->grad.numel();
        ASSERT_EQ(n, g.numel) << p->name;
        const uint64_t sign_base = fnv1a64("sign." + p->name);
        double max_abs = 0, sum_abs = 0, signed_sum = 0;
        for (int64_t i = 0; i < n; ++i) {
            const double v = element(p->grad, i);
            max_abs = std::max(max_abs, std::fabs(v));
            sum_abs += std::fabs(v);
            signed_sum += (formula_hash(sign_base, uint64_t(i)) & 1) ? v : -v;
        }
        EXPECT_TRUE(close_to(max_abs, g.max_abs, 0, tol))
            << p->name << " max |g| " << max_abs << " vs " << g.max_abs;
        EXPECT_TRUE(close_to(sum_abs, g.sum_abs, 0, tol))
            << p->name << " sum |g| " << sum_abs << " vs " << g.sum_abs;
        EXPECT_TRUE(close_to(signed_sum, g.signed_sum, g.sum_abs, tol))
            << p->name << " signed sum " << signed_sum << " vs " << g.signed_sum;
        int reported = 0;
        for (auto [i, v] : g.samples)
            if (!close_to(element(p->grad, i), v, g.max_abs, tol) && reported++ < 5)
                ADD_FAILURE() << label << " grad " << p->name << "[" << i
                              << "]: " << element(p->grad, i) << " vs torch " << v;
    }
}

}  // namespace mt::test
