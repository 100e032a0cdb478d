// The gpt model family: configuration from Megatron's flags and the parameter list, checked
// against Megatron-core's own GPTModel state dict (tests/fixtures/gpt/make_fixtures.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <boost/program_options.hpp>

#include "mt/checkpoint/checkpoint_args.h"
#include "mt/cli/flags.h"
#include "mt/cli/megatron_flags.h"
#include "mt/nn/transformer_args.h"
#include "mt/registry.h"
#include "register.h"
#include "test_support.h"

namespace mt::plugins::gpt {
namespace {

// The family's parameter list (stated once, by the modules).
std::vector<ParameterInfo> family_parameters(const ModelArgs& args) {
    Registry registry;
    register_gpt(registry);
    return registry.create_model("gpt")->parameters(args);
}

struct Expected {
    ModelArgs args;
    std::vector<std::pair<std::string, Shape>> params;
};

std::vector<Expected> load_fixture() {
    std::ifstream in(mt::test::fixtures_dir() / "gpt" / "parameters.txt");
    EXPECT_TRUE(in) << "missing tests/fixtures/gpt/parameters.txt";
    std::vector<Expected> out;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream s(line);
        std::string first, rest;
        s >> first;
        if (first == "config") {
            out.emplace_back();
            while (s >> rest) {
                auto eq = rest.find('=');
                out.back().args[rest.substr(0, eq)] = rest.substr(eq + 1);
            }
            continue;
        }
        s >> rest;
        Shape shape;
        std::istringstream dims(rest);
        std::string d;
        while (std::getline(dims, d, ',')) shape.push_back(std::stoll(d));
        out.back().params.emplace_back(first, shape);
    }
    return out;
}

TEST(GptParameters, EqualMegatronCoreStateDict) {
    auto cases = load_fixture();
    ASSERT_EQ(cases.size(), 3u);
    for (const auto& c : cases) {
        auto params = family_parameters(c.args);
        ASSERT_EQ(params.size(), c.params.size());
        for (size_t i = 0; i < params.size(); ++i) {
            EXPECT_EQ(params[i].name, c.params[i].first) << "entry " << i;
            EXPECT_EQ(params[i].shape, c.params[i].second) << params[i].name;
        }
    }
}

TEST(GptParameters, ShardSpecsAndWeightDecay) {
    ModelArgs args = {{"num-layers", "1"},           {"hidden-size", "64"},
                      {"num-attention-heads", "4"},  {"max-position-embeddings", "16"},
                      {"vocab-size", "100"},         {"swiglu", ""},
                      {"group-query-attention", ""}, {"num-query-groups", "2"},
                      {"transformer-impl", "local"}};
    std::map<std::string, ParameterInfo> by_name;
    for (auto& p : family_parameters(args)) by_name[p.name] = p;
    using Kind = ShardSpec::Kind;
    const std::map<std::string, ShardSpec> expected = {
        // QKV rows are grouped per query group: each rank holds whole groups.
        {"decoder.layers.0.self_attention.linear_qkv.weight", {Kind::column, 0, 2, false}},
        {"decoder.layers.0.self_attention.linear_qkv.bias", {Kind::column, 0, 2, false}},
        {"decoder.layers.0.self_attention.linear_proj.weight", {Kind::row, 1, 1, false}},
        {"decoder.layers.0.self_attention.linear_proj.bias", {}},
        // SwiGLU's fc1 is [gate; up]: each rank holds its slice of both halves.
        {"decoder.layers.0.mlp.linear_fc1.weight", {Kind::column, 0, 2, true}},
        {"decoder.layers.0.mlp.linear_fc1.bias", {Kind::column, 0, 2, true}},
        {"decoder.layers.0.mlp.linear_fc2.weight", {Kind::row, 1, 1, false}},
        {"decoder.layers.0.mlp.linear_fc2.bias", {}},
        {"decoder.layers.0.input_layernorm.weight", {}},
        {"embedding.word_embeddings.weight", {Kind::vocab, 0, 1, false}},
        {"embedding.position_embeddings.weight", {}},
        {"decoder.final_layernorm.weight", {}}};
    for (const auto& [name, spec] : expected) {
        ASSERT_TRUE(by_name.count(name)) << name;
        EXPECT_TRUE(by_name.at(name).shard == spec) << name;
    }
    auto& qkv = by_name.at("decoder.layers.0.self_attention.linear_qkv.weight");
    EXPECT_EQ(qkv.shape, (Shape{(4 + 2 * 2) * 16, 64}));
    auto& fc1 = by_name.at("decoder.layers.0.mlp.linear_fc1.weight");
    EXPECT_EQ(by_name.at("embedding.word_embeddings.weight").shape[0], 128);
    EXPECT_TRUE(by_name.at("embedding.word_embeddings.weight").weight_decay);
    EXPECT_TRUE(fc1.weight_decay);
    EXPECT_FALSE(by_name.at("decoder.layers.0.input_layernorm.weight").weight_decay);
    EXPECT_FALSE(by_name.at("decoder.layers.0.mlp.linear_fc1.bias").weight_decay);
}

TEST(TransformerArgs, MegatronDerivedValues) {
    EXPECT_EQ(nn::padded_vocab_size(50257, 128, 1), 50304);
    EXPECT_EQ(nn::padded_vocab_size(50257, 128, 2), 50432);
    EXPECT_EQ(nn::padded_vocab_size(50257, 128, 8), 51200);
    // Sizes whose padding would wrap int64, or beyond an int32 token id, are errors.
    for (auto [vocab, divisor] :
         {std::pair{int64_t(50257), int64_t(1) << 62}, std::pair{int64_t(1) << 58, int64_t(128)},
          std::pair{int64_t(2147483000), int64_t(4096)}}) {
        const std::string e = mt::test::error_of([&] { nn::padded_vocab_size(vocab, divisor, 2); });
        EXPECT_NE(e.find("(token ids are int32)"), std::string::npos) << e;
    }
    ModelArgs args = {{"num-layers", "2"},
                      {"hidden-size", "4096"},
                      {"num-attention-heads", "32"},
                      {"max-position-embeddings", "4096"},
                      {"padded-vocab-size", "32000"},
                      {"swiglu", ""}};
    auto c = nn::read_transformer_args(args);
    EXPECT_EQ(c.ffn_hidden_size, 10880);  // int(4h·2/3 / 64)·64
    EXPECT_EQ(c.kv_channels, 128);
    EXPECT_EQ(c.num_query_groups, 32);
    EXPECT_EQ(c.seq_length, 4096);
    EXPECT_EQ(c.padded_vocab_size, 32000);
}

TEST(TransformerArgs, ErrorsNameTheFlag) {
    ModelArgs base = {{"num-layers", "2"},
                      {"hidden-size", "64"},
                      {"num-attention-heads", "4"},
                      {"max-position-embeddings", "32"},
                      {"vocab-size", "100"}};
    auto error_with = [&](const std::string& k, const std::string& v) {
        ModelArgs a = base;
        if (v == "<erase>")
            a.erase(k);
        else
            a[k] = v;
        return mt::test::error_of([&] { nn::read_transformer_args(a); });
    };
    EXPECT_NE(error_with("num-layers", "<erase>").find("--num-layers is required"),
              std::string::npos);
    EXPECT_NE(error_with("hidden-size", "6x").find("--hidden-size 6x: not an integer"),
              std::string::npos);
    EXPECT_NE(
        error_with("num-attention-heads", "5").find("must be divisible by --num-attention-heads"),
        std::string::npos);
    EXPECT_NE(error_with("seq-length", "64")
                  .find("--max-position-embeddings (32) must be >= --seq-length (64)"),
              std::string::npos);
    EXPECT_NE(error_with("normalization", "BatchNorm").find("--normalization BatchNorm"),
              std::string::npos);
    EXPECT_NE(error_with("swiglu", "yes").find("--swiglu takes no value"), std::string::npos);
    // Zero or negative sizes (as a checkpoint's args may carry) are errors, not divisions by 0.
    EXPECT_NE(error_with("tensor-model-parallel-size", "0")
                  .find("--tensor-model-parallel-size must be positive, got 0"),
              std::string::npos);
    EXPECT_NE(error_with("seq-length", "0").find("--seq-length must be positive, got 0"),
              std::string::npos);
    EXPECT_NE(error_with("kv-channels", "-4").find("--kv-channels must be positive, got -4"),
              std::string::npos);
    EXPECT_NE(error_with("hidden-dropout", "1.5").find("must be in [0, 1)"), std::string::npos);
    // core_v0.19's --padded-vocab-size is the embedding's rows as given, not below the tokenizer's.
    EXPECT_NE(error_with("padded-vocab-size", "64")
                  .find("padded vocabulary (64) smaller than the vocabulary (100)"),
              std::string::npos);
    ModelArgs given = base;
    given["padded-vocab-size"] = "136";  // not a multiple of 128: used as it is
    EXPECT_EQ(nn::read_transformer_args(given).padded_vocab_size, 136);
    EXPECT_EQ(nn::read_transformer_args(given).vocab_size, 100);
    EXPECT_EQ(nn::read_transformer_args(base).padded_vocab_size, 128);
}

// The activation follows Megatron's flags, and a checkpoint's args reach the same flags: a
// model shape we cannot build yet is an error, never a silently different model.
TEST(TransformerArgs, ActivationAndModelShapesFromCheckpointArgs) {
    const ModelArgs base = {{"num-layers", "2"},
                            {"hidden-size", "64"},
                            {"num-attention-heads", "4"},
                            {"max-position-embeddings", "32"},
                            {"vocab-size", "100"}};
    auto from_ckpt = [&](std::vector<std::pair<std::string, ArgValue>> extra) {
        CheckpointArgs args = {
            {"num_layers", int64_t(2)},          {"hidden_size", int64_t(64)},
            {"num_attention_heads", int64_t(4)}, {"max_position_embeddings", int64_t(32)},
            {"vocab_size", int64_t(100)},        {"add_bias_linear", true},
            {"bias_gelu_fusion", true}};
        for (auto& [k, v] : extra) set_arg(args, k, v);
        return model_args_from_checkpoint(args, nn::transformer_flags());
    };
    EXPECT_TRUE(nn::read_transformer_args(from_ckpt({})).bias_gelu_fusion);  // tanh GeLU
    EXPECT_FALSE(
        nn::read_transformer_args(from_ckpt({{"bias_gelu_fusion", false}})).bias_gelu_fusion);
    EXPECT_FALSE(
        nn::read_transformer_args(from_ckpt({{"add_bias_linear", false}})).bias_gelu_fusion);
    EXPECT_TRUE(nn::read_transformer_args(from_ckpt({{"squared_relu", true}})).squared_relu);
    const nn::TransformerArgs rope =
        nn::read_transformer_args(from_ckpt({{"use_rope_scaling", true},
                                             {"rope_scaling_factor", 32.0},
                                             {"rotary_interleaved", true},
                                             {"rotary_seq_len_interpolation_factor", int64_t(2)},
                                             {"qk_layernorm", true}}));
    EXPECT_TRUE(rope.use_rope_scaling && rope.rotary_interleaved && rope.qk_layernorm);
    EXPECT_EQ(rope.rope_scaling_factor, 32.0);
    EXPECT_EQ(rope.rotary_seq_len_interpolation_factor, 2.0);
    const nn::TransformerArgs plain = nn::read_transformer_args(from_ckpt(
        {{"rope_scaling_factor", 8.0}, {"rotary_seq_len_interpolation_factor", ArgValue()}}));
    EXPECT_FALSE(plain.use_rope_scaling || plain.rotary_interleaved || plain.qk_layernorm);
    EXPECT_EQ(plain.rotary_seq_len_interpolation_factor, 0.0);
    ModelArgs both = base;
    both["squared-relu"] = both["swiglu"] = "";
    EXPECT_NE(
        mt::test::error_of([&] { nn::read_transformer_args(both); }).find("exclude each other"),
        std::string::npos);
}

TEST(GptFamily, RegisteredAsGpt) {
    Registry registry;
    register_gpt(registry);
    auto family = registry.create_model("gpt");
    EXPECT_EQ(family->name(), "gpt");
    ModelArgs args = {{"num-layers", "1"},
                      {"hidden-size", "8"},
                      {"num-attention-heads", "2"},
                      {"max-position-embeddings", "4"},
                      {"vocab-size", "10"}};
    EXPECT_EQ(family->parameters(args).size(), 2u + 12u + 2u);
}

TEST(GptFamily, ResolvedArgsCarryMegatronsDerivedValues) {
    Registry registry;
    register_gpt(registry);
    auto family = registry.create_model("gpt");
    ModelArgs args = {{"num-layers", "2"},           {"hidden-size", "96"},
                      {"num-attention-heads", "6"},  {"max-position-embeddings", "32"},
                      {"vocab-size", "1000"},        {"swiglu", ""},
                      {"group-query-attention", ""}, {"num-query-groups", "3"}};
    ModelArgs r = family->resolved_args(args);
    EXPECT_EQ(r.at("ffn-hidden-size"), "256");  // int(4·96·2/3 / 64)·64
    EXPECT_EQ(r.at("kv-channels"), "16");
    EXPECT_EQ(r.at("num-query-groups"), "3");
    EXPECT_EQ(r.at("seq-length"), "32");
    EXPECT_EQ(r.at("padded-vocab-size"), "1024");
    args.erase("group-query-attention");
    EXPECT_EQ(family->resolved_args(args).at("num-query-groups"), "3");  // as given, unused
}

TEST(GptFamily, FlagsParseFromACommandLine) {
    namespace po = boost::program_options;
    const auto flags = nn::transformer_flags();
    auto group = mt::cli::model_flags("Model", flags);
    const char* argv[] = {"megatron-train",
                          "--num-layers",
                          "3",
                          "--hidden-size",
                          "32",
                          "--num-attention-heads",
                          "4",
                          "--max-position-embeddings",
                          "16",
                          "--swiglu",
                          "--normalization",
                          "RMSNorm"};
    po::variables_map vm;
    po::store(po::parse_command_line(int(std::size(argv)), argv, group), vm);
    po::notify(vm);
    ModelArgs args = mt::cli::collect_model_args(vm, flags);
    EXPECT_EQ(args.at("num-layers"), "3");
    EXPECT_EQ(args.at("swiglu"), "");
    EXPECT_EQ(args.count("disable-bias-linear"), 0u);  // switches that are off are absent
    EXPECT_EQ(args.at("hidden-dropout"), "0.1");       // defaults are filled in
    args["vocab-size"] = "100";
    auto c = nn::read_transformer_args(args);
    EXPECT_EQ(c.num_layers, 3);
    EXPECT_TRUE(c.swiglu);
    EXPECT_EQ(c.normalization, nn::Normalization::rms_norm);
    // Every flag the parser reads is offered.
    for (const char* name :
         {"ffn-hidden-size", "kv-channels", "rotary-base", "norm-epsilon",
          "untie-embeddings-and-output-weights", "init-method-std", "padded-vocab-size"})
        EXPECT_NE(std::find_if(flags.begin(), flags.end(),
                               [&](const FlagInfo& f) { return f.name == name; }),
                  flags.end())
            << name;
}

}  // namespace
}  // namespace mt::plugins::gpt
