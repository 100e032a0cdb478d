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
#include "mt/model.h"
#include "mt/registry.h"
#include "test_support.h"
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
    const Tensor logits = model->logits(ref["tokens"].as_tensor(), nullptr).contiguous();
    const Tensor& want = ref["logits"].as_tensor();
    ASSERT_EQ(logits.shape(), want.shape());
    double worst = 0;
    for (int64_t i = 0; i < want.numel(); ++i)
        worst = std::max(
            worst, std::fabs(double(logits.data<float>()[i]) - double(want.data<float>()[i])));
    EXPECT_LT(worst, 2e-5);
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
        // Ours adds the attention core's (Transformer Engine's), which the local spec lacks.
        std::set<std::string> objects = ours.objects;
        std::erase_if(objects, [](const std::string& k) {
            return k.find("core_attention._extra_state") != std::string::npos;
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

}  // namespace
}  // namespace mt::plugins::torch_dist
