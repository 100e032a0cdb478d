// Megatron's legacy BERT checkpoints (tests/fixtures/bert/make_legacy_bert_checkpoint.py, made
// with Megatron's own legacy BertModel): the published BERT-345M's layout (release directory,
// language_model.transformer, .attention., *layernorm, no checkpoint_version, so QKV rows in
// version 0's [3, heads, head_dim] order, minimal args) reads into the bert family's names with
// every tensor the fixture's formula weight, and the model gives Megatron's legacy model's own
// losses; saved with use_legacy_models it is today's legacy layout, key for key and in order as
// Megatron's state_dict_for_save_checkpoint lists it, and reads back to the same tensors.
#include <gtest/gtest.h>

#include <fstream>

#include "formula_weights.h"
#include "model_reference.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/checkpoint/model_weights.h"
#include "mt/checkpoint/reshard.h"
#include "mt/io/torch_file.h"
#include "mt/nn/dropout.h"
#include "mt/nn/parameter.h"
#include "mt/registry.h"
#include "same_bytes.h"
#include "test_support.h"
#include "torch_checkpoint.h"

namespace mt::plugins::torch_ckpt {
namespace {

namespace fs = std::filesystem;
using mt::test::TempDir;

fs::path fixture() {
    return mt::test::fixtures_dir() / "bert" / "legacy_bert";
}

Tensor i64(const std::vector<double>& values, const Shape& shape) {
    Tensor t = Tensor::empty(shape, DType::i64);
    for (size_t i = 0; i < values.size(); ++i) t.data<int64_t>()[i] = int64_t(values[i]);
    return t;
}

const Tensor* find_tensor(const CheckpointState& s, const std::string& name) {
    for (const auto& [n, t] : s.model)
        if (n == name || n == other_impl_name(name)) return &t.local;
    return nullptr;
}

// Flattened "a.b.c" keys of the tensors in nested dicts, in order.
void flat_keys(const io::PyValue& dict, const std::string& prefix, std::vector<std::string>& out) {
    for (const auto& [k, v] : dict.dict_ref().items) {
        if (v.kind() == io::PyKind::dict)
            flat_keys(v, prefix + k.as_string() + ".", out);
        else if (v.kind() == io::PyKind::tensor)
            out.push_back(prefix + k.as_string());
    }
}

TEST(BertLegacy, ReleaseCheckpointReadsUnderBertNamesWithMegatronsLosses) {
    TorchCheckpoint format;
    const CheckpointState state = format.load(fixture());
    EXPECT_EQ(state.iteration, 0);
    const auto ref = mt::test::load_model_reference("bert/legacy_bert_expected.txt");
    // The checkpoint's own (minimal) args describe the model the fixture's config names.
    auto family = Registry::global().create_model("bert");
    ModelArgs args = model_args_from_checkpoint(state.args, family->flags());
    for (const auto& [flag, value] : ref.args)
        if (flag != "hidden-dropout" && flag != "attention-dropout" && flag != "seq-length") {
            EXPECT_EQ(args[flag], value) << flag;
        }
    args["hidden-dropout"] = args["attention-dropout"] = "0";

    BuildContext context = single_process_context();
    context.params_dtype = DType::f64;
    auto model = family->build(args, context);
    const auto params = model->parameters();
    EXPECT_EQ(state.model.size(), params.size());
    for (nn::Parameter* p : params) {
        const Tensor* loaded = find_tensor(state, p->name);
        ASSERT_TRUE(loaded) << p->name;
        mt::test::fill_formula_weight(*p);
        ASSERT_EQ(loaded->shape(), p->value.shape()) << p->name;
        const Tensor want = cast_float(p->value, DType::f32);
        EXPECT_TRUE(same_bytes(*loaded, want)) << p->name;
    }

    CheckpointState f64 = state;
    for (auto& [name, t] : f64.model) t = ShardedTensor::whole(cast_float(t.local, DType::f64));
    load_model_weights(f64, *model, WeightLoad::copy);
    const auto& v = ref.vectors;
    const int64_t B = 2, T = 16;
    const Batch batch = {{"text", i64(v.at("text"), {B, T})},
                         {"types", i64(v.at("types"), {B, T})},
                         {"padding_mask", i64(v.at("padding_mask"), {B, T})},
                         {"labels", i64(v.at("labels"), {B, T})},
                         {"loss_mask", i64(std::vector<double>(size_t(B * T), 1.0), {B, T})},
                         {"is_random", i64(v.at("is_random"), {B})}};
    nn::DropoutContext no_dropout{false, 0, 0};
    const Losses losses = model->forward(batch, no_dropout, nullptr);
    ASSERT_EQ(losses.size(), 2u);
    // Megatron's fused bias-GeLU rounds sqrt(2 / pi) to 0.79788456. Padded positions are left
    // out: Megatron's [b, 1, s, s] padding mask also masks their queries (whose states never
    // reach an unpadded position, nor a loss), ours only the keys.
    for (int64_t i = 0; i < B * T; ++i)
        if (v.at("padding_mask")[size_t(i)] != 0) {
            EXPECT_TRUE(mt::test::close_to(mt::test::element(losses[0].values, i),
                                           v.at("lm_losses")[size_t(i)], 0, 1e-7))
                << "lm loss " << i;
        }
    for (int64_t b = 0; b < B; ++b)
        EXPECT_TRUE(mt::test::close_to(mt::test::element(losses[1].values, b),
                                       v.at("sop_losses")[size_t(b)], 0, 1e-7))
            << "sop loss " << b;
}

TEST(BertLegacy, LegacySaveIsMegatronsLayoutAndReadsBack) {
    TorchCheckpoint format;
    CheckpointState state = format.load(fixture());
    set_arg(state.args, "use_legacy_models", true);
    TempDir dir;
    format.save(dir.path(), state);
    const io::PyValue root = io::load_torch_file(dir / "release/mp_rank_00/model_optim_rng.pt");
    std::vector<std::string> keys, megatron;
    flat_keys(root["model"], "", keys);
    std::ifstream in(mt::test::fixtures_dir() / "bert" / "legacy_bert_keys.txt");
    for (std::string line; std::getline(in, line);) megatron.push_back(line);
    EXPECT_EQ(keys, megatron);
    EXPECT_EQ(root["checkpoint_version"].as_double(), 3.0);

    const CheckpointState back = format.load(dir.path());
    ASSERT_EQ(back.model.size(), state.model.size());
    for (const auto& [name, t] : state.model) {
        const Tensor* got = find_tensor(back, name);
        ASSERT_TRUE(got) << name;
        EXPECT_TRUE(same_bytes(*got, t.local)) << name;
    }
}

}  // namespace
}  // namespace mt::plugins::torch_ckpt
