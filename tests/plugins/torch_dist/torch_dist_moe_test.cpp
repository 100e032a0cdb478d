// Mixture-of-Experts models in the `torch_dist` format against checkpoints megatron-core
// core_v0.13 wrote (tests/fixtures/torch_dist/make_moe_fixtures.py): the experts' shared keys
// with an expert axis, whole whether saved at EP 1, EP 2 or TP 2 x EP 2, layers keyed alone
// when --moe-layer-freq is a list, our GPT's logits on those weights equal to Megatron's, and
// what we save carrying Megatron's keys, shapes and `_extra_state` objects exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "dcp_metadata.h"
#include "mt/checkpoint/model_weights.h"
#include "mt/checkpoint/reshard.h"
#include "mt/model.h"
#include "mt/registry.h"
#include "test_support.h"
#include "torch_checkpoint.h"
#include "torch_dist_checkpoint.h"
#include "torch_dist_test_support.h"

namespace mt::plugins::torch_dist {
namespace {

namespace fs = std::filesystem;
using mt::test::TempDir;

// The flags of the models make_moe_fixtures.py builds.
ModelArgs moe_model_args(const std::string& model) {
    ModelArgs a{{"num-layers", "2"},
                {"hidden-size", "16"},
                {"num-attention-heads", "4"},
                {"seq-length", "16"},
                {"max-position-embeddings", "16"},
                {"vocab-size", "128"},
                {"normalization", "RMSNorm"},
                {"position-embedding-type", "rope"},
                {"ffn-hidden-size", "32"},
                {"group-query-attention", ""},
                {"num-query-groups", "2"},
                {"disable-bias-linear", ""},
                {"untie-embeddings-and-output-weights", ""},
                {"transformer-impl", "local"},
                {"num-experts", "4"},
                {"moe-ffn-hidden-size", "24"},
                {"moe-router-load-balancing-type", "none"}};
    if (model == "mixtral") {
        a.insert({{"swiglu", ""}, {"moe-router-topk", "2"}});
    } else {
        a.insert({{"moe-layer-freq", "[0,1]"},
                  {"moe-shared-expert-intermediate-size", "16"},
                  {"moe-router-topk", "1"},
                  {"moe-router-pre-softmax", ""}});
    }
    return a;
}

struct MoeSaved {
    std::string model;
    int tp, ep;
    std::string dir() const {
        return model + "_" + (tp > 1 ? "tp" + std::to_string(tp) + "_" : "") + "ep" +
               std::to_string(ep);
    }
};

class MegatronMoeCheckpoint : public ::testing::TestWithParam<MoeSaved> {};

TEST_P(MegatronMoeCheckpoint, LoadsEveryExpertWholeAsTheReference) {
    TorchDistCheckpoint format;
    const CheckpointState state = format.load(fixture(GetParam().dir()));
    const io::PyValue want = reference(GetParam().model)["state"];
    std::set<std::string> names;
    for (const auto& [name, t] : state.model) {
        names.insert(name);
        const io::PyValue* ref = want.find(name);
        ASSERT_NE(ref, nullptr) << "unexpected tensor " << name;
        EXPECT_TRUE(same_bytes(t.local, ref->as_tensor()))
            << name << ": " << t.local.describe() << " vs " << ref->as_tensor().describe();
    }
    EXPECT_EQ(names.size(), want.dict_ref().items.size()) << "a reference tensor is missing";
    EXPECT_TRUE(names.count("decoder.layers.1.mlp.experts.local_experts.3.linear_fc2.weight"));
    // Each layer's tensors together, in layer order.
    std::vector<int> layers;
    for (const auto& [name, t] : state.model)
        if (name.starts_with("decoder.layers.")) layers.push_back(name[15] - '0');
    EXPECT_TRUE(std::is_sorted(layers.begin(), layers.end()));
    EXPECT_EQ(*state.find_arg("expert_model_parallel_size"), ArgValue(int64_t(GetParam().ep)));
}

TEST_P(MegatronMoeCheckpoint, OurGptGivesMegatronsLogits) {
    TorchDistCheckpoint format;
    const CheckpointState state = format.load(fixture(GetParam().dir()));
    const io::PyValue ref = reference(GetParam().model);
    auto model = Registry::global().create_model("gpt")->build(moe_model_args(GetParam().model));
    load_model_weights(state, *model, WeightLoad::copy);
    EXPECT_LT(worst_difference(model->logits(ref["tokens"].as_tensor(), nullptr),
                               ref["logits"].as_tensor()),
              2e-5);
}

INSTANTIATE_TEST_SUITE_P(TorchDist, MegatronMoeCheckpoint,
                         ::testing::Values(MoeSaved{"mixtral", 1, 1}, MoeSaved{"mixtral", 1, 2},
                                           MoeSaved{"mixtral", 2, 2}, MoeSaved{"mixed", 1, 1},
                                           MoeSaved{"mixed", 1, 2}),
                         [](const auto& info) { return info.param.dir(); });

// The stored tensors (key -> global shape) and the object keys of a checkpoint; Megatron's RNG
// states are not ours.
struct Keys {
    std::map<std::string, Shape> tensors;
    std::set<std::string> objects;
};
Keys keys_of(const fs::path& dir) {
    Keys k;
    for (const DcpEntry& e : read_dcp_metadata(dir / "iter_0000007" / ".metadata").entries) {
        if (!e.bytes)
            k.tensors[e.fqn] = e.size;
        else if (!e.fqn.starts_with("rng_state/"))
            k.objects.insert(e.fqn);
    }
    return k;
}

TEST(TorchDistMoe, SavesMegatronsKeysShapesAndExtraStates) {
    TorchDistCheckpoint format;
    for (const std::string source : {"mixtral_ep1", "mixed_ep1"}) {
        CheckpointState state = format.load(fixture(source));
        TempDir dir;
        format.save(dir.path(), state);
        keep_for_megatron(dir.path(), source);
        const Keys ours = keys_of(dir.path()), megatrons = keys_of(fixture(source));
        EXPECT_EQ(ours.tensors, megatrons.tensors) << source;
        // Ours adds the attention core's and the final layernorm's (Transformer Engine's
        // TENorm), which the local spec lacks.
        std::set<std::string> objects = ours.objects;
        std::erase_if(objects, [](const std::string& k) {
            return k.find("core_attention._extra_state") != std::string::npos ||
                   k.starts_with("decoder.final_layernorm._extra_state");
        });
        EXPECT_EQ(objects, megatrons.objects) << source;
        expect_same_state(format.load(dir.path()), state);
    }
}

// Transformer Engine's MoE layers keep a pre_mlp_layernorm of their own (no fused fc1 norm to
// hold it), stored under that name; its grouped experts' weight<e> share SequentialMLP's keys.
TEST(TorchDistMoe, TransformerEngineNamesKeepTheirNormAndShareTheExpertKeys) {
    TorchDistCheckpoint format;
    CheckpointState state = format.load(fixture("mixtral_ep1"));
    state.optimizer.reset();
    CheckpointState te = state;
    for (auto& [name, t] : te.model) {
        if (auto at = name.find("mlp.linear_fc1.layer_norm_weight"); at != std::string::npos)
            name = name.substr(0, at) + "pre_mlp_layernorm.weight";
        const std::string experts = "mlp.experts.local_experts.";
        if (auto at = name.find(experts); at != std::string::npos) {
            const size_t dot = name.find('.', at + experts.size());
            const std::string e = name.substr(at + experts.size(), dot - at - experts.size());
            name = name.substr(0, at) + "mlp.experts." + name.substr(dot + 1) + e;
        }
    }
    ASSERT_NE(find(te, "decoder.layers.1.mlp.experts.linear_fc1.weight3"), nullptr);
    TempDir dir;
    format.save(dir.path(), te);
    Keys want = keys_of(fixture("mixtral_ep1"));
    std::erase_if(want.tensors, [](const auto& kv) { return kv.first.starts_with("optimizer."); });
    const Shape norm =
        want.tensors.extract("decoder.layers.mlp.linear_fc1.layer_norm_weight").mapped();
    want.tensors["decoder.layers.pre_mlp_layernorm.weight"] = norm;
    EXPECT_EQ(keys_of(dir.path()).tensors, want.tensors);
    // Read back under SequentialMLP's names, the norm under its own.
    const CheckpointState back = format.load(dir.path());
    for (const auto& [name, t] : state.model) {
        const ShardedTensor* got = find(back, name);
        if (!got)
            got = find(back,
                       name.substr(0, name.find("mlp.linear_fc1")) + "pre_mlp_layernorm.weight");
        ASSERT_NE(got, nullptr) << name;
        EXPECT_TRUE(same_bytes(got->local, t.local)) << name;
    }
}

// Megatron's optimizer state of mixtral after 3 Adam steps: at EP 1 one optimizer, at EP 2 its
// ChainedOptimizer (the dense groups', then the experts', keys behind chained_0. / chained_1.),
// both read as the reference's moments, the experts marked expert_parallel at EP 2 only; saved
// again, the chained one keeps Megatron's keys and common layout.
TEST(TorchDistMoe, ReadsAndWritesMegatronsChainedOptimizer) {
    TorchDistCheckpoint format;
    const io::PyValue want = reference("mixtral")["optimizer"];
    for (const std::string source : {"mixtral_ep1", "mixtral_ep2"}) {
        const CheckpointState state = format.load(fixture(source));
        ASSERT_TRUE(state.optimizer) << source << ": " << state.optimizer_not_loaded;
        const OptimizerCheckpoint& o = *state.optimizer;
        EXPECT_EQ(o.step, want["step"].as_int());
        EXPECT_EQ(o.lr, 9e-4);
        ASSERT_EQ(o.params.size(), state.model.size());
        for (const OptimizerParamState& p : o.params) {
            EXPECT_TRUE(same_bytes(p.exp_avg, want["exp_avg"][p.name].as_tensor())) << p.name;
            EXPECT_TRUE(same_bytes(p.exp_avg_sq, want["exp_avg_sq"][p.name].as_tensor())) << p.name;
            EXPECT_EQ(p.expert_parallel,
                      source == "mixtral_ep2" && p.name.find(".mlp.experts.") != std::string::npos)
                << source << " " << p.name;
        }
        TempDir dir;
        format.save(dir.path(), state);
        keep_for_megatron(dir.path(), source + "_optimizer");
        EXPECT_EQ(keys_of(dir.path()).tensors, keys_of(fixture(source)).tensors) << source;
        const CheckpointState back = format.load(dir.path());
        expect_same_state(back, state);
        for (size_t i = 0; i < o.params.size(); ++i)
            EXPECT_EQ(back.optimizer->params[i].expert_parallel, o.params[i].expert_parallel);
        // common.pt's optimizer: one FP32Optimizer's dict, or {0: dense, 1: experts}.
        const io::PyValue common = io::load_torch_file(dir / "iter_0000007" / "common.pt");
        const io::PyValue& opt = common["optimizer"];
        if (source == "mixtral_ep1") {
            EXPECT_NE(opt.find("param_groups"), nullptr);
            continue;
        }
        ASSERT_EQ(opt.dict_ref().items.size(), 2u);
        const io::PyValue& experts = opt.dict_ref().items[1].second;
        EXPECT_EQ(opt.dict_ref().items[1].first.as_int(), 1);
        ASSERT_EQ(experts["param_groups"].items().size(), 1u);
        EXPECT_TRUE(experts["param_groups"].items()[0]["is_expert_parallel"].as_bool());
    }
}

// The same state in Megatron's torch files at EP 2 (mp_rank_00_00E, each with its experts): each
// file's optimizer is the ChainedOptimizer's state_dict, a list of the dense parameters' and its
// experts' torch state dicts, numbered positionally in the model's parameter order; read back
// (the ranks joined) it is the state saved.
TEST(TorchDistMoe, TorchFilesKeepTheChainedOptimizerPerExpertRank) {
    TorchDistCheckpoint format;
    const CheckpointState loaded = format.load(fixture("mixtral_ep2"));
    ASSERT_TRUE(loaded.optimizer);
    // In the model's parameter order and names (--transformer-impl local), as megatron-train
    // captures it.
    CheckpointState state = loaded;
    state.model.clear();
    state.optimizer->params.clear();
    for (const ParameterInfo& p :
         Registry::global().create_model("gpt")->parameters(moe_model_args("mixtral"))) {
        size_t i = 0;
        while (i < loaded.model.size() && loaded.model[i].first != p.name &&
               loaded.model[i].first != other_impl_name(p.name))
            ++i;
        ASSERT_LT(i, loaded.model.size()) << p.name;
        state.model.emplace_back(p.name, loaded.model[i].second);
        state.optimizer->params.push_back(loaded.optimizer->params[i]);
        state.optimizer->params.back().name = p.name;
    }
    torch_ckpt::TorchCheckpoint torch;
    TempDir dir;
    CheckpointLayout layout;
    layout.expert_parallel = 2;
    torch.save_ranks(dir.path(), layout, [&](int64_t, int64_t) { return state; });
    keep_for_megatron(dir.path(), "mixtral_ep2_torch");
    const io::PyValue file =
        io::load_torch_file(dir / "iter_0000007" / "mp_rank_00_001" / "model_optim_rng.pt");
    const io::PyValue& chain = file["optimizer"];
    ASSERT_EQ(chain.items().size(), 2u);
    EXPECT_FALSE(chain.items()[0]["param_groups"].items()[0]["is_expert_parallel"].as_bool());
    EXPECT_TRUE(chain.items()[1]["param_groups"].items()[0]["is_expert_parallel"].as_bool());
    // Rank 1's two experts in each of two layers, fc1 and fc2.
    EXPECT_EQ(chain.items()[1]["state"].dict_ref().items.size(), 8u);
    const CheckpointState back = torch.load(dir.path());
    ASSERT_TRUE(back.optimizer);
    ASSERT_EQ(back.optimizer->params.size(), state.optimizer->params.size());
    for (const OptimizerParamState& want : state.optimizer->params) {
        auto got = std::find_if(back.optimizer->params.begin(), back.optimizer->params.end(),
                                [&](const auto& p) { return p.name == want.name; });
        ASSERT_NE(got, back.optimizer->params.end()) << want.name;
        EXPECT_TRUE(same_bytes(got->exp_avg, want.exp_avg)) << want.name;
        EXPECT_TRUE(same_bytes(got->exp_avg_sq, want.exp_avg_sq)) << want.name;
        EXPECT_EQ(got->expert_parallel, want.expert_parallel) << want.name;
    }
    EXPECT_EQ(back.optimizer->step, 3);
}

}  // namespace
}  // namespace mt::plugins::torch_dist
