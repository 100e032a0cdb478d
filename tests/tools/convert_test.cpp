// megatron-convert through the binary, on checkpoints megatron-core wrote
// (tests/fixtures/convert/make_fixtures.py): layout round trips TP1 -> TP2 -> PP2 -> TP2xPP2 ->
// TP1, torch -> torch_dist -> torch, through the legacy key names and through Transformer
// Engine's fused-norm names are bit-identical, each layout lands in Megatron's rank
// directories, the vocabulary is re-padded for the target as convert.py does, and bad input is an
// error naming the file and reason (or "not supported yet"). --saver hf: megatron-core's GPT-2
// and Llama (GQA) checkpoints (tests/fixtures/torch_dist) exported as Hugging Face folders give
// megatron-core's logits (its *_reference.pt) when read back, and a Mistral folder through a
// Megatron checkpoint comes back as the very file transformers wrote
// (tests/fixtures/hf/check_export_loads.py checks the same exports in transformers).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <tuple>

#include "mt/dtype.h"
#include "mt/infer/model_loader.h"
#include "mt/io/torch_file.h"
#include "mt/registry.h"
#include "test_support.h"

namespace fs = std::filesystem;
using mt::test::read_file;
using mt::test::run_command;
using mt::test::TempDir;

namespace {

fs::path fixture(const std::string& name) {
    return mt::test::fixtures_dir() / "convert" / name;
}

std::string q(const fs::path& p) {
    return mt::test::shell_quote(p);
}

mt::test::RunResult convert(const fs::path& from, const fs::path& to, const std::string& flags) {
    return run_command(mt::test::tool_path("megatron-convert").string() +
                       " --model-type GPT --load-dir " + q(from) + " --save-dir " + q(to) + " " +
                       flags + " 2>&1");
}

void convert_ok(const fs::path& from, const fs::path& to, const std::string& flags) {
    auto r = convert(from, to, flags);
    ASSERT_EQ(r.exit_code, 0) << r.output;
}

const char* kCore = "--loader core --saver core";

// The model entries of two model_optim_rng.pt files hold the same keys and f32 values.
void expect_same_model(const fs::path& expected, const fs::path& actual) {
    const mt::io::PyValue want = mt::io::load_torch_file(expected)["model"];
    const mt::io::PyValue got = mt::io::load_torch_file(actual)["model"];
    ASSERT_EQ(got.dict_ref().items.size(), want.dict_ref().items.size()) << actual;
    for (const auto& [k, v] : want.dict_ref().items) {
        const mt::Tensor a = v.as_tensor().contiguous();
        const mt::Tensor b = got[k.as_string()].as_tensor().contiguous();
        EXPECT_TRUE(a.shape() == b.shape() &&
                    std::memcmp(a.raw_data(), b.raw_data(), a.numel() * 4) == 0)
            << actual << ": " << k.as_string();
    }
}

TEST(Convert, LayoutRoundTripsAreBitIdentical) {
    TempDir dir;
    convert_ok(fixture("tp1"), dir / "a", kCore);
    convert_ok(dir / "a", dir / "tp2", std::string(kCore) + " --target-tensor-parallel-size 2");
    convert_ok(
        dir / "tp2", dir / "pp2",
        std::string(kCore) + " --target-tensor-parallel-size 1 --target-pipeline-parallel-size 2");
    convert_ok(dir / "pp2", dir / "tp2pp2",
               std::string(kCore) + " --target-tensor-parallel-size 2");
    convert_ok(
        dir / "tp2pp2", dir / "back",
        std::string(kCore) + " --target-tensor-parallel-size 1 --target-pipeline-parallel-size 1");
    for (const char* rank : {"tp2/iter_0000010/mp_rank_01", "pp2/iter_0000010/mp_rank_00_001",
                             "tp2pp2/iter_0000010/mp_rank_01_001"})
        EXPECT_TRUE(fs::exists(dir / rank / "model_optim_rng.pt")) << rank;
    const std::string file = "iter_0000010/mp_rank_00/model_optim_rng.pt";
    EXPECT_TRUE(read_file(dir / "back" / file) == read_file(dir / "a" / file))
        << "TP1 -> TP2 -> PP2 -> TP2xPP2 -> TP1 changed the checkpoint";
    EXPECT_EQ(read_file(dir / "back/latest_checkpointed_iteration.txt"), "10");

    // Through Transformer Engine's fused-norm names and back to the local spec's.
    convert_ok(dir / "a", dir / "te",
               std::string(kCore) + " --saver-transformer-impl transformer_engine");
    const mt::io::PyValue te = mt::io::load_torch_file(dir / "te" / file);
    EXPECT_TRUE(te["model"].find("decoder.layers.1.mlp.linear_fc1.layer_norm_bias"));
    EXPECT_FALSE(te["model"].find("decoder.layers.1.pre_mlp_layernorm.bias"));
    EXPECT_EQ(te["args"]["transformer_impl"].as_string(), "transformer_engine");
    convert_ok(dir / "te", dir / "local", std::string(kCore) + " --saver-transformer-impl local");
    EXPECT_TRUE(read_file(dir / "local" / file) == read_file(dir / "a" / file));

    // What Megatron wrote at TP2 and at PP2 converts to the same TP1 tensors.
    for (const char* layout : {"tp2", "pp2"}) {
        const fs::path out = dir / (std::string("from_") + layout);
        convert_ok(fixture(layout), out,
                   std::string(kCore) +
                       " --target-tensor-parallel-size 1 --target-pipeline-parallel-size 1");
        expect_same_model(dir / "a" / file, out / file);
    }
}

TEST(Convert, TorchToTorchDistToTorchIsBitIdentical) {
    TempDir dir;
    convert_ok(fixture("tp2"), dir / "direct", kCore);
    convert_ok(fixture("tp2"), dir / "dist", "--loader core --saver torch_dist");
    // torch_dist files hold whole tensors; the target layout comes from the args (TP2).
    convert_ok(dir / "dist", dir / "back", "--loader torch_dist --saver core");
    for (const char* rank : {"mp_rank_00", "mp_rank_01"}) {
        const std::string file = std::string("iter_0000010/") + rank + "/model_optim_rng.pt";
        ASSERT_TRUE(fs::exists(dir / "back" / file)) << file;
        EXPECT_TRUE(read_file(dir / "back" / file) == read_file(dir / "direct" / file)) << file;
    }
}

// --bf16 / --fp16 cast the saved weights as convert.py does (ties to even) and the args say
// so; a bf16 checkpoint converts on as it is, and megatron-generate reads it (widened).
TEST(Convert, Bf16AndFp16CastTheSavedWeights) {
    TempDir dir;
    const std::string file = "iter_0000010/mp_rank_00/model_optim_rng.pt";
    for (const auto& [flag, dtype, name] : {std::tuple{"--bf16", mt::DType::bf16, "bfloat16"},
                                            std::tuple{"--fp16", mt::DType::f16, "float16"}}) {
        const fs::path out = dir / name;
        convert_ok(fixture("tp1"), out, std::string(kCore) + " " + flag);
        const mt::io::PyValue want = mt::io::load_torch_file(fixture("tp1") / file)["model"];
        const mt::io::PyValue got = mt::io::load_torch_file(out / file);
        for (const auto& [k, v] : want.dict_ref().items) {
            if (v.kind() != mt::io::PyKind::tensor) continue;  // _extra_state
            const mt::Tensor a = v.as_tensor().contiguous();
            const mt::Tensor b = got["model"][k.as_string()].as_tensor().contiguous();
            ASSERT_EQ(b.dtype(), dtype) << k.as_string();
            const auto* bits = static_cast<const uint16_t*>(b.raw_data());
            for (int64_t i = 0; i < a.numel(); ++i)
                ASSERT_EQ(bits[i], dtype == mt::DType::bf16
                                       ? mt::float_to_bfloat16(a.data<float>()[i])
                                       : mt::float_to_half(a.data<float>()[i]))
                    << k.as_string() << "[" << i << "]";
        }
        const auto& args = got["args"].object_ref().state;
        EXPECT_EQ(args["params_dtype"].object_ref().name, name);
        EXPECT_EQ(args[flag + 2].as_bool(), true);
    }
    // On through torch_dist, still bf16; generation widens the weights.
    convert_ok(dir / "bfloat16", dir / "dist", "--loader core --saver torch_dist");
    auto r = run_command(mt::test::tool_path("megatron-generate").string() + " --load " +
                         q(dir / "dist") +
                         " --tokenizer-type NullTokenizer --vocab-size 127 --greedy"
                         " --out-seq-length 2 --prompts '1 2 3' 2>&1");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("loaded torch_dist checkpoint"), std::string::npos) << r.output;
}

TEST(Convert, LlamaCheckpointsOfMetaAndHuggingFaceGiveTheSameMegatronCheckpoint) {
    TempDir dir;
    const std::string flags =
        "--loader llama_mistral --model-size llama3 --saver core --target-tensor-parallel-size 2 "
        "--checkpoint-type ";
    auto r = convert(fixture("llama_meta"), dir / "meta", flags + "meta");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    convert_ok(mt::test::fixtures_dir() / "hf" / "llama", dir / "hf", flags + "hf");
    EXPECT_EQ(read_file(dir / "meta/latest_checkpointed_iteration.txt"), "1")
        << "Megatron's loader saves iteration 1";
    for (const char* rank : {"mp_rank_00", "mp_rank_01"})
        expect_same_model(dir / "hf/iter_0000001" / rank / "model_optim_rng.pt",
                          dir / "meta/iter_0000001" / rank / "model_optim_rng.pt");
}

TEST(Convert, LegacyKeyNamesRoundTrip) {
    TempDir dir;
    convert_ok(fixture("tp1"), dir / "core",
               std::string(kCore) + " --saver-transformer-impl local");
    convert_ok(dir / "core", dir / "legacy",
               "--loader core --saver legacy --target-tensor-parallel-size 2");
    const mt::io::PyValue legacy =
        mt::io::load_torch_file(dir / "legacy/iter_0000010/mp_rank_01/model_optim_rng.pt");
    EXPECT_TRUE(legacy["model"]["language_model"]["encoder"].find(
        "layers.1.self_attention.query_key_value.weight"));
    EXPECT_TRUE(legacy["args"]["use_legacy_models"].as_bool());
    convert_ok(dir / "legacy", dir / "back",
               "--loader legacy --saver core --saver-transformer-impl local "
               "--target-tensor-parallel-size 1");
    const std::string file = "iter_0000010/mp_rank_00/model_optim_rng.pt";
    EXPECT_TRUE(read_file(dir / "back" / file) == read_file(dir / "core" / file));
}

TEST(Convert, TheVocabularyIsPaddedForTheTarget) {
    TempDir dir;
    // 100 tokens padded to a multiple of 96 * 2 ranks: 192 rows, the extra ones copies of the
    // last source row (convert.py's pad_weight), 96 per rank.
    std::string vocab = "{";
    for (int i = 0; i < 100; ++i)
        vocab += (i ? ", \"t" : "\"t") + std::to_string(i) + "\": " + std::to_string(i);
    mt::test::write_file(dir / "vocab.json", vocab + "}");
    for (const std::string& how :
         {std::string("--true-vocab-size 100"), "--vocab-file " + q(dir / "vocab.json")}) {
        const fs::path out = dir / ("out" + std::to_string(how.size()));
        convert_ok(fixture("tp1"), out,
                   std::string(kCore) + " --target-tensor-parallel-size 2 " + how +
                       " --make-vocab-size-divisible-by 96");
        const mt::io::PyValue rank1 =
            mt::io::load_torch_file(out / "iter_0000010/mp_rank_01/model_optim_rng.pt");
        EXPECT_EQ(rank1["args"]["padded_vocab_size"].as_int(), 192);
        EXPECT_EQ(rank1["args"]["vocab_size"].as_int(), 100);
        EXPECT_EQ(rank1["args"]["make_vocab_size_divisible_by"].as_int(), 96);
        const mt::Tensor table = rank1["model"]["embedding.word_embeddings.weight"].as_tensor();
        ASSERT_EQ(table.shape(), (mt::Shape{96, 16}));
        const float* row = table.data<float>();
        for (int64_t r = 32; r < 96; ++r)  // global rows 128..191
            EXPECT_EQ(std::memcmp(row + r * 16, row + 31 * 16, 16 * sizeof(float)), 0) << r;
    }
}

TEST(Convert, BadInputIsAClearError) {
    TempDir dir;
    fs::copy(fixture("tp2"), dir / "cut", fs::copy_options::recursive);
    const fs::path file = dir / "cut/iter_0000010/mp_rank_01/model_optim_rng.pt";
    fs::resize_file(file, fs::file_size(file) / 2);
    auto r = convert(dir / "cut", dir / "out", kCore);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.output.find("error: cannot read checkpoint " + file.string() + ": "),
              std::string::npos)
        << r.output;
    EXPECT_FALSE(fs::exists(dir / "out/latest_checkpointed_iteration.txt"));

    r = convert(dir / "missing", dir / "out", kCore);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.output.find("is not a directory"), std::string::npos) << r.output;

    r = convert(fixture("tp1"), dir / "out",
                "--loader core --saver core --target-tensor-parallel-size 3");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.output.find("must be divisible by --tensor-model-parallel-size (3)"),
              std::string::npos)
        << r.output;

    for (const auto& [flags, message] :
         {std::pair{"--loader llama_mistral --checkpoint-type meta --saver core",
                    "holds no llama_meta checkpoint (--loader llama_mistral)"},
          std::pair{"--loader llama_mistral --checkpoint-type pt --saver core",
                    "--checkpoint-type pt: supported are hf and meta"},
          std::pair{"--loader core --saver hf_llava", "not supported yet: --saver hf_llava"},
          std::pair{"--loader llava --saver core", "not supported yet: --loader llava"},
          std::pair{"--loader nope --saver core", "unknown --loader nope"}}) {
        r = convert(fixture("tp1"), dir / "out", flags);
        EXPECT_EQ(r.exit_code, 1) << flags;
        EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
    }
    r = run_command(mt::test::tool_path("megatron-convert").string() +
                    " --model-type Retro --load-dir " + q(fixture("tp1")) + " --save-dir " +
                    q(dir / "out") + " 2>&1");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.output.find("--model-type Retro: supported are GPT, BERT, T5 and Mamba"),
              std::string::npos)
        << r.output;
    r = run_command(mt::test::tool_path("megatron-convert").string() + " --load-dir x 2>&1");
    EXPECT_EQ(r.exit_code, 2) << r.output;
}

// The exported folder, read back by our hf loader and run, gives megatron-core's logits on the
// reference tokens.
void expect_reference_logits(const fs::path& folder, const fs::path& reference) {
    auto family = mt::Registry::global().create_model("gpt");
    mt::infer::LoadedModel m =
        mt::infer::load_for_inference(mt::Registry::global(), *family, folder, {});
    EXPECT_EQ(m.format, "hf");
    const mt::io::PyValue ref = mt::io::load_torch_file(reference);
    const mt::Tensor tokens = ref["tokens"].as_tensor().contiguous();
    const mt::Tensor want = ref["logits"].as_tensor().contiguous();
    for (int64_t b = 0; b < tokens.size(0); ++b) {
        const mt::Tensor logits =
            m.model->logits(tokens.slice(0, b, b + 1).contiguous(), nullptr, 0);
        ASSERT_EQ(logits.numel() * tokens.size(0), want.numel()) << folder;
        const float* w = want.data<float>() + b * logits.numel();
        for (int64_t i = 0; i < logits.numel(); ++i)
            ASSERT_NEAR(logits.data<float>()[i], w[i], 1e-4 * (1 + std::abs(w[i])))
                << folder << " row " << b << " element " << i;
    }
}

TEST(Convert, SaverHfExportsMegatronCoreModelsThatGiveTheirLogits) {
    TempDir dir;
    const fs::path dist = mt::test::fixtures_dir() / "torch_dist";
    for (const char* name : {"gpt2", "llama"}) {
        const fs::path out = dir / name;
        auto r =
            convert(dist / (std::string(name) + "_tp1"), out, "--loader torch_dist --saver hf");
        ASSERT_EQ(r.exit_code, 0) << r.output;
        EXPECT_NE(r.output.find("no tokenizer files written"), std::string::npos) << r.output;
        for (const char* file : {"config.json", "generation_config.json", "model.safetensors"})
            EXPECT_TRUE(fs::exists(out / file)) << name << ": " << file;
        const std::string config = read_file(out / "config.json");
        EXPECT_NE(config.find(std::string(name) == "gpt2" ? "\"GPT2LMHeadModel\""
                                                          : "\"LlamaForCausalLM\""),
                  std::string::npos)
            << config;
        expect_reference_logits(out, dist / (std::string(name) + "_reference.pt"));
    }
    EXPECT_NE(read_file(dir / "llama/config.json").find("\"num_key_value_heads\": 2,"),
              std::string::npos);

    // The true vocabulary: the table is cut to it and config.json says so.
    convert_ok(dist / "gpt2_tp1", dir / "cut",
               "--loader torch_dist --saver hf --true-vocab-size 100");
    EXPECT_NE(read_file(dir / "cut/config.json").find("\"vocab_size\": 100\n"), std::string::npos);
}

TEST(Convert, SaverHfKeepsMistralThroughAMegatronCheckpoint) {
    TempDir dir;
    const fs::path mistral = mt::test::fixtures_dir() / "hf" / "mistral";
    convert_ok(mistral, dir / "megatron", "--loader hf --saver core");
    convert_ok(mistral, dir / "megatron_bf16", "--loader hf --saver core --bf16");
    // Megatron's Hugging Face loaders build a float32 model unless told --bf16.
    auto torch = mt::Registry::global().create_checkpoint("torch");
    for (const auto& [name, t] : torch->load(dir / "megatron").model)
        EXPECT_EQ(t.local.dtype(), mt::DType::f32) << name;
    for (const auto& [name, t] : torch->load(dir / "megatron_bf16").model)
        EXPECT_EQ(t.local.dtype(), mt::DType::bf16) << name;
    convert_ok(dir / "megatron", dir / "hf", "--loader core --saver hf --bf16");
    // transformers' own file, byte for byte: names, order, layouts and bfloat16 values.
    EXPECT_TRUE(read_file(dir / "hf/model.safetensors") ==
                read_file(mistral / "model.safetensors"));
    const std::string config = read_file(dir / "hf/config.json");
    EXPECT_NE(config.find("\"model_type\": \"mistral\""), std::string::npos) << config;
    EXPECT_NE(config.find("\"torch_dtype\": \"bfloat16\""), std::string::npos) << config;
}

// Qwen2 (QKV biases), Qwen3 (q/k norms), Qwen3-MoE, and sliding-window Mistral and Qwen2
// (--window-size, and --window-attn-skip-freq for Qwen's full first layer) folders through
// Megatron checkpoints split over two tensor ranks (and two expert ranks for the MoE), in both
// formats, come back as the files transformers wrote.
TEST(Convert, QwenFoldersComeBackThroughSplitMegatronCheckpoints) {
    for (const auto& [name, type] :
         {std::pair{"qwen2", "qwen2"}, std::pair{"qwen3", "qwen3"},
          std::pair{"qwen3_moe", "qwen3_moe"}, std::pair{"mistral_swa", "mistral"},
          std::pair{"qwen2_swa", "qwen2"}}) {
        SCOPED_TRACE(name);
        const fs::path source = mt::test::fixtures_dir() / "hf" / name;
        const std::string experts =
            std::string(name) == "qwen3_moe" ? " --target-expert-parallel-size 2" : "";
        for (const char* format : {"core", "torch_dist"}) {
            TempDir dir;
            convert_ok(source, dir / "megatron",
                       std::string("--loader hf --target-tensor-parallel-size 2 --saver ") +
                           format + experts);
            convert_ok(dir / "megatron", dir / "hf", std::string("--saver hf --loader ") + format);
            EXPECT_TRUE(read_file(dir / "hf/model.safetensors") ==
                        read_file(source / "model.safetensors"))
                << format;
            const std::string config = read_file(dir / "hf/config.json");
            EXPECT_NE(config.find(std::string("\"model_type\": \"") + type + "\""),
                      std::string::npos)
                << format;
            const bool windowed = std::string(name).ends_with("_swa");
            EXPECT_EQ(config.find("\"sliding_window\": 3") != std::string::npos, windowed)
                << format << config;
        }
    }
}

// A GPT-OSS folder (make_gpt_oss_fixtures.py) through Megatron checkpoints split over two tensor
// and two expert ranks, in both formats, comes back as the file transformers wrote, its config
// with the yarn rope, the sinks' layer pattern and the clamp.
TEST(Convert, GptOssFolderComesBackThroughSplitMegatronCheckpoints) {
    const fs::path source = mt::test::fixtures_dir() / "hf" / "gpt_oss";
    for (const char* format : {"core", "torch_dist"}) {
        SCOPED_TRACE(format);
        TempDir dir;
        convert_ok(source, dir / "megatron",
                   std::string("--loader hf --target-tensor-parallel-size 2 "
                               "--target-expert-parallel-size 2 --saver ") +
                       format);
        convert_ok(dir / "megatron", dir / "hf", std::string("--saver hf --loader ") + format);
        EXPECT_TRUE(read_file(dir / "hf/model.safetensors") ==
                    read_file(source / "model.safetensors"));
        const std::string config = read_file(dir / "hf/config.json");
        for (const char* member :
             {"\"model_type\": \"gpt_oss\"", "\"rope_type\": \"yarn\"", "\"truncate\": false",
              "\"swiglu_limit\": 0.15", "\"sliding_window\": 4", "\"sliding_attention\""})
            EXPECT_NE(config.find(member), std::string::npos) << member << "\n" << config;
    }
}

// megatron-generate's log-probs of a fixed prompt from the model at `load` (their JSON from the
// second token on).
std::string prompt_log_probs(const fs::path& load) {
    auto r = run_command(mt::test::tool_path("megatron-generate").string() + " --load " + q(load) +
                         " --tokenizer-type NullTokenizer --vocab-size 127"
                         " --out-seq-length 0 --return-log-probs"
                         " --prompts '5 17 99 3 64 12 7' 2>&1");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const size_t at = r.output.find("\"17\"");
    return at == std::string::npos ? r.output : r.output.substr(at);
}

// OpenAI's MXFP4 packing of GPT-OSS's experts (make_gpt_oss_fixtures.py's gpt_oss_mxfp4) through a
// TP2 x EP2 torch_dist checkpoint and back: each scores the prompt as the folder does, and the
// export holds the dequantized experts, unquantized.
TEST(Convert, Mxfp4GptOssFolderConvertsDequantized) {
    const fs::path source = mt::test::fixtures_dir() / "hf" / "gpt_oss_mxfp4";
    TempDir dir;
    convert_ok(source, dir / "megatron",
               "--loader hf --saver torch_dist --target-tensor-parallel-size 2 "
               "--target-expert-parallel-size 2");
    convert_ok(dir / "megatron", dir / "hf", "--saver hf --loader torch_dist");
    const std::string want = prompt_log_probs(source);
    EXPECT_EQ(prompt_log_probs(dir / "megatron"), want);
    EXPECT_EQ(prompt_log_probs(dir / "hf"), want);
    const std::string config = read_file(dir / "hf/config.json");
    EXPECT_EQ(config.find("quantization_config"), std::string::npos) << config;
}

// A Gemma 3 folder (make_gemma3_fixtures.py) through Megatron checkpoints split over two tensor
// ranks, in both formats: megatron-generate scores a prompt the same from the folder and from
// each, and each comes back as the file transformers wrote, its config with both rope bases,
// the linear scaling, the layer pattern and the pre-attention scalar.
TEST(Convert, Gemma3FolderComesBackThroughSplitMegatronCheckpoints) {
    const fs::path source = mt::test::fixtures_dir() / "hf" / "gemma3";
    const std::string want = prompt_log_probs(source);
    for (const char* format : {"core", "torch_dist"}) {
        SCOPED_TRACE(format);
        TempDir dir;
        convert_ok(source, dir / "megatron",
                   std::string("--loader hf --target-tensor-parallel-size 2 --saver ") + format);
        EXPECT_EQ(prompt_log_probs(dir / "megatron"), want);
        convert_ok(dir / "megatron", dir / "hf", std::string("--saver hf --loader ") + format);
        EXPECT_TRUE(read_file(dir / "hf/model.safetensors") ==
                    read_file(source / "model.safetensors"));
        const std::string config = read_file(dir / "hf/config.json");
        for (const char* member :
             {"\"model_type\": \"gemma3_text\"", "\"rope_local_base_freq\": 10000",
              "\"rope_theta\": 1000000", "\"rope_type\": \"linear\"",
              "\"query_pre_attn_scalar\": 24", "\"sliding_window\": 4",
              "\"sliding_attention\",\n    \"sliding_attention\",\n    \"full_attention\""})
            EXPECT_NE(config.find(member), std::string::npos) << member << "\n" << config;
    }
}

// A multimodal Gemma 3 folder's text model converts like the text-only one's and comes back as a
// Gemma3ForCausalLM folder (the vision tower stays behind) that scores the prompt the same.
TEST(Convert, MultimodalGemma3FolderConvertsItsTextModel) {
    const fs::path source = mt::test::fixtures_dir() / "hf" / "gemma3_mm";
    TempDir dir;
    convert_ok(source, dir / "megatron",
               "--loader hf --target-tensor-parallel-size 2 --saver torch_dist");
    convert_ok(dir / "megatron", dir / "hf", "--saver hf --loader torch_dist");
    const std::string want = prompt_log_probs(source);
    EXPECT_EQ(prompt_log_probs(dir / "megatron"), want);
    EXPECT_EQ(prompt_log_probs(dir / "hf"), want);
    const std::string config = read_file(dir / "hf/config.json");
    EXPECT_NE(config.find("\"model_type\": \"gemma3_text\""), std::string::npos) << config;
    EXPECT_NE(config.find("\"tie_word_embeddings\": false"), std::string::npos) << config;
}

// DeepSeek-V3 folders (make_deepseek_fixtures.py: MLA with q-lora and YaRN, dense then MoE
// layers; without q-lora, YaRN or experts, tied; with a multi-token prediction layer as
// DeepSeek's folders hold it) and a DeepSeek-V2 one (softmax routing, no correction bias) convert
// to torch_dist split over two tensor and two expert ranks and to a three-stage torch checkpoint;
// megatron-generate scores a prompt the same from the folder and from both, and both come back as
// the files transformers wrote.
TEST(Convert, DeepseekV3FoldersComeBackThroughSplitMegatronCheckpoints) {
    for (const char* name : {"deepseek_v3", "deepseek_v3_lite", "deepseek_v3_mtp", "deepseek_v2"}) {
        SCOPED_TRACE(name);
        TempDir dir;
        const fs::path source = mt::test::fixtures_dir() / "hf" / name;
        const bool moe = std::string(name) != "deepseek_v3_lite";
        convert_ok(source, dir / "torch_dist",
                   std::string("--loader hf --saver torch_dist --target-tensor-parallel-size 2") +
                       (moe ? " --target-expert-parallel-size 2" : ""));
        convert_ok(source, dir / "core",
                   std::string("--loader hf --saver core --target-pipeline-parallel-size ") +
                       (moe ? "3" : "2"));
        const std::string want = prompt_log_probs(source);
        for (const char* format : {"torch_dist", "core"}) {
            EXPECT_EQ(prompt_log_probs(dir / format), want) << format;
            const fs::path back = dir / (std::string(format) + "_hf");
            convert_ok(dir / format, back, std::string("--saver hf --loader ") + format);
            EXPECT_TRUE(read_file(back / "model.safetensors") ==
                        read_file(source / "model.safetensors"))
                << format;
            EXPECT_NE(
                read_file(back / "config.json")
                    .find(std::string("\"model_type\": \"") +
                          (std::string(name) == "deepseek_v2" ? "deepseek_v2" : "deepseek_v3")),
                std::string::npos)
                << format;
        }
    }
}

TEST(Convert, SaverHfRefusesWhatItCannotWrite) {
    TempDir dir;
    // The convert fixture's model has LayerNorm and SwiGLU with learned positions.
    auto r = convert(fixture("tp1"), dir / "out", "--loader core --saver hf");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.output.find("error: not supported yet: swiglu=True in --saver hf"),
              std::string::npos)
        << r.output;
    EXPECT_FALSE(fs::exists(dir / "out"));
    r = convert(mt::test::fixtures_dir() / "torch_dist" / "gpt2_tp1", dir / "out",
                "--loader torch_dist --saver hf --target-tensor-parallel-size 2");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.output.find("--saver hf writes whole tensors"), std::string::npos) << r.output;
}

}  // namespace
