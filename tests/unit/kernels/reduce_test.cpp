// Mergeable reduction states: a sequential fold and merges over random splits in random order
// agree with each other and with two-pass double-precision results.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "mt/kernels/norms.h"
#include "mt/kernels/reduce.h"

namespace {

std::vector<double> random_values(std::mt19937& rng, int n, double offset, double spread) {
    std::normal_distribution<double> dist(offset, spread);
    std::vector<double> v(n);
    for (double& x : v) x = dist(rng);
    return v;
}

// Folds xs into one State by cutting it at random points, folding each piece with add, then
// merging the pieces in a random pairing order (neighbours only, so order is kept).
template <class State, class T>
State fold_split(const std::vector<double>& xs, std::mt19937& rng) {
    std::uniform_int_distribution<int> cuts(1, 9);
    std::vector<State> pieces;
    size_t i = 0;
    while (i < xs.size()) {
        size_t len = std::min(xs.size() - i, size_t(cuts(rng)) * (rng() % 2 ? 1 : 17));
        State s;
        for (size_t j = i; j < i + len; ++j) s.add(T(xs[j]));
        pieces.push_back(s);
        i += len;
        if (rng() % 5 == 0) pieces.push_back(State{});  // empty states must be neutral
    }
    while (pieces.size() > 1) {
        size_t at = rng() % (pieces.size() - 1);
        pieces[at].merge(pieces[at + 1]);
        pieces.erase(pieces.begin() + at + 1);
    }
    return pieces[0];
}

template <class State, class T>
State fold_all(const std::vector<double>& xs) {
    State s;
    for (double x : xs) s.add(T(x));
    return s;
}

TEST(Reduce, WelfordMatchesTwoPassOnSplitsAndOffsets) {
    std::mt19937 rng(1);
    // A large offset is where E[x^2] - E[x]^2 would cancel catastrophically in float.
    for (double offset : {0.0, 1000.0}) {
        auto xs = random_values(rng, 1000, offset, 2.0);
        double mean = 0, var = 0;
        for (double x : xs) mean += x;
        mean /= xs.size();
        for (double x : xs) var += (x - mean) * (x - mean);
        var /= xs.size();
        for (int trial = 0; trial < 20; ++trial) {
            auto d = fold_split<mt::k::Welford<double>, double>(xs, rng).finalize();
            EXPECT_NEAR(d.mean, mean, 1e-12 * (1 + std::fabs(mean)));
            EXPECT_NEAR(d.var, var, 1e-10 * var);
            auto f = fold_split<mt::k::Welford<float>, float>(xs, rng).finalize();
            EXPECT_NEAR(f.mean, mean, 2e-6 * (1 + std::fabs(mean)));
            EXPECT_NEAR(f.var, var, (offset == 0 ? 1e-5 : 1e-3) * var);
        }
        auto seq = fold_all<mt::k::Welford<double>, double>(xs).finalize();
        EXPECT_NEAR(seq.var, var, 1e-10 * var);
    }
}

TEST(Reduce, WelfordMergeWithEmptyIsIdentity) {
    mt::k::Welford<double> a, empty;
    a.add(2.0);
    a.add(4.0);
    a.merge(empty);
    empty.merge(a);
    EXPECT_EQ(empty.finalize().mean, 3.0);
    EXPECT_EQ(empty.finalize().var, 1.0);
    EXPECT_EQ(a.n, 2.0);
}

TEST(Reduce, SumSqAndSumMatchDouble) {
    std::mt19937 rng(2);
    auto xs = random_values(rng, 777, 0.3, 1.5);
    double sq = 0, sum = 0;
    for (double x : xs) {
        sq += x * x;
        sum += x;
    }
    for (int trial = 0; trial < 20; ++trial) {
        EXPECT_NEAR((fold_split<mt::k::SumSq<double>, double>(xs, rng).finalize()), sq / xs.size(),
                    1e-12 * sq / xs.size());
        EXPECT_NEAR((fold_split<mt::k::SumSq<float>, float>(xs, rng).finalize()), sq / xs.size(),
                    1e-5 * sq / xs.size());
        EXPECT_NEAR((fold_split<mt::k::Sum<double>, double>(xs, rng).finalize()), sum, 1e-10);
    }
}

TEST(Reduce, OnlineMaxMatchesTwoPassLogSumExp) {
    std::mt19937 rng(3);
    for (double spread : {1.0, 30.0}) {  // 30: terms differ by far more than float's range
        auto xs = random_values(rng, 500, -5.0, spread);
        double m = *std::max_element(xs.begin(), xs.end()), s = 0;
        for (double x : xs) s += std::exp(x - m);
        const double lse = m + std::log(s);
        for (int trial = 0; trial < 20; ++trial) {
            auto d = fold_split<mt::k::OnlineMax<double>, double>(xs, rng);
            EXPECT_EQ(d.m, m);
            EXPECT_NEAR(d.s, s, 1e-12 * s);
            EXPECT_NEAR(d.finalize(), lse, 1e-12 * (1 + std::fabs(lse)));
            auto f = fold_split<mt::k::OnlineMax<float>, float>(xs, rng);
            EXPECT_NEAR(f.finalize(), lse, 2e-6 * (1 + std::fabs(lse)));
        }
    }
}

TEST(Reduce, OnlineMaxIgnoresMaskedEntries) {
    const float inf = INFINITY;
    mt::k::OnlineMax<float> all_masked;
    all_masked.add(-inf);
    all_masked.add(-inf);
    EXPECT_EQ(all_masked.s, 0.0f);
    EXPECT_EQ(all_masked.finalize(), -inf);

    mt::k::OnlineMax<float> a, b;
    a.add(-inf);
    a.add(1.0f);
    a.add(-inf);
    b.add(-inf);
    a.merge(b);  // a masked-only piece merges as the identity
    b.merge(a);
    EXPECT_EQ(a.m, 1.0f);
    EXPECT_EQ(a.s, 1.0f);
    EXPECT_EQ(b.m, 1.0f);
    EXPECT_EQ(b.s, 1.0f);

    mt::k::OnlineMax<float> nan_state;
    nan_state.add(1.0f);
    nan_state.add(NAN);
    EXPECT_TRUE(std::isnan(nan_state.finalize()));
}

TEST(Reduce, NormGradSumsMergeLikeOneFold) {
    std::mt19937 rng(4);
    auto g = random_values(rng, 300, 0, 1), xhat = random_values(rng, 300, 0, 1);
    mt::k::NormGradSums<double> all, left, right;
    for (size_t i = 0; i < g.size(); ++i) (i < 123 ? left : right).add(g[i], xhat[i]);
    for (size_t i = 0; i < g.size(); ++i) all.add(g[i], xhat[i]);
    left.merge(right);
    EXPECT_NEAR(left.sum_g, all.sum_g, 1e-12);
    EXPECT_NEAR(left.sum_g_xhat, all.sum_g_xhat, 1e-12);
}

}  // namespace
