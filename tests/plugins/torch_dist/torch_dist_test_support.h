// Helpers of the torch_dist tests: the fixtures megatron-core wrote
// (tests/fixtures/torch_dist), byte comparison, and two states compared entry by entry.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <tuple>

#include "mt/checkpoint.h"
#include "mt/io/torch_file.h"
#include "test_support.h"

namespace mt::plugins::torch_dist {

inline std::filesystem::path fixture(const std::string& name) {
    return mt::test::fixtures_dir() / "torch_dist" / name;
}

// Keeps a copy of what a test saved as KEEP/<name> when MT_TORCH_DIST_KEEP=KEEP is set, for
// the by-hand megatron-core checks (check_megatron_loads_ours.py, check_megatron_loads_moe.py).
inline void keep_for_megatron(const std::filesystem::path& saved, const std::string& name) {
    if (const char* keep = std::getenv("MT_TORCH_DIST_KEEP"))
        std::filesystem::copy(saved, std::filesystem::path(keep) / name,
                              std::filesystem::copy_options::recursive);
}

// The largest |got - want| over two f32 tensors of one shape (logits).
inline double worst_difference(const Tensor& got, const Tensor& want) {
    const Tensor g = got.contiguous(), w = want.contiguous();
    EXPECT_EQ(g.shape(), w.shape());
    double worst = 0;
    for (int64_t i = 0; i < std::min(g.numel(), w.numel()); ++i)
        worst = std::max(worst, std::fabs(double(g.data<float>()[i]) - double(w.data<float>()[i])));
    return worst;
}

inline bool same_bytes(const Tensor& a, const Tensor& b) {
    const Tensor ca = a.contiguous(), cb = b.contiguous();
    return ca.shape() == cb.shape() && ca.dtype() == cb.dtype() &&
           std::memcmp(ca.raw_data(), cb.raw_data(), size_t(ca.nbytes())) == 0;
}

// <model>_reference.pt: {'state': core name -> tensor, 'tokens', 'logits'}.
inline io::PyValue reference(const std::string& model) {
    return io::load_torch_file(fixture(model + "_reference.pt"));
}

inline const ShardedTensor* find(const CheckpointState& s, const std::string& name) {
    for (const auto& [k, t] : s.model)
        if (k == name) return &t;
    return nullptr;
}

inline void expect_same_state(const CheckpointState& a, const CheckpointState& b) {
    ASSERT_EQ(a.model.size(), b.model.size());
    for (size_t i = 0; i < a.model.size(); ++i) {
        EXPECT_EQ(a.model[i].first, b.model[i].first);
        EXPECT_TRUE(same_bytes(a.model[i].second.local, b.model[i].second.local))
            << a.model[i].first;
    }
    EXPECT_EQ(a.iteration, b.iteration);
    EXPECT_EQ(a.consumed_train_samples, b.consumed_train_samples);
    EXPECT_EQ(a.consumed_valid_samples, b.consumed_valid_samples);
    EXPECT_EQ(a.num_floating_point_operations_so_far, b.num_floating_point_operations_so_far);
    EXPECT_EQ(a.args, b.args);
    ASSERT_EQ(a.scheduler.has_value(), b.scheduler.has_value());
    if (a.scheduler) {
        EXPECT_EQ(a.scheduler->num_steps, b.scheduler->num_steps);
        EXPECT_EQ(a.scheduler->max_lr, b.scheduler->max_lr);
        EXPECT_EQ(a.scheduler->lr_decay_style, b.scheduler->lr_decay_style);
        EXPECT_EQ(a.scheduler->lr_warmup_steps, b.scheduler->lr_warmup_steps);
        EXPECT_EQ(a.scheduler->start_wd, b.scheduler->start_wd);
    }
    ASSERT_EQ(a.optimizer.has_value(), b.optimizer.has_value());
    if (a.optimizer) {
        const OptimizerCheckpoint &x = *a.optimizer, &y = *b.optimizer;
        EXPECT_EQ(x.type, y.type);
        EXPECT_EQ(x.step, y.step);
        EXPECT_EQ(std::tie(x.lr, x.weight_decay, x.max_lr, x.min_lr, x.beta1, x.beta2, x.eps),
                  std::tie(y.lr, y.weight_decay, y.max_lr, y.min_lr, y.beta1, y.beta2, y.eps));
        if (x.type == "sgd") EXPECT_EQ(x.momentum, y.momentum);
        ASSERT_EQ(x.params.size(), y.params.size());
        for (size_t i = 0; i < x.params.size(); ++i) {
            EXPECT_EQ(x.params[i].name, y.params[i].name);
            EXPECT_EQ(x.params[i].weight_decay, y.params[i].weight_decay) << x.params[i].name;
            EXPECT_TRUE(same_bytes(x.params[i].exp_avg, y.params[i].exp_avg)) << x.params[i].name;
            if (x.type == "adam")
                EXPECT_TRUE(same_bytes(x.params[i].exp_avg_sq, y.params[i].exp_avg_sq))
                    << x.params[i].name;
        }
    }
    ASSERT_EQ(a.rng.has_value(), b.rng.has_value());
    if (a.rng) {
        EXPECT_EQ(a.rng->dropout_seed, b.rng->dropout_seed);
        EXPECT_EQ(a.rng->dropout_offset, b.rng->dropout_offset);
    }
}

// The moments of `a` and `b` are the same, parameter by parameter.
inline void expect_same_moments(const CheckpointState& a, const CheckpointState& b) {
    ASSERT_TRUE(a.optimizer && b.optimizer);
    EXPECT_EQ(a.optimizer->step, b.optimizer->step);
    ASSERT_EQ(a.optimizer->params.size(), b.optimizer->params.size());
    for (size_t i = 0; i < a.optimizer->params.size(); ++i) {
        const auto &x = a.optimizer->params[i], &y = b.optimizer->params[i];
        EXPECT_EQ(x.name, y.name);
        EXPECT_EQ(x.weight_decay, y.weight_decay) << x.name;
        EXPECT_TRUE(same_bytes(x.exp_avg.contiguous(), y.exp_avg.contiguous())) << x.name;
        EXPECT_TRUE(same_bytes(x.exp_avg_sq.contiguous(), y.exp_avg_sq.contiguous())) << x.name;
    }
}


// The distributed optimizer's shards of `state` as two data-parallel ranks keep them: each
// parameter of n elements split at cut(n) into [0, cut) and [cut, n) (a range left empty is
// skipped), the parameters whole (their boxes), moments from state.optimizer's.
inline void add_two_rank_shards(CheckpointState& state, int64_t (*cut)(int64_t n)) {
    OptimizerCheckpoint& o = *state.optimizer;
    for (size_t i = 0; i < state.model.size(); ++i) {
        const Tensor& whole = state.model[i].second.local;
        const int64_t n = whole.numel(), at = cut(n);
        for (auto [begin, end] : {std::pair{int64_t(0), at}, std::pair{at, n}}) {
            if (begin >= end) continue;
            OptimizerShard s;
            s.name = state.model[i].first;
            s.global_shape = whole.shape();
            s.boxes = {{Shape(whole.dim(), 0), whole.shape()}};
            s.begin = begin;
            s.end = end;
            s.main_param = whole.contiguous().view({n}).slice(0, begin, end);
            s.exp_avg = o.params[i].exp_avg.contiguous().view({n}).slice(0, begin, end);
            s.exp_avg_sq = o.params[i].exp_avg_sq.contiguous().view({n}).slice(0, begin, end);
            o.shards.push_back(s);
        }
    }
}

}  // namespace mt::plugins::torch_dist
