// The `hf` checkpoint format: the Megatron flags config.json implies, and GPT-2 (Conv1D
// transposed, fused c_attn regrouped per head), Llama (GQA, rope_theta, sharded safetensors)
// and Mistral (bfloat16, tied embeddings) folders loaded into the GPT model giving
// transformers' per-token losses (tests/fixtures/hf/make_fixtures.py), also through
// restore_checkpoint into a --transformer-impl local model; registration (the plugin .so
// included); clear errors for configurations not supported yet, missing tensors, and saving a
// state without a model (hf_export_test.cpp tests saving).
#include <gtest/gtest.h>

#include <simdjson.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include "hf_checkpoint.h"
#include "hf_config.h"
#include "hf_fixtures.h"
#include "mt/nn/dropout.h"
#include "mt/nn/parameter.h"
#include "mt/registry.h"
#include "mt/train/checkpointing.h"
#include "register.h"
#include "test_support.h"

namespace mt::plugins::hf {
namespace {

namespace fs = std::filesystem;
using mt::test::error_of;
using mt::test::TempDir;

struct Expected {
    Tensor tokens, labels;
    std::map<std::string, std::vector<double>> losses;
};

// make_fixtures.py's expected.json, or make_qwen_fixtures.py's qwen_expected.json.
Expected read_expected(const std::string& file = "expected.json") {
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.load(fixture(file).string());
    Expected e{ids(doc["tokens"].get_array()), ids(doc["labels"].get_array()), {}};
    for (auto model : doc["models"].get_object())
        for (auto row : model.value["losses"].get_array())
            for (auto x : row.get_array())
                e.losses[std::string(model.key)].push_back(x.get_double());
    return e;
}

// Loads the folder and builds the model its config implies, the tensors copied in by name.
std::unique_ptr<Model> load_folder(const fs::path& dir) {
    const std::string name = dir.filename().string();
    HfCheckpoint format;
    EXPECT_TRUE(format.detect(dir));
    CheckpointState state = format.load(dir);
    auto model = Registry::global().create_model("gpt")->build(hf_model_args(read_hf_config(dir)));
    auto params = model->parameters();
    for (nn::Parameter* b : model->buffers()) params.push_back(b);  // a router's expert bias
    EXPECT_EQ(state.model.size(), params.size()) << name;
    for (nn::Parameter* p : params) {
        auto it = std::find_if(state.model.begin(), state.model.end(),
                               [&](const auto& entry) { return entry.first == p->name; });
        if (it == state.model.end()) {
            ADD_FAILURE() << name << ": no tensor for " << p->name;
            continue;
        }
        const Tensor src = it->second.local.contiguous();
        EXPECT_EQ(src.shape(), p->value.shape()) << p->name;
        if (src.shape() != p->value.shape()) continue;
        std::memcpy(p->value.raw_data(), src.raw_data(), size_t(src.numel()) * sizeof(float));
    }
    return model;
}

// The per-token losses of the folder's model on make_fixtures.py's ids.
std::vector<double> losses_of(const fs::path& dir, const Expected& e) {
    auto model = load_folder(dir);
    nn::DropoutContext ctx{false, 0, 0};
    const Tensor losses =
        loss_term(model->forward({{"tokens", e.tokens}, {"labels", e.labels}}, ctx, nullptr),
                  "lm loss")
            .values;
    std::vector<double> out(size_t(losses.numel()));
    for (size_t i = 0; i < out.size(); ++i) out[i] = losses.data<float>()[i];
    return out;
}

// The losses of folder `dir` (default: the fixture `name`) equal the file's for `name`.
void expect_losses(const std::string& name, const std::string& file = "expected.json",
                   const fs::path& dir = {}) {
    const Expected e = read_expected(file);
    const std::vector<double> got = losses_of(dir.empty() ? fixture(name) : dir, e);
    const std::vector<double>& want = e.losses.at(name);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 1e-4 * std::abs(want[i])) << name << " token " << i;
}

// The fixture folder `name` copied to `dir` with `from` in its config.json replaced by `to`.
void copy_with_config_edit(const std::string& name, const fs::path& dir, const std::string& from,
                           const std::string& to) {
    fs::copy(fixture(name), dir, fs::copy_options::recursive);
    std::string config = mt::test::read_file(dir / "config.json");
    const size_t at = config.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    config.replace(at, from.size(), to);
    mt::test::write_file(dir / "config.json", config);
}

TEST(HfCheckpoint, Gpt2GivesTransformersLosses) {
    expect_losses("gpt2");
}
TEST(HfCheckpoint, ShardedLlamaWithGqaGivesTransformersLosses) {
    expect_losses("llama");
}
TEST(HfCheckpoint, Bf16MistralWithTiedEmbeddingsGivesTransformersLosses) {
    expect_losses("mistral");
}
// Qwen2: q/k/v biases (--add-qkv-bias), tied; Qwen3: per-head q/k RMSNorm (--qk-layernorm) with
// head_dim 16 for hidden 32 and 4 heads, untied (make_qwen_fixtures.py).
TEST(HfCheckpoint, Qwen2WithQkvBiasesGivesTransformersLosses) {
    expect_losses("qwen2", "qwen_expected.json");
}
TEST(HfCheckpoint, Qwen3WithQkNormsGivesTransformersLosses) {
    expect_losses("qwen3", "qwen_expected.json");
}
// Qwen3-MoE: Qwen3's attention, 4 experts, top 2 renormalised (norm_topk_prob true).
TEST(HfCheckpoint, Qwen3MoeGivesTransformersLosses) {
    expect_losses("qwen3_moe", "qwen_expected.json");
}
// GPT-OSS (make_gpt_oss_fixtures.py): q/k/v/o biases and learned sinks, a windowed then a full
// layer, YaRN rope without rounding, biased experts with interleaved gate/up columns and clamps
// that bind, a biased router.
TEST(HfCheckpoint, GptOssGivesTransformersLosses) {
    expect_losses("gpt_oss", "gpt_oss_expected.json");
}

// OpenAI's GPT-OSS releases pack the experts in MXFP4 (make_gpt_oss_fixtures.py's gpt_oss_mxfp4:
// gate_up_proj_blocks/_scales, down_proj_blocks/_scales): dequantized on load, the model gives
// the losses of transformers' own dequantization.
TEST(HfCheckpoint, Mxfp4GptOssExpertsAreDequantizedOnLoad) {
    expect_losses("gpt_oss_mxfp4", "gpt_oss_expected.json");
}

// Gemma 3 (make_gemma3_fixtures.py): sandwich norms scaling by 1 + weight, q/k norms, GeGLU,
// scaled embeddings, two windowed layers with their own rope base and a full one with linear
// scaling, a softmax scale from query_pre_attn_scalar.
TEST(HfCheckpoint, Gemma3GivesTransformersLosses) {
    expect_losses("gemma3", "gemma3_expected.json");
}

// A multimodal Gemma 3 folder (Gemma3ForConditionalGeneration, untied): its text model under
// language_model.* gives the multimodal model's losses on text; the vision tower is left out.
TEST(HfCheckpoint, MultimodalGemma3FolderGivesItsTextModelsLosses) {
    expect_losses("gemma3_mm", "gemma3_expected.json");
    HfCheckpoint format;
    const CheckpointState state = format.load(fixture("gemma3_mm"));
    for (const auto& [name, t] : state.model)
        EXPECT_EQ(name.find("vision"), std::string::npos) << name;
    EXPECT_EQ(read_hf_config(fixture("gemma3_mm")).tied, false);
}

// DeepSeek-V3 (make_deepseek_fixtures.py): multi-latent attention with q-lora and YaRN, its
// interleaved rotary rows, a dense layer then MoE with grouped sigmoid routing, a correction bias
// and a shared expert; and without q-lora, rope scaling or experts, tied.
TEST(HfCheckpoint, DeepseekV3GivesTransformersLosses) {
    expect_losses("deepseek_v3", "deepseek_expected.json");
    expect_losses("deepseek_v3_lite", "deepseek_expected.json");
    // With DeepSeek's multi-token prediction layer (model.layers.3.*): the model takes
    // --mtp-num-layers 1 and the decoder's losses stay transformers'.
    const fs::path mtp = fixture("deepseek_v3_mtp");
    EXPECT_EQ(hf_model_args(read_hf_config(mtp)).at("mtp-num-layers"), "1");
    expect_losses("deepseek_v3", "deepseek_expected.json", mtp);
    // DeepSeek's published FP8 block-scaled weights are refused by name.
    TempDir fp8;
    copy_with_config_edit("deepseek_v3", fp8.path(), "\"attention_bias\": false",
                          "\"attention_bias\": false, \"quantization_config\": "
                          "{\"quant_method\": \"fp8\", \"weight_block_size\": [128, 128]}");
    const std::string error = error_of([&] { read_hf_config(fp8.path()); });
    EXPECT_NE(error.find("not supported yet: 'quantization_config' (FP8 block-scaled weights)"),
              std::string::npos)
        << error;
    // rope_interleave false: the rotary rows in halves, put in Megatron's pairs.
    TempDir dir;
    copy_with_config_edit("deepseek_v3_lite", dir.path(), "\"rope_interleave\": true",
                          "\"rope_interleave\": false");
    expect_losses("deepseek_v3_lite_halves", "deepseek_expected.json", dir.path());
}

// DeepSeek-V2 (as V2-Lite is made: no q-lora, YaRN, dense then MoE): greedy routing by the
// softmax over all experts, the top 2 scaled and not renormalised (--moe-router-pre-softmax),
// no correction bias. Its group-limited routing ranks groups otherwise than Megatron: refused.
TEST(HfCheckpoint, DeepseekV2GivesTransformersLosses) {
    const ModelArgs args = hf_model_args(read_hf_config(fixture("deepseek_v2")));
    EXPECT_EQ(args.at("moe-router-score-function"), "softmax");
    EXPECT_EQ(args.count("moe-router-pre-softmax"), 1u);
    EXPECT_EQ(args.count("moe-router-enable-expert-bias"), 0u);
    EXPECT_EQ(args.at("moe-router-topk-scaling-factor"), "2.5");
    expect_losses("deepseek_v2", "deepseek_expected.json");
    TempDir dir;
    copy_with_config_edit("deepseek_v2", dir.path(), "\"topk_method\": \"greedy\"",
                          "\"topk_method\": \"group_limited_greedy\"");
    const std::string error = error_of([&] { read_hf_config(dir.path()); });
    EXPECT_NE(error.find("not supported yet: 'topk_method' group_limited_greedy"),
              std::string::npos)
        << error;
}

// The same weights with norm_topk_prob false: the top k of the softmax over all experts, not
// renormalised (--moe-router-pre-softmax).
TEST(HfCheckpoint, Qwen3MoeWithoutTopkRenormalisationGivesTransformersLosses) {
    TempDir dir;
    copy_with_config_edit("qwen3_moe", dir.path(), "\"norm_topk_prob\": true",
                          "\"norm_topk_prob\": false");
    EXPECT_EQ(hf_model_args(read_hf_config(dir.path())).count("moe-router-pre-softmax"), 1u);
    expect_losses("qwen3_moe_pre_softmax", "qwen_expected.json", dir.path());
}

// A MixtralForCausalLM (4 experts, top-2, GQA; make_mixtral_fixture.py): transformers' logits
// on random ids, every one, and its per-token losses.
TEST(HfCheckpoint, MixtralGivesTransformersLogits) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.load(fixture("mixtral_expected.json").string());
    const Tensor tokens = ids(doc["tokens"].get_array());
    const Tensor labels = ids(doc["labels"].get_array());
    auto model = load_folder(fixture("mixtral"));
    const Tensor logits = model->logits(tokens, nullptr).contiguous();
    std::vector<double> want;
    for (auto row : doc["logits"].get_array())
        for (auto position : row.get_array())
            for (auto x : position.get_array()) want.push_back(x.get_double());
    ASSERT_EQ(logits.numel(), int64_t(want.size()));
    for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(logits.data<float>()[i], want[i], 1e-4) << "logit " << i;
    nn::DropoutContext ctx{false, 0, 0};
    const Tensor losses =
        loss_term(model->forward({{"tokens", tokens}, {"labels", labels}}, ctx, nullptr), "lm loss")
            .values;
    std::vector<double> want_losses;
    for (auto row : doc["losses"].get_array())
        for (auto x : row.get_array()) want_losses.push_back(x.get_double());
    ASSERT_EQ(losses.numel(), int64_t(want_losses.size()));
    for (size_t i = 0; i < want_losses.size(); ++i)
        EXPECT_NEAR(losses.data<float>()[i], want_losses[i], 1e-4 * want_losses[i]) << i;
    const ModelArgs args = hf_model_args(read_hf_config(fixture("mixtral")));
    EXPECT_EQ(args.at("num-experts"), "4");
    EXPECT_EQ(args.at("moe-router-topk"), "2");
    EXPECT_EQ(args.at("moe-ffn-hidden-size"), "48");
}

TEST(HfCheckpoint, ConfigImpliesMegatronsFlags) {
    const ModelArgs gpt2 = hf_model_args(read_hf_config(fixture("gpt2")));
    EXPECT_EQ(gpt2.at("num-layers"), "2");
    EXPECT_EQ(gpt2.at("hidden-size"), "32");
    EXPECT_EQ(gpt2.at("num-attention-heads"), "4");
    EXPECT_EQ(gpt2.at("ffn-hidden-size"), "128");
    EXPECT_EQ(gpt2.at("max-position-embeddings"), "16");
    EXPECT_EQ(gpt2.at("vocab-size"), "128");
    EXPECT_EQ(gpt2.at("make-vocab-size-divisible-by"), "1");
    EXPECT_EQ(gpt2.at("norm-epsilon"), "1.0000000000000001e-05");
    for (const char* absent : {"swiglu", "normalization", "disable-bias-linear",
                               "untie-embeddings-and-output-weights", "group-query-attention"})
        EXPECT_EQ(gpt2.count(absent), 0u) << absent;

    const ModelArgs llama = hf_model_args(read_hf_config(fixture("llama")));
    EXPECT_EQ(llama.at("normalization"), "RMSNorm");
    EXPECT_EQ(llama.at("position-embedding-type"), "rope");
    EXPECT_EQ(llama.at("rotary-base"), "500000");
    EXPECT_EQ(llama.at("num-query-groups"), "2");
    EXPECT_EQ(llama.at("ffn-hidden-size"), "48");
    for (const char* present : {"swiglu", "group-query-attention", "disable-bias-linear",
                                "untie-embeddings-and-output-weights"})
        EXPECT_EQ(llama.count(present), 1u) << present;

    const ModelArgs mistral = hf_model_args(read_hf_config(fixture("mistral")));
    EXPECT_EQ(mistral.at("rotary-base"), "1000000");
    EXPECT_EQ(mistral.at("norm-epsilon"), "9.9999999999999995e-07");
    EXPECT_EQ(mistral.at("num-query-groups"), "1");
    EXPECT_EQ(mistral.count("untie-embeddings-and-output-weights"), 0u);

    const ModelArgs qwen2 = hf_model_args(read_hf_config(fixture("qwen2")));
    EXPECT_EQ(qwen2.count("add-qkv-bias"), 1u);
    EXPECT_EQ(qwen2.count("qk-layernorm"), 0u);
    EXPECT_EQ(qwen2.count("disable-bias-linear"), 1u);  // o_proj and the MLP have none
    const ModelArgs qwen3 = hf_model_args(read_hf_config(fixture("qwen3")));
    EXPECT_EQ(qwen3.count("qk-layernorm"), 1u);
    EXPECT_EQ(qwen3.count("add-qkv-bias"), 0u);
    EXPECT_EQ(qwen3.at("kv-channels"), "16");
    const ModelArgs qwen3_moe = hf_model_args(read_hf_config(fixture("qwen3_moe")));
    EXPECT_EQ(qwen3_moe.at("num-experts"), "4");
    EXPECT_EQ(qwen3_moe.at("moe-router-topk"), "2");
    EXPECT_EQ(qwen3_moe.at("moe-ffn-hidden-size"), "24");
    EXPECT_EQ(qwen3_moe.count("qk-layernorm"), 1u);
    EXPECT_EQ(qwen3_moe.count("moe-router-pre-softmax"), 0u);  // norm_topk_prob true
}

// A copy of the llama fixture in `dir` whose config.json has `key: value` added at the top.
void write_config(const TempDir& dir, const std::string& key_value,
                  const std::string& model_type = "llama") {
    fs::copy(fixture("llama"), dir.path(), fs::copy_options::recursive);
    std::string config = mt::test::read_file(fixture("llama") / "config.json");
    config.insert(1, key_value + ",");
    const std::string from = "\"model_type\": \"llama\"";
    config.replace(config.find(from), from.size(), "\"model_type\": \"" + model_type + "\"");
    mt::test::write_file(dir / "config.json", config);
}

// Loading such a copy's error.
std::string config_error(const TempDir& dir, const std::string& key_value,
                         const std::string& model_type = "llama") {
    write_config(dir, key_value, model_type);
    HfCheckpoint format;
    return error_of([&] { format.load(dir.path()); });
}

// Llama 3.x's rope scaling is Megatron's --use-rope-scaling (its fixed frequency factors), and
// linear scaling its --rotary-seq-len-interpolation-factor, from either transformers' key.
TEST(HfCheckpoint, RopeScalingBecomesMegatronsFlags) {
    for (const std::string key : {"rope_scaling", "rope_parameters"}) {
        TempDir dir;
        write_config(dir, "\"" + key + R"(": {"rope_type": "llama3", "factor": 32.0,
            "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192, "rope_theta": 500000.0})");
        const ModelArgs a = hf_model_args(read_hf_config(dir.path()));
        EXPECT_EQ(a.count("use-rope-scaling"), 1u) << key;
        EXPECT_EQ(a.at("rope-scaling-factor"), "32") << key;
    }
    TempDir dir;
    write_config(dir, R"("rope_scaling": {"type": "linear", "factor": 2.0})");
    EXPECT_EQ(hf_model_args(read_hf_config(dir.path())).at("rotary-seq-len-interpolation-factor"),
              "2");
}

// sliding_window: each query sees itself and window - 1 keys before it (Megatron's
// --window-size (window - 1, 0)); one at least as long as the positions limits nothing.
TEST(HfCheckpoint, SlidingWindowIsMegatronsWindowSize) {
    TempDir dir;
    write_config(dir, R"("sliding_window": 8)");
    const ModelArgs a = hf_model_args(read_hf_config(dir.path()));
    EXPECT_EQ(a.at("window-size"), "(7, 0)");
    EXPECT_EQ(a.count("window-attn-skip-freq"), 0u);
    TempDir whole;
    write_config(whole, R"("sliding_window": 4096)");
    EXPECT_EQ(hf_model_args(read_hf_config(whole.path())).count("window-size"), 0u);
    const ModelArgs qwen = hf_model_args(read_hf_config(fixture("qwen2_swa")));
    EXPECT_EQ(qwen.at("window-size"), "(2, 0)");
    EXPECT_EQ(qwen.at("window-attn-skip-freq"), "[0,1]");
}

TEST(HfCheckpoint, RejectsConfigsNotSupportedYetNamingTheKey) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"("rope_scaling": {"type": "dynamic", "factor": 2.0})", "'dynamic' rope scaling"},
        {R"("rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 2.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})",
         "llama3 rope scaling with factor 8, low_freq_factor 2"},
        {R"("rope_scaling": {"type": "linear", "factor": 2.5})", "linear rope scaling by 2.5"},
        {R"("attention_bias": true)", "'attention_bias'"},
        {R"("mlp_bias": true)", "'mlp_bias'"},
        {R"("hidden_act": "gelu")", "'hidden_act' gelu"},
    };
    for (const auto& [key_value, part] : cases) {
        TempDir dir;
        const std::string error = config_error(dir, key_value);
        EXPECT_NE(error.find("not supported yet"), std::string::npos) << error;
        EXPECT_NE(error.find(part), std::string::npos) << error;
        EXPECT_NE(error.find("config.json"), std::string::npos) << error;
    }
    TempDir dir;
    const std::string error = config_error(dir, R"("x": 1)", "gemma");
    EXPECT_NE(error.find("not supported yet: 'model_type' 'gemma'"), std::string::npos) << error;
}

// transformers' T5 configurations (tests/fixtures/hf/t5_configs/make_configs.py) are refused
// naming the first field with no Megatron T5 equivalent: the ReLU or gated-GeLU MLP, else the
// relative position buckets.
TEST(HfCheckpoint, RefusesTransformersT5NamingTheFieldThatDoesNotMap) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"t5_relu", "not supported: 'feed_forward_proj' 'relu'"},
        {"t5_gated_gelu", "not supported: 'feed_forward_proj' 'gated-gelu'"},
        {"t5_gelu", "not supported yet: 'relative_attention_num_buckets' 32"},
    };
    for (const auto& [name, part] : cases) {
        const fs::path dir = fixture("t5_configs") / name;
        const std::string error = error_of([&] { read_hf_config(dir); });
        EXPECT_NE(error.find(part), std::string::npos) << error;
        EXPECT_NE(error.find((dir / "config.json").string()), std::string::npos) << error;
    }
}

TEST(HfCheckpoint, NamesAMissingTensorAndSavingNeedsAModel) {
    TempDir dir;
    fs::copy(fixture("gpt2") / "config.json", dir / "config.json");
    HfCheckpoint format;
    EXPECT_FALSE(format.detect(dir.path()));
    std::string error = error_of([&] { format.load(dir.path()); });
    EXPECT_NE(error.find("neither model.safetensors nor"), std::string::npos) << error;

    fs::copy(fixture("mistral") / "model.safetensors", dir / "model.safetensors");
    EXPECT_TRUE(format.detect(dir.path()));
    error = error_of([&] { format.load(dir.path()); });
    EXPECT_NE(error.find("no tensor 'wte.weight'"), std::string::npos) << error;

    error = error_of([&] { format.save(dir / "out", CheckpointState{}); });
    EXPECT_NE(error.find("--saver hf: the checkpoint's args have no integer num_layers"),
              std::string::npos)
        << error;
}

TEST(HfCheckpoint, RegistersAsHf) {
    Registry registry;
    register_hf(registry);
    EXPECT_EQ(registry.create_checkpoint("hf")->name(), "hf");
    // And megatron-train's way: the global registry loads libmt_checkpoint_hf.so.
    auto loaded = Registry::global().create_checkpoint("hf");
    EXPECT_EQ(loaded->name(), "hf");
    EXPECT_TRUE(loaded->detect(fixture("llama")));
}

// The way megatron-train takes it: restore_checkpoint with --finetune into a model built with
// the other --transformer-impl (separate norm names), giving the same losses.
TEST(HfCheckpoint, RestoresIntoALocalImplModelLikeMegatronTrain) {
    const Expected e = read_expected();
    HfCheckpoint format;
    const CheckpointState state = format.load(fixture("llama"));
    ModelArgs args = hf_model_args(read_hf_config(fixture("llama")));
    args["transformer-impl"] = "local";
    auto model = Registry::global().create_model("gpt")->build(args);
    optim::OptimizerConfig config;
    optim::Optimizer optimizer(single_process_context().backend, model->parameters(), config);
    optim::LrScheduleConfig sc;
    sc.max_lr = 1e-4;
    sc.lr_decay_steps = 10;
    optim::LrScheduler scheduler(sc);
    train::TrainerOptions o;
    o.micro_batch_size = 1;
    o.global_batch_size = 1;
    train::Trainer trainer(*model, optimizer, scheduler, o, [](const std::string&) {});
    train::RestoreOptions ro;
    ro.finetune = true;
    train::restore_checkpoint(state, {*model, optimizer, scheduler, trainer}, ro);

    nn::DropoutContext ctx{false, 0, 0};
    const Tensor losses =
        loss_term(model->forward({{"tokens", e.tokens}, {"labels", e.labels}}, ctx, nullptr),
                  "lm loss")
            .values;
    const std::vector<double>& want = e.losses.at("llama");
    ASSERT_EQ(size_t(losses.numel()), want.size());
    for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(losses.data<float>()[i], want[i], 1e-4 * std::abs(want[i])) << i;
}

}  // namespace
}  // namespace mt::plugins::hf
