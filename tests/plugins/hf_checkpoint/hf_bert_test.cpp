// Hugging Face BERT folders (tests/fixtures/hf/make_bert_fixtures.py): transformers'
// MegatronBertForPreTraining (Megatron's pre-LayerNorm BERT) and BertForPreTraining (the
// original post-LayerNorm one) read into the bert family's model give transformers' masked-LM and
// sentence-order losses, and saved again give the same folder tensor for tensor; a BERT without
// token types or the binary head is written as a *ForMaskedLM computing the same losses; what
// the mapping cannot represent is refused, naming the key.
#include <gtest/gtest.h>

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "hf_architecture.h"
#include "hf_checkpoint.h"
#include "hf_config.h"
#include "hf_fixtures.h"
#include "model_reference.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/checkpoint/model_weights.h"
#include "mt/nn/dropout.h"
#include "mt/registry.h"
#include "safetensors.h"
#include "test_support.h"

namespace mt::plugins::hf {
namespace {

namespace fs = std::filesystem;
using mt::test::error_of;
using mt::test::read_file;
using mt::test::TempDir;

Tensor i64(const std::vector<double>& values, const Shape& shape) {
    Tensor t = Tensor::empty(shape, DType::i64);
    for (size_t i = 0; i < values.size(); ++i) t.data<int64_t>()[i] = int64_t(values[i]);
    return t;
}

// The bert family's model for `args` with `state`'s weights on the reference batch: the
// per-position masked-LM losses and, with the binary head, the per-sample sentence-order ones.
Losses losses_of(const CheckpointState& state, const ModelArgs& args,
                 const mt::test::ModelReference& ref) {
    const auto& v = ref.vectors;
    const int64_t B = int64_t(v.at("is_random").size());
    const int64_t T = int64_t(v.at("text").size()) / B;
    auto model = Registry::global().create_model("bert")->build(args);
    load_model_weights(state, *model, WeightLoad::copy);
    const Batch batch = {{"text", i64(v.at("text"), {B, T})},
                         {"types", i64(v.at("types"), {B, T})},
                         {"padding_mask", i64(v.at("padding_mask"), {B, T})},
                         {"labels", i64(v.at("labels"), {B, T})},
                         {"loss_mask", i64(std::vector<double>(size_t(B * T), 1.0), {B, T})},
                         {"is_random", i64(v.at("is_random"), {B})}};
    nn::DropoutContext no_dropout{false, 0, 0};
    return model->forward(batch, no_dropout, nullptr);
}

void expect_losses(const Tensor& got, const std::vector<double>& want, const std::string& what) {
    ASSERT_EQ(got.numel(), int64_t(want.size())) << what;
    for (size_t i = 0; i < want.size(); ++i)
        EXPECT_TRUE(mt::test::close_to(mt::test::element(got, int64_t(i)), want[i], 1.0, 1e-5))
            << what << " " << i << ": " << mt::test::element(got, int64_t(i)) << " vs " << want[i];
}

class HfBert : public ::testing::TestWithParam<const char*> {};

TEST_P(HfBert, GivesTransformersLosses) {
    const std::string name = GetParam();
    const bool post = name == "bert";
    const HfConfig config = read_hf_config(fixture(name));
    EXPECT_EQ(config.arch, &bert_architecture());
    EXPECT_TRUE(config.bert.binary_head);
    EXPECT_EQ(config.bert.post_layer_norm, post);
    const ModelArgs args = hf_model_args(config);
    EXPECT_EQ(args.count("no-bias-gelu-fusion"), 1u);  // hidden_act gelu: the erf GeLU
    EXPECT_EQ(args.count("apply-residual-connection-post-layernorm"), post ? 1u : 0u);
    EXPECT_EQ(args.count("bert-no-binary-head"), 0u);
    EXPECT_EQ(args.at("num-tokentypes"), post ? "3" : "2");
    EXPECT_EQ(args.at("norm-epsilon"), "9.9999999999999998e-13");  // layer_norm_eps 1e-12

    HfCheckpoint format;
    const CheckpointState state = format.load(fixture(name));
    // The folder's args build the same model as config.json's flags.
    EXPECT_EQ(
        model_args_from_checkpoint(state.args, Registry::global().create_model("bert")->flags()),
        [&] {
            ModelArgs a = args;
            a["padded-vocab-size"] = a.at("vocab-size");
            return a;
        }());
    const auto ref = mt::test::load_model_reference("hf/" + name + "_expected.txt");
    const Losses losses = losses_of(state, args, ref);
    ASSERT_EQ(losses.size(), 2u);
    expect_losses(losses[0].values, ref.vectors.at("lm_losses"), name + " lm loss");
    expect_losses(losses[1].values, ref.vectors.at("sop_losses"), name + " sop loss");
}

TEST_P(HfBert, SavedAgainGivesTheSameFolder) {
    const std::string name = GetParam();
    TempDir dir;
    HfCheckpoint format;
    format.save(dir / "out", format.load(fixture(name)));
    const SafetensorsFile want(fixture(name) / "model.safetensors");
    const SafetensorsFile got(dir / "out" / "model.safetensors");
    ASSERT_EQ(got.entries().size(), want.entries().size());
    for (const SafetensorsEntry& e : want.entries()) {
        ASSERT_TRUE(got.find(e.name)) << e.name;
        const Tensor a = want.read(e.name), b = got.read(e.name);
        ASSERT_EQ(a.shape(), b.shape()) << e.name;
        EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), size_t(a.nbytes())), 0) << e.name;
    }
    const HfConfig a = read_hf_config(fixture(name)), b = read_hf_config(dir / "out");
    EXPECT_EQ(b.model_type, a.model_type);
    EXPECT_EQ(b.num_layers, a.num_layers);
    EXPECT_EQ(b.hidden_size, a.hidden_size);
    EXPECT_EQ(b.num_heads, a.num_heads);
    EXPECT_EQ(b.ffn_hidden_size, a.ffn_hidden_size);
    EXPECT_EQ(b.vocab_size, a.vocab_size);
    EXPECT_EQ(b.max_position_embeddings, a.max_position_embeddings);
    EXPECT_EQ(b.norm_epsilon, a.norm_epsilon);
    EXPECT_EQ(b.tied, a.tied);
    EXPECT_EQ(b.bert.tokentypes, a.bert.tokentypes);
    EXPECT_EQ(b.bert.binary_head, a.bert.binary_head);
    EXPECT_EQ(b.bert.post_layer_norm, a.bert.post_layer_norm);
    const std::string config = read_file(dir / "out" / "config.json");
    EXPECT_NE(
        config.find(name == "bert" ? "\"BertForPreTraining\"" : "\"MegatronBertForPreTraining\""),
        std::string::npos)
        << config;
    EXPECT_NE(config.find("\"hidden_act\": \"gelu\""), std::string::npos) << config;
    // transformers writes no generation config for BERT.
    EXPECT_FALSE(fs::exists(dir / "out" / "generation_config.json"));
}

INSTANTIATE_TEST_SUITE_P(Folders, HfBert, ::testing::Values("megatron_bert", "bert"));

TEST(HfBertTokenizer, TheFoldersVocabularyTravelsBothWays) {
    HfCheckpoint format;
    const CheckpointState state = format.load(fixture("megatron_bert"));
    // tokenizer_config.json says do_lower_case false.
    const ArgValue* type = state.find_arg("tokenizer_type");
    ASSERT_TRUE(type);
    EXPECT_EQ(std::get<std::string>(*type), "BertWordPieceCase");
    EXPECT_EQ(std::get<std::string>(*state.find_arg("vocab_file")),
              fs::absolute(fixture("megatron_bert") / "vocab.txt").string());
    TempDir dir;
    format.save(dir / "out", state);
    EXPECT_EQ(read_file(dir / "out" / "vocab.txt"),
              read_file(fixture("megatron_bert") / "vocab.txt"));
    simdjson::dom::parser parser;
    const simdjson::dom::element tok =
        parser.load((dir / "out" / "tokenizer_config.json").string());
    EXPECT_EQ(std::string_view(tok["tokenizer_class"].get_string()), "BertTokenizer");
    EXPECT_FALSE(bool(tok["do_lower_case"].get_bool()));
}

// A --bert-no-binary-head model without token types (pretrain_bert.py's): transformers' BERT
// always has a token-type embedding, so one zero row (adding nothing) is written, and the
// folder, a MegatronBertForMaskedLM, computes the same masked-LM losses.
TEST(HfBertMaskedLm, WithoutTokenTypesOrBinaryHeadComputesTheSame) {
    HfCheckpoint format;
    const CheckpointState full = format.load(fixture("megatron_bert"));
    CheckpointState state = full;
    state.model.clear();
    for (const auto& [name, t] : full.model)
        if (name != "embedding.tokentype_embeddings.weight" && !name.starts_with("binary_head.") &&
            !name.starts_with("pooler."))
            state.model.emplace_back(name, t);
    set_arg(state.args, "bert_binary_head", false);
    set_arg(state.args, "num_tokentypes", int64_t(0));
    ModelArgs args = hf_model_args(read_hf_config(fixture("megatron_bert")));
    args["bert-no-binary-head"] = "";
    args["num-tokentypes"] = "0";
    // Token type 0 everywhere, as transformers assumes without token_type_ids.
    auto ref = mt::test::load_model_reference("hf/megatron_bert_expected.txt");
    std::fill(ref.vectors.at("types").begin(), ref.vectors.at("types").end(), 0.0);
    const Losses before = losses_of(state, args, ref);
    ASSERT_EQ(before.size(), 1u);

    TempDir dir;
    format.save(dir / "out", state);
    const HfConfig config = read_hf_config(dir / "out");
    EXPECT_FALSE(config.bert.binary_head);
    EXPECT_EQ(config.bert.tokentypes, 1);
    EXPECT_NE(read_file(dir / "out" / "config.json").find("\"MegatronBertForMaskedLM\""),
              std::string::npos);
    const SafetensorsFile file(dir / "out" / "model.safetensors");
    EXPECT_FALSE(file.find("cls.seq_relationship.weight"));
    EXPECT_FALSE(file.find("bert.pooler.dense.weight"));
    const Tensor types = file.read("bert.embeddings.token_type_embeddings.weight");
    EXPECT_EQ(types.shape(), (Shape{1, 32}));
    for (int64_t i = 0; i < types.numel(); ++i) EXPECT_EQ(types.data<float>()[i], 0.0f);

    const Losses after = losses_of(format.load(dir / "out"), hf_model_args(config), ref);
    ASSERT_EQ(after.size(), 1u);
    for (int64_t i = 0; i < before[0].values.numel(); ++i)
        EXPECT_EQ(mt::test::element(after[0].values, i), mt::test::element(before[0].values, i))
            << i;
}

TEST(HfBertRefusals, WhatTheMappingCannotRepresentIsNamed) {
    TempDir dir;
    // A tanh GeLU: Megatron's BertLMHead would still use erf, transformers' would not.
    fs::copy(fixture("megatron_bert"), dir / "tanh", fs::copy_options::recursive);
    std::string config = read_file(dir / "tanh" / "config.json");
    config.replace(config.find("\"gelu\""), 6, "\"gelu_new\"");
    mt::test::write_file(dir / "tanh" / "config.json", config);
    std::string e = error_of([&] { read_hf_config(dir / "tanh"); });
    EXPECT_NE(e.find("config.json: not supported yet: 'hidden_act' gelu_new"), std::string::npos)
        << e;

    // A bare encoder (MegatronBertModel): no masked-LM head to build the pretraining model.
    fs::create_directories(dir / "bare");
    fs::copy_file(fixture("megatron_bert") / "config.json", dir / "bare" / "config.json");
    write_safetensors(dir / "bare" / "model.safetensors", {{"embeddings.word_embeddings.weight",
                                                            Tensor::zeros({100, 32}, DType::f32)}});
    e = error_of([&] { read_hf_config(dir / "bare"); });
    EXPECT_NE(
        e.find((dir / "bare").string() + ": not supported yet: a BERT without the masked-LM head"),
        std::string::npos)
        << e;

    // Megatron's default fused bias-GeLU (tanh) in the layers, erf in the LM head.
    HfCheckpoint format;
    CheckpointState state = format.load(fixture("megatron_bert"));
    set_arg(state.args, "bias_gelu_fusion", true);
    e = error_of([&] { format.save(dir / "fused", state); });
    EXPECT_NE(e.find("not supported yet: bias_gelu_fusion=True in --saver hf"), std::string::npos)
        << e;
    EXPECT_FALSE(fs::exists(dir / "fused"));

    // A finetuned task model.
    state = format.load(fixture("megatron_bert"));
    state.model.emplace_back("classification_head.weight",
                             ShardedTensor::whole(Tensor::zeros({3, 32}, DType::f32)));
    e = error_of([&] { format.save(dir / "task", state); });
    EXPECT_NE(e.find("not supported yet: a finetuned BERT task model ('classification_head."
                     "weight') in --saver hf"),
              std::string::npos)
        << e;
}

}  // namespace
}  // namespace mt::plugins::hf
