// Megatron's torch files of expert-parallel ranks: each keeps the dense tensors and its share of
// the experts renumbered from 0 (SequentialMLP and TEGroupedMLP names) with their optimizer
// states, and joining the ranks' files gives the whole model back.
#include <gtest/gtest.h>

#include <set>

#include "expert_files.h"
#include "mt/checkpoint/checkpoint_args.h"

namespace mt::plugins::torch_ckpt {
namespace {

CheckpointState moe_state() {
    CheckpointState s;
    set_arg(s.args, "num_experts", int64_t(4));
    auto add = [&](const std::string& name, float value) {
        Tensor t = Tensor::empty({1}, DType::f32);
        *t.data<float>() = value;
        s.model.emplace_back(name, ShardedTensor::whole(t));
    };
    add("decoder.layers.0.mlp.router.weight", -1);
    for (int e = 0; e < 4; ++e) {
        add("decoder.layers.0.mlp.experts.local_experts." + std::to_string(e) +
                ".linear_fc1.weight",
            float(e));
        add("decoder.layers.1.mlp.experts.linear_fc2.weight" + std::to_string(e), float(10 + e));
    }
    return s;
}

std::map<std::string, float> values(const CheckpointState& s) {
    std::map<std::string, float> out;
    for (const auto& [name, t] : s.model) out[name] = *t.local.data<float>();
    return out;
}

TEST(ExpertFiles, EachRankKeepsItsExpertsRenumberedAndJoiningGivesTheModel) {
    const CheckpointState whole = moe_state();
    const CheckpointState second = expert_rank_state(whole, 2, 1);
    EXPECT_EQ(values(second),
              (std::map<std::string, float>{
                  {"decoder.layers.0.mlp.router.weight", -1},
                  {"decoder.layers.0.mlp.experts.local_experts.0.linear_fc1.weight", 2},
                  {"decoder.layers.0.mlp.experts.local_experts.1.linear_fc1.weight", 3},
                  {"decoder.layers.1.mlp.experts.linear_fc2.weight0", 12},
                  {"decoder.layers.1.mlp.experts.linear_fc2.weight1", 13}}));
    const CheckpointState joined = join_expert_ranks({expert_rank_state(whole, 2, 0), second});
    EXPECT_EQ(values(joined), values(whole));
    // A streamed rank makes each of its tensors with the whole state's maker.
    StreamedState streamed{whole, [&](size_t i) { return whole.model[i].second.local; }};
    const StreamedState part = expert_rank_state(streamed, 4, 3);
    ASSERT_EQ(part.state.model.size(), 3u);
    EXPECT_EQ(part.state.model[1].first,
              "decoder.layers.0.mlp.experts.local_experts.0.linear_fc1.weight");
    EXPECT_EQ(*part.make(1).data<float>(), 3.f);
    EXPECT_EQ(*part.make(2).data<float>(), 13.f);
}

TEST(ExpertFiles, OptimizerStatesFollowTheirExperts) {
    CheckpointState whole = moe_state();
    whole.optimizer.emplace();
    for (const auto& [name, t] : whole.model) {
        OptimizerParamState p;
        p.name = name;
        p.exp_avg = t.local;
        p.expert_parallel = name.find(".mlp.experts.") != std::string::npos;
        whole.optimizer->params.push_back(p);
    }
    const CheckpointState second = expert_rank_state(whole, 2, 1);
    ASSERT_TRUE(second.optimizer);
    ASSERT_EQ(second.optimizer->params.size(), second.model.size());
    for (size_t i = 0; i < second.model.size(); ++i) {
        EXPECT_EQ(second.optimizer->params[i].name, second.model[i].first);
        EXPECT_EQ(*second.optimizer->params[i].exp_avg.data<float>(),
                  *second.model[i].second.local.data<float>());
    }
    const CheckpointState joined = join_expert_ranks({expert_rank_state(whole, 2, 0), second});
    ASSERT_TRUE(joined.optimizer);
    std::map<std::string, float> moments;
    for (const OptimizerParamState& p : joined.optimizer->params)
        moments[p.name] = *p.exp_avg.data<float>();
    EXPECT_EQ(moments, values(whole));
    EXPECT_THROW(join_expert_ranks({expert_rank_state(whole, 2, 0), expert_rank_state(
                                                                        moe_state(), 2, 1)}),
                 Error);
}

TEST(ExpertFiles, UnevenSplitsAreErrors) {
    CheckpointState whole = moe_state();
    EXPECT_THROW(expert_rank_state(whole, 3, 0), Error);
    CheckpointState no_experts;
    EXPECT_THROW(expert_rank_state(no_experts, 2, 0), Error);
}

}  // namespace
}  // namespace mt::plugins::torch_ckpt
