// Saving Hugging Face folders (megatron-convert --saver hf): the GPT-2, Llama (GQA, untied,
// sharded) and Mistral (tied, bf16) fixtures loaded and saved again give the very files
// transformers wrote (model.safetensors, the shards and their index) and reload to the same
// tensors and config; bf16 weights stay bf16; the vocabulary is cut to the true one; tokenizer
// files travel when the args name them; configurations other than GPT-2/Llama/Mistral are
// "not supported yet" naming the arg; an existing folder is replaced only when it is an export.
#include <gtest/gtest.h>

#include <simdjson.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "hf_checkpoint.h"
#include "hf_config.h"
#include "hf_fixtures.h"
#include "hf_weights.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "safetensors.h"
#include "test_support.h"

namespace mt::plugins::hf {
namespace {

namespace fs = std::filesystem;
using mt::test::error_of;
using mt::test::read_file;
using mt::test::TempDir;

// Names, shapes, dtypes and bytes of two states' model tensors are equal.
void expect_same_tensors(const CheckpointState& want, const CheckpointState& got,
                         const std::string& what) {
    ASSERT_EQ(got.model.size(), want.model.size()) << what;
    for (size_t i = 0; i < want.model.size(); ++i) {
        const auto& [name, a] = want.model[i];
        EXPECT_EQ(got.model[i].first, name) << what;
        const Tensor x = a.local.contiguous(), y = got.model[i].second.local.contiguous();
        ASSERT_EQ(x.shape(), y.shape()) << what << ": " << name;
        ASSERT_EQ(x.dtype(), y.dtype()) << what << ": " << name;
        EXPECT_EQ(std::memcmp(x.raw_data(), y.raw_data(), size_t(x.nbytes())), 0)
            << what << ": " << name;
    }
}

void expect_same_config(const HfConfig& a, const HfConfig& b, const std::string& what) {
    EXPECT_EQ(a.model_type, b.model_type) << what;
    EXPECT_EQ(a.arch, b.arch) << what;
    EXPECT_EQ(a.num_layers, b.num_layers) << what;
    EXPECT_EQ(a.hidden_size, b.hidden_size) << what;
    EXPECT_EQ(a.num_heads, b.num_heads) << what;
    EXPECT_EQ(a.num_kv_heads, b.num_kv_heads) << what;
    EXPECT_EQ(a.head_dim, b.head_dim) << what;
    EXPECT_EQ(a.ffn_hidden_size, b.ffn_hidden_size) << what;
    EXPECT_EQ(a.vocab_size, b.vocab_size) << what;
    EXPECT_EQ(a.max_position_embeddings, b.max_position_embeddings) << what;
    EXPECT_EQ(a.norm_epsilon, b.norm_epsilon) << what;
    EXPECT_EQ(a.rope_theta, b.rope_theta) << what;
    EXPECT_EQ(a.tied, b.tied) << what;
    EXPECT_EQ(a.num_experts, b.num_experts) << what;
    EXPECT_EQ(a.experts_per_token, b.experts_per_token) << what;
    EXPECT_EQ(a.sliding_window, b.sliding_window) << what;
    EXPECT_EQ(a.windowed_layers, b.windowed_layers) << what;
    EXPECT_EQ(a.linear_rope_factor, b.linear_rope_factor) << what;
    EXPECT_EQ(a.qk_norm, b.qk_norm) << what;
    EXPECT_EQ(a.gemma3.local_rope_theta, b.gemma3.local_rope_theta) << what;
    EXPECT_EQ(a.gemma3.query_pre_attn_scalar, b.gemma3.query_pre_attn_scalar) << what;
}

// The state with its tensors cast to `dtype` (as convert's --bf16 does).
CheckpointState cast_to(CheckpointState state, DType dtype) {
    for (auto& [name, t] : state.model) t = ShardedTensor::whole(cast_float(t.local, dtype));
    return state;
}

class HfExport : public ::testing::TestWithParam<const char*> {};

TEST_P(HfExport, LoadSaveReloadGivesTheSameTensorsAndConfig) {
    const std::string name = GetParam();
    TempDir dir;
    HfCheckpoint format;
    const CheckpointState state = format.load(fixture(name));
    format.save(dir / "out", state);
    EXPECT_TRUE(format.detect(dir / "out"));
    expect_same_tensors(state, format.load(dir / "out"), name);
    expect_same_config(read_hf_config(fixture(name)), read_hf_config(dir / "out"), name);
    EXPECT_FALSE(fs::exists(dir / "out.tmp"));
    for (const auto& entry : fs::directory_iterator(dir.path()))
        EXPECT_EQ(entry.path().filename(), "out") << "a temporary folder was left behind";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HfExport,
                         ::testing::Values("gpt2", "llama", "mistral", "mixtral", "qwen2", "qwen3",
                                           "qwen3_moe", "mistral_swa", "qwen2_swa", "gpt_oss",
                                           "gemma3"));

// The safetensors files are byte for byte those transformers' save_pretrained wrote: header
// layout, padding, sorted names, the tensors' layouts (GPT-2's Conv1D, q/k/v, gate/up).
TEST(HfExport, WritesTheFilesTransformersWrote) {
    TempDir dir;
    HfCheckpoint format;
    format.save(dir / "gpt2", format.load(fixture("gpt2")));
    EXPECT_TRUE(read_file(dir / "gpt2/model.safetensors") ==
                read_file(fixture("gpt2") / "model.safetensors"));
    // Mixtral's experts back under their per-expert w1, w2, w3 names.
    format.save(dir / "mixtral", format.load(fixture("mixtral")));
    EXPECT_TRUE(read_file(dir / "mixtral/model.safetensors") ==
                read_file(fixture("mixtral") / "model.safetensors"));
    // Mistral's bf16 weights, cast back to bf16 after the f32 load, exactly.
    format.save(dir / "mistral", cast_to(format.load(fixture("mistral")), DType::bf16));
    EXPECT_TRUE(read_file(dir / "mistral/model.safetensors") ==
                read_file(fixture("mistral") / "model.safetensors"));
    // Qwen2's q/k/v biases, Qwen3's q/k norms, Qwen3-MoE's experts, GPT-OSS's (stacked, gate
    // and up interleaved, biased) and Gemma 3's four norms back under their names.
    for (const char* qwen : {"qwen2", "qwen3", "qwen3_moe", "gpt_oss", "gemma3"}) {
        format.save(dir / qwen, format.load(fixture(qwen)));
        EXPECT_TRUE(read_file(dir / qwen / "model.safetensors") ==
                    read_file(fixture(qwen) / "model.safetensors"))
            << qwen;
    }
    // Llama was saved with max_shard_size="50KB": the same shards and index.
    HfCheckpoint sharded(50'000);
    sharded.save(dir / "llama", format.load(fixture("llama")));
    for (const char* file : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                             "model.safetensors.index.json"})
        EXPECT_TRUE(read_file(dir / "llama" / file) == read_file(fixture("llama") / file)) << file;
    EXPECT_FALSE(fs::exists(dir / "llama/model.safetensors"));
}

TEST(HfExport, TinyShardsWriteAnIndexAndReload) {
    TempDir dir;
    HfCheckpoint format;
    const CheckpointState state = format.load(fixture("llama"));
    HfCheckpoint tiny(4096);  // the embedding tables (16 KB) are alone in shards of their own
    tiny.save(dir / "out", state);
    expect_same_tensors(state, format.load(dir / "out"), "4 KB shards");

    simdjson::dom::parser parser;
    simdjson::dom::element index = parser.load((dir / "out/model.safetensors.index.json").string());
    std::map<std::string, int64_t> files;
    int64_t total = 0;
    for (auto field : index["weight_map"].get_object()) {
        const std::string file(field.value.get_string().value());
        ++files[file];
        total += SafetensorsFile(dir / "out" / file).find(field.key)->end -
                 SafetensorsFile(dir / "out" / file).find(field.key)->begin;
    }
    EXPECT_EQ(index["metadata"]["total_size"].get_int64().value(), total);
    EXPECT_GT(files.size(), 5u);
    for (const auto& [file, count] : files) {
        EXPECT_TRUE(fs::exists(dir / "out" / file)) << file;
        EXPECT_EQ(file.size(), std::string("model-00001-of-00009.safetensors").size()) << file;
        int64_t bytes = 0;
        const SafetensorsFile shard(dir / "out" / file);  // outlives the loop over its entries
        for (const auto& e : shard.entries()) bytes += int64_t(e.end - e.begin);
        EXPECT_TRUE(bytes <= 4096 || count == 1) << file << " holds " << bytes << " bytes";
    }
    // Saving again unsharded replaces the folder: no stale shards.
    format.save(dir / "out", state);
    EXPECT_TRUE(fs::exists(dir / "out/model.safetensors"));
    EXPECT_FALSE(fs::exists(dir / "out/model.safetensors.index.json"));
    EXPECT_FALSE(fs::exists(dir / "out/model-00001-of-00009.safetensors"));
    expect_same_tensors(state, format.load(dir / "out"), "resaved");
}

TEST(HfExport, PlansShardsAsTransformers) {
    auto t = [](const char* name, int64_t n) { return TensorToWrite{name, {n}, DType::f32, {}}; };
    const std::vector<TensorToWrite> tensors = {t("a", 10), t("b", 10), t("c", 30),
                                                t("d", 5),  t("e", 20), t("f", 1)};
    std::vector<std::vector<std::string>> names;
    for (const auto& shard : plan_shards(tensors, 80)) {  // 80 bytes: 20 floats
        names.emplace_back();
        for (const TensorToWrite& x : shard) names.back().push_back(x.name);
    }
    const std::vector<std::vector<std::string>> want = {{"a", "b"}, {"c"}, {"d"}, {"e"}, {"f"}};
    EXPECT_EQ(names, want);
}

TEST(HfExport, Bf16WeightsAreWrittenAsBf16) {
    TempDir dir;
    HfCheckpoint format;
    const CheckpointState state = cast_to(format.load(fixture("llama")), DType::bf16);
    format.save(dir / "out", state);
    const SafetensorsFile written(dir / "out/model.safetensors");
    for (const auto& e : written.entries()) EXPECT_EQ(e.dtype, "BF16") << e.name;
    EXPECT_NE(read_file(dir / "out/config.json").find("\"torch_dtype\": \"bfloat16\""),
              std::string::npos);
    // The loader widens them to f32: equal to the bf16 values.
    expect_same_tensors(cast_to(state, DType::f32), format.load(dir / "out"), "bf16");
}

TEST(HfExport, WritesConfigAsTransformersDoes) {
    TempDir dir;
    HfCheckpoint format;
    format.save(dir / "llama", format.load(fixture("llama")));
    const std::string config = read_file(dir / "llama/config.json");
    for (const char* line :
         {"{\n  \"architectures\": [\n    \"LlamaForCausalLM\"\n  ],\n",
          "\n  \"num_key_value_heads\": 2,\n", "\n  \"rope_theta\": 500000.0,\n",
          "\n  \"rope_parameters\": {\n    \"rope_theta\": 500000.0,\n    \"rope_type\": "
          "\"default\"\n  },\n",
          "\n  \"rms_norm_eps\": 1e-05,\n", "\n  \"tie_word_embeddings\": false,\n",
          "\n  \"vocab_size\": 128\n}\n", "\n  \"model_type\": \"llama\",\n"})
        EXPECT_NE(config.find(line), std::string::npos) << line << "\nin\n" << config;
    EXPECT_EQ(read_file(dir / "llama/generation_config.json"),
              "{\n  \"_from_model_config\": true\n}\n");

    format.save(dir / "mistral", format.load(fixture("mistral")));
    const std::string mistral = read_file(dir / "mistral/config.json");
    EXPECT_NE(mistral.find("\"MistralForCausalLM\""), std::string::npos) << mistral;
    EXPECT_NE(mistral.find("\"sliding_window\": null"), std::string::npos) << mistral;
    EXPECT_NE(mistral.find("\"tie_word_embeddings\": true"), std::string::npos) << mistral;

    for (const char* qwen : {"qwen2", "qwen3"}) {
        format.save(dir / qwen, format.load(fixture(qwen)));
        const std::string config = read_file(dir / qwen / "config.json");
        for (const std::string& part :
             {std::string("\"model_type\": \"") + qwen + "\"",
              std::string("\"use_sliding_window\": false"),
              std::string(qwen == std::string("qwen2") ? "\"Qwen2ForCausalLM\""
                                                       : "\"Qwen3ForCausalLM\"")})
            EXPECT_NE(config.find(part), std::string::npos) << part << "\nin\n" << config;
    }

    format.save(dir / "gpt2", format.load(fixture("gpt2")));
    const std::string gpt2 = read_file(dir / "gpt2/config.json");
    for (const char* part :
         {"\"GPT2LMHeadModel\"", "\"activation_function\": \"gelu_new\"", "\"n_positions\": 16",
          "\"n_inner\": 128", "\"layer_norm_epsilon\": 1e-05"})
        EXPECT_NE(gpt2.find(part), std::string::npos) << part << "\nin\n" << gpt2;
}

// Megatron's --use-rope-scaling is Llama 3.x's rope_scaling (and --rotary-seq-len-interpolation-
// factor the linear kind), in both transformers' keys, and reads back the same.
TEST(HfExport, RopeScalingIsWrittenAsTransformersReadsIt) {
    HfCheckpoint format;
    for (const bool llama3 : {true, false}) {
        TempDir dir;
        CheckpointState state = format.load(fixture("llama"));
        if (llama3) {
            set_arg(state.args, "use_rope_scaling", true);
            set_arg(state.args, "rope_scaling_factor", 32.0);
        } else {
            set_arg(state.args, "rotary_seq_len_interpolation_factor", int64_t(4));
        }
        format.save(dir / "out", state);
        const std::string config = read_file(dir / "out/config.json");
        const std::string scaling =
            llama3 ? "{\n    \"factor\": 32.0,\n    \"high_freq_factor\": 4.0,\n    "
                     "\"low_freq_factor\": 1.0,\n    \"original_max_position_embeddings\": 8192,\n"
                     "    \"rope_type\": \"llama3\"\n  }"
                   : "{\n    \"factor\": 4.0,\n    \"rope_type\": \"linear\"\n  }";
        EXPECT_NE(config.find("\"rope_scaling\": " + scaling), std::string::npos) << config;
        const ModelArgs a = hf_model_args(read_hf_config(dir / "out"));
        if (llama3) {
            EXPECT_EQ(a.at("rope-scaling-factor"), "32");
            EXPECT_EQ(a.count("use-rope-scaling"), 1u);
        } else {
            EXPECT_EQ(a.at("rotary-seq-len-interpolation-factor"), "4");
        }
    }
}

TEST(HfExport, CutsThePaddedVocabularyToTheTrueOne) {
    TempDir dir;
    HfCheckpoint format;
    CheckpointState state = format.load(fixture("llama"));
    set_arg(state.args, "vocab_size", int64_t(100));
    format.save(dir / "cut", state);
    const CheckpointState cut = format.load(dir / "cut");
    EXPECT_EQ(read_hf_config(dir / "cut").vocab_size, 100);
    for (const char* name : {"embedding.word_embeddings.weight", "output_layer.weight"}) {
        auto it = std::find_if(cut.model.begin(), cut.model.end(),
                               [&](const auto& e) { return e.first == name; });
        ASSERT_NE(it, cut.model.end()) << name;
        EXPECT_EQ(it->second.local.shape(), (Shape{100, 32})) << name;
    }
    // No true size anywhere: the padded table is kept.
    std::erase_if(state.args, [](const auto& a) { return a.first == "vocab_size"; });
    format.save(dir / "kept", state);
    EXPECT_EQ(read_hf_config(dir / "kept").vocab_size, 128);
    // Megatron's NullTokenizer was given its size without the EOD it adds.
    set_arg(state.args, "tokenizer_type", std::string("NullTokenizer"));
    set_arg(state.args, "vocab_size", int64_t(99));
    format.save(dir / "null", state);
    EXPECT_EQ(read_hf_config(dir / "null").vocab_size, 100);

    set_arg(state.args, "tokenizer_type", std::string("GPT2BPETokenizer"));
    set_arg(state.args, "vocab_size", int64_t(129));
    const std::string error = error_of([&] { format.save(dir / "big", state); });
    EXPECT_NE(error.find("vocabulary of 129 tokens"), std::string::npos) << error;
    EXPECT_FALSE(fs::exists(dir / "big"));
}

// core_v0.19's legacy SentencePiece wrapper finds --tokenizer-special-tokens in the text in a
// way no transformers config says (a lone "▁" dropped between two of them): the model is
// written without tokenizer files.
TEST(HfExport, WritesNoTokenizerForLegacySentencePieceSpecialTokens) {
    const auto model = mt::test::test_data("tokenizers/sentencepiece/mistral-v1.model");
    if (!model) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: no mistral-v1.model";
    TempDir dir;
    HfCheckpoint format;
    CheckpointState state = format.load(fixture("gpt2"));
    set_arg(state.args, "tokenizer_type", std::string("GPTSentencePieceTokenizer"));
    set_arg(state.args, "tokenizer_model", model->string());
    set_arg(state.args, "tokenizer_sentencepiece_legacy", true);
    set_arg(state.args, "special_tokens", std::vector<std::string>{"<X>", "<Y>"});
    set_arg(state.args, "vocab_size", ArgValue{});
    format.save(dir / "sp", state);
    EXPECT_TRUE(fs::exists(dir / "sp/config.json"));
    EXPECT_FALSE(fs::exists(dir / "sp/tokenizer.model"));
    EXPECT_FALSE(fs::exists(dir / "sp/tokenizer_config.json"));
}

TEST(HfExport, CopiesTheTokenizerTheArgsName) {
    TempDir dir;
    HfCheckpoint format;
    CheckpointState state = format.load(fixture("gpt2"));
    const fs::path bpe = mt::test::fixtures_dir() / "gpt2bpe";
    set_arg(state.args, "tokenizer_type", std::string("GPT2BPETokenizer"));
    set_arg(state.args, "vocab_file", (bpe / "handmade-vocab.json").string());
    set_arg(state.args, "merge_file", (bpe / "handmade-merges.txt").string());
    format.save(dir / "gpt2", state);
    EXPECT_EQ(read_file(dir / "gpt2/vocab.json"), read_file(bpe / "handmade-vocab.json"));
    EXPECT_EQ(read_file(dir / "gpt2/merges.txt"), read_file(bpe / "handmade-merges.txt"));
    const std::string tokenizer = read_file(dir / "gpt2/tokenizer_config.json");
    EXPECT_NE(tokenizer.find("\"tokenizer_class\": \"GPT2Tokenizer\""), std::string::npos);
    EXPECT_NE(tokenizer.find("\"model_max_length\": 16"), std::string::npos) << tokenizer;
    // <|endoftext|> is id 13 in the handmade vocabulary: GPT-2's bos and eos.
    const std::string config = read_file(dir / "gpt2/config.json");
    EXPECT_NE(config.find("\"bos_token_id\": 13,"), std::string::npos) << config;
    EXPECT_NE(config.find("\"eos_token_id\": 13,"), std::string::npos) << config;
    EXPECT_NE(read_file(dir / "gpt2/generation_config.json").find("\"eos_token_id\": 13"),
              std::string::npos);
    // The loader names the folder's tokenizer in its args, so a round trip keeps it.
    const CheckpointState reloaded = format.load(dir / "gpt2");
    EXPECT_EQ(std::get<std::string>(*reloaded.find_arg("tokenizer_type")), "GPT2BPETokenizer");
    format.save(dir / "again", reloaded);
    EXPECT_EQ(read_file(dir / "again/vocab.json"), read_file(bpe / "handmade-vocab.json"));

    const fs::path folder = mt::test::fixtures_dir() / "hf_tokenizer" / "llama3ish";
    state = format.load(fixture("llama"));
    set_arg(state.args, "tokenizer_type", std::string("HuggingFaceTokenizer"));
    set_arg(state.args, "tokenizer_model", folder.string());
    format.save(dir / "llama", state);
    for (const char* file : {"tokenizer.json", "tokenizer_config.json"})
        EXPECT_EQ(read_file(dir / "llama" / file), read_file(folder / file)) << file;
    const std::string llama = read_file(dir / "llama/config.json");
    EXPECT_NE(llama.find("\"bos_token_id\": 0,"), std::string::npos) << llama;
    EXPECT_NE(llama.find("\"eos_token_id\": 1,"), std::string::npos) << llama;

    // Files that are not here: none written, and the export goes on.
    set_arg(state.args, "tokenizer_model", (dir / "elsewhere").string());
    format.save(dir / "none", state);
    EXPECT_FALSE(fs::exists(dir / "none/tokenizer.json"));
    EXPECT_NE(read_file(dir / "none/config.json").find("\"bos_token_id\": null"),
              std::string::npos);
}

TEST(HfExport, OtherArchitecturesAreNotSupportedYetNamingTheArg) {
    HfCheckpoint format;
    const CheckpointState llama = format.load(fixture("llama"));
    const CheckpointState gpt2 = format.load(fixture("gpt2"));
    const CheckpointState mixtral = format.load(fixture("mixtral"));
    const CheckpointState qwen2 = format.load(fixture("qwen2"));
    const std::vector<std::tuple<const CheckpointState*, std::string, ArgValue, std::string>>
        cases = {
            {&llama, "normalization", std::string("LayerNorm"), "normalization=LayerNorm"},
            {&llama, "add_bias_linear", true, "add_bias_linear=True"},
            {&llama, "swiglu", false, "swiglu=False"},
            {&llama, "rotary_interleaved", true, "rotary_interleaved=True"},
            {&llama, "rotary_percent", 0.5, "rotary_percent=0.5"},
            {&llama, "squared_relu", true, "squared_relu=True"},
            {&gpt2, "qk_layernorm", true, "qk_layernorm=True"},
            {&qwen2, "qk_layernorm", true, "qk_layernorm=True"},  // Qwen2 and Qwen3 at once
            {&mixtral, "add_qkv_bias", true, "add_qkv_bias=True"},
            {&gpt2, "num_experts", int64_t(8), "num_experts=8"},
            {&mixtral, "moe_router_pre_softmax", true, "moe_router_pre_softmax=True"},
            {&mixtral, "moe_shared_expert_intermediate_size", int64_t(16),
             "moe_shared_expert_intermediate_size=16"},
            {&mixtral, "moe_layer_freq", std::vector<int64_t>{0, 1},
             "moe_layer_freq=not every layer"},
            {&llama, "position_embedding_type", std::string("none"),
             "position_embedding_type=none"},
            {&gpt2, "swiglu", true, "swiglu=True"},
            {&gpt2, "normalization", std::string("RMSNorm"), "normalization=RMSNorm"},
            {&gpt2, "untie_embeddings_and_output_weights", true,
             "untie_embeddings_and_output_weights=True"},
            {&gpt2, "bias_gelu_fusion", false, "bias_gelu_fusion=False"},
        };
    for (const auto& [source, name, value, part] : cases) {
        TempDir dir;
        CheckpointState state = *source;
        set_arg(state.args, name, value);
        const std::string error = error_of([&] { format.save(dir / "out", state); });
        EXPECT_NE(error.find("not supported yet: " + part + " in --saver hf"), std::string::npos)
            << error;
        EXPECT_FALSE(fs::exists(dir / "out")) << name;
    }
}

TEST(HfExport, ReplacesOnlyAFolderOfExportFiles) {
    TempDir dir;
    HfCheckpoint format;
    const CheckpointState state = format.load(fixture("gpt2"));
    fs::create_directories(dir / "mine");
    mt::test::write_file(dir / "mine/notes.txt", "keep me");
    const std::string error = error_of([&] { format.save(dir / "mine", state); });
    EXPECT_NE(error.find("holds notes.txt"), std::string::npos) << error;
    EXPECT_EQ(read_file(dir / "mine/notes.txt"), "keep me");
    EXPECT_FALSE(fs::exists(dir / "mine/config.json"));

    // An earlier export (or an empty folder, or a path with a trailing slash) is replaced.
    fs::create_directories(dir / "empty");
    format.save((dir / "empty").string() + "/", state);
    EXPECT_TRUE(format.detect(dir / "empty"));
    format.save(dir / "empty", format.load(fixture("mistral")));
    EXPECT_EQ(read_hf_config(dir / "empty").model_type, "mistral");
}

TEST(HfExport, PiecesOfTensorsAndMissingTensorsAreErrors) {
    TempDir dir;
    HfCheckpoint format;
    CheckpointState state = format.load(fixture("llama"));
    const std::string name = state.model[1].first;
    state.model[1].second.global_shape[0] *= 2;  // a tensor-parallel piece
    std::string error = error_of([&] { format.save(dir / "out", state); });
    EXPECT_NE(error.find("'" + name + "' is a"), std::string::npos) << error;
    EXPECT_NE(error.find("whole tensors"), std::string::npos) << error;
    state.model.erase(state.model.begin() + 1);
    error = error_of([&] { format.save(dir / "out", state); });
    EXPECT_NE(error.find("has no tensor '" + name + "'"), std::string::npos) << error;
    EXPECT_FALSE(fs::exists(dir / "out"));
}

}  // namespace
}  // namespace mt::plugins::hf
