// BERT checkpoints through the tools. megatron-train --model bert (dropout on) saved in the torch
// format and in torch_dist (Megatron's default) resumes to the losses of the uninterrupted run,
// and its checkpoint converts to a Hugging Face folder and back unchanged. megatron-convert
// --model-type BERT takes the Hugging Face Megatron-BERT and post-LayerNorm BERT folders
// (tests/fixtures/hf/make_bert_fixtures.py) to torch and torch_dist at TP1 and TP2 in
// megatron-core's keys and back to the same folder tensor for tensor; writes Megatron's legacy
// BERT layout key for key (tests/fixtures/bert/legacy_bert_keys.txt, from Megatron's own legacy
// model) and reads it back; converts the published BERT-345M's layout
// (tests/fixtures/bert/legacy_bert) to megatron-core's keys; and refuses to export a model whose
// GeLUs Hugging Face's BERT cannot hold.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "mt/io/torch_file.h"
#include "test_support.h"

namespace fs = std::filesystem;
using mt::test::read_file;
using mt::test::run_command;
using mt::test::TempDir;

namespace {

std::string q(const fs::path& p) {
    return mt::test::shell_quote(p);
}

// A WordPiece vocabulary and a corpus of multi-sentence documents over it, preprocessed as
// pretrain_bert.py reads it (one sequence per sentence); returns the dataset prefix.
std::string make_bert_dataset(const TempDir& dir) {
    const std::vector<std::string> words = {
        "the",    "a",    "cat",   "dog",  "sat",  "on",    "mat",   "ran",  "fast",
        "slow",   "big",  "small", "red",  "blue", "green", "house", "tree", "car",
        "walked", "over", "under", "near", "far",  "happy", "sad",   "old",  "new",
        "bird",   "fish", "swam",  "flew", "sang", "read",  "book",  "pen",  "table"};
    std::string vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n.\n";
    for (const std::string& w : words) vocab += w + "\n";
    mt::test::write_file(dir / "vocab.txt", vocab);
    std::string jsonl;
    uint64_t state = 7;
    auto next = [&](uint64_t n) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return (state >> 33) % n;
    };
    for (int d = 0; d < 60; ++d) {
        jsonl += "{\"text\": [";
        const uint64_t sentences = 2 + next(5);
        for (uint64_t s = 0; s < sentences; ++s) {
            jsonl += s ? ", \"" : "\"";
            const uint64_t length = 3 + next(7);
            for (uint64_t w = 0; w < length; ++w)
                jsonl += (w ? " " : "") + words[next(words.size())];
            jsonl += ".\"";
        }
        jsonl += "]}\n";
    }
    mt::test::write_file(dir / "corpus.jsonl", jsonl);
    auto r = run_command(mt::test::tool_path("megatron-preprocess").string() + " --input " +
                         q(dir / "corpus.jsonl") + " --output-prefix " + q(dir / "corpus") +
                         " --tokenizer-type BertWordPieceLowerCase --vocab-file " +
                         q(dir / "vocab.txt") + " 2>&1");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return (dir / "corpus_text_document").string();
}

// pretrain_bert.py's flags at tiny sizes, 6 iterations (Megatron's dropout of 0.1 on, so resuming
// must restore the dropout stream too; the erf GeLU, so the model exports to Hugging Face).
std::string train_command(const TempDir& dir, const std::string& data) {
    return mt::test::tool_path("megatron-train").string() +
           " --model bert --num-layers 2 --hidden-size 16 --num-attention-heads 2"
           " --seq-length 32 --max-position-embeddings 32 --micro-batch-size 2"
           " --global-batch-size 4 --lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine"
           " --lr-warmup-iters 1 --no-bias-gelu-fusion --vocab-file " +
           q(dir / "vocab.txt") + " --data-path " + q(data) + " --split 100,0,0" +
           " --data-cache-path " + q(dir / "cache") +
           " --log-interval 1 --eval-iters 0 --train-iters 6";
}

// iteration -> the "lm loss" and "sop loss" texts of its log line.
std::map<int, std::pair<std::string, std::string>> losses(const std::string& output) {
    static const std::regex line(
        R"(iteration +(\d+)/ +\d+ \|.*\| lm loss: ([0-9.E+-]+) \| sop loss: ([0-9.E+-]+) \|)");
    std::map<int, std::pair<std::string, std::string>> out;
    for (auto it = std::sregex_iterator(output.begin(), output.end(), line);
         it != std::sregex_iterator(); ++it)
        out[std::stoi((*it)[1])] = {(*it)[2], (*it)[3]};
    return out;
}

mt::test::RunResult convert(const fs::path& from, const fs::path& to, const std::string& flags) {
    return run_command(mt::test::tool_path("megatron-convert").string() +
                       " --model-type BERT --load-dir " + q(from) + " --save-dir " + q(to) + " " +
                       flags + " 2>&1");
}

void convert_ok(const fs::path& from, const fs::path& to, const std::string& flags) {
    auto r = convert(from, to, flags);
    ASSERT_EQ(r.exit_code, 0) << flags << "\n" << r.output;
}

// The model entries of two model_optim_rng.pt files: the same keys, in order, and values; with
// `vocab`, the vocabulary tables of `expected` cut to that many rows (a Hugging Face folder
// keeps the true vocabulary, not Megatron's padding).
void expect_same_model(const fs::path& expected, const fs::path& actual, int64_t vocab = 0) {
    const mt::io::PyValue want = mt::io::load_torch_file(expected)["model"];
    const mt::io::PyValue got = mt::io::load_torch_file(actual)["model"];
    ASSERT_EQ(got.dict_ref().items.size(), want.dict_ref().items.size()) << actual;
    for (size_t i = 0; i < want.dict_ref().items.size(); ++i) {
        const auto& [k, v] = want.dict_ref().items[i];
        EXPECT_EQ(got.dict_ref().items[i].first.as_string(), k.as_string()) << actual;
        const bool table = k.as_string() == "embedding.word_embeddings.weight" ||
                           k.as_string() == "output_layer.bias";
        const mt::Tensor a =
            (vocab > 0 && table ? v.as_tensor().slice(0, 0, vocab) : v.as_tensor()).contiguous();
        const mt::Tensor b = got[k.as_string()].as_tensor().contiguous();
        EXPECT_TRUE(a.shape() == b.shape() && a.dtype() == b.dtype() &&
                    std::memcmp(a.raw_data(), b.raw_data(), size_t(a.nbytes())) == 0)
            << actual << ": " << k.as_string();
    }
}

// The two folders' model.safetensors are the same file, so every tensor has the same name,
// shape and bytes (our writer lays a file out as transformers' safetensors does).
void expect_same_folder(const fs::path& want, const fs::path& got) {
    EXPECT_EQ(read_file(got / "model.safetensors"), read_file(want / "model.safetensors"))
        << got << " against " << want;
}

// Flattened "a.b.c" keys of a nested state dict's tensors, in order.
void flat_keys(const mt::io::PyValue& dict, const std::string& prefix,
               std::vector<std::string>& out) {
    for (const auto& [k, v] : dict.dict_ref().items) {
        if (v.kind() == mt::io::PyKind::dict)
            flat_keys(v, prefix + k.as_string() + ".", out);
        else if (v.kind() == mt::io::PyKind::tensor)
            out.push_back(prefix + k.as_string());
    }
}

fs::path hf_fixture(const std::string& name) {
    return mt::test::fixtures_dir() / "hf" / name;
}

TEST(BertCheckpoint, TrainingResumesExactlyInBothFormats) {
    TempDir dir;
    const std::string base = train_command(dir, make_bert_dataset(dir));
    auto full = run_command(base + " 2>&1");
    ASSERT_EQ(full.exit_code, 0) << full.output;
    const auto expected = losses(full.output);
    ASSERT_EQ(expected.size(), 6u) << full.output;
    const std::map<int, std::pair<std::string, std::string>> after(expected.upper_bound(3),
                                                                   expected.end());
    for (const std::string format : {"torch", "torch_dist"}) {
        const fs::path ckpt = dir / ("ckpt_" + format);
        auto first = run_command(base + " --ckpt-format " + format + " --save " + q(ckpt) +
                                 " --exit-interval 3 2>&1");
        ASSERT_EQ(first.exit_code, 0) << first.output;
        EXPECT_TRUE(
            fs::exists(ckpt / "iter_0000003" /
                       (format == "torch" ? "mp_rank_00/model_optim_rng.pt" : "metadata.json")))
            << format;
        // --load finds the format whatever --ckpt-format says.
        auto resumed = run_command(base + " --load " + q(ckpt) + " 2>&1");
        ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
        EXPECT_EQ(losses(resumed.output), after) << format << "\n" << resumed.output;
    }
}

TEST(BertCheckpoint, TrainedCheckpointConvertsToHuggingFaceAndBack) {
    TempDir dir;
    auto r =
        run_command(train_command(dir, make_bert_dataset(dir)) + " --ckpt-format torch --save " +
                    q(dir / "ckpt_torch") + " --exit-interval 3 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // The trained checkpoint's args describe its model: it converts to a Hugging Face folder
    // (the vocabulary cut to the tokenizer's: vocab.txt's 42 tokens and the [BOS] and [EOS]
    // Megatron's BertWordPiece tokenizers add) and back to the same tensors.
    const fs::path torch_file = dir / "ckpt_torch/iter_0000003/mp_rank_00/model_optim_rng.pt";
    convert_ok(dir / "ckpt_torch", dir / "hf", "--loader core --saver hf");
    const std::string config = read_file(dir / "hf/config.json");
    EXPECT_NE(config.find("\"MegatronBertForPreTraining\""), std::string::npos) << config;
    EXPECT_NE(config.find("\"vocab_size\": 44"), std::string::npos) << config;
    EXPECT_EQ(read_file(dir / "hf/vocab.txt"), read_file(dir / "vocab.txt"));
    convert_ok(dir / "hf", dir / "back", "--loader hf --saver core");
    expect_same_model(torch_file, dir / "back/iter_0000001/mp_rank_00/model_optim_rng.pt", 44);
}

// megatron-core's BertModel keys (Transformer Engine spec) of a pretraining model at TP2: the
// column-parallel tensors halved, the row-parallel ones split on their input.
void expect_core_keys_at_tp2(const fs::path& rank_file) {
    const mt::io::PyValue model = mt::io::load_torch_file(rank_file)["model"];
    std::vector<std::string> keys;
    for (const auto& [k, v] : model.dict_ref().items) keys.push_back(k.as_string());
    ASSERT_EQ(keys.size(), 38u) << rank_file;
    EXPECT_EQ(keys.front(), "embedding.word_embeddings.weight");
    EXPECT_EQ(keys[3], "encoder.layers.0.self_attention.linear_proj.weight");
    EXPECT_EQ(keys.back(), "pooler.dense.bias");
    const std::map<std::string, mt::Shape> shapes = {
        {"embedding.word_embeddings.weight", {50, 32}},
        {"embedding.tokentype_embeddings.weight", {2, 32}},
        {"encoder.layers.1.self_attention.linear_qkv.weight", {48, 32}},
        {"encoder.layers.1.self_attention.linear_qkv.layer_norm_bias", {32}},
        {"encoder.layers.1.self_attention.linear_proj.weight", {32, 16}},
        {"encoder.layers.1.mlp.linear_fc1.weight", {32, 32}},
        {"encoder.layers.1.mlp.linear_fc2.weight", {32, 32}},
        {"encoder.final_layernorm.weight", {32}},
        {"lm_head.layer_norm.weight", {32}},
        {"output_layer.bias", {50}},
        {"binary_head.weight", {2, 32}}};
    for (const auto& [name, shape] : shapes)
        EXPECT_EQ(model[name].as_tensor().shape(), shape) << name;
}

TEST(BertCheckpoint, HuggingFaceFoldersConvertAtTp1AndTp2AndBack) {
    for (const char* name : {"megatron_bert", "bert"}) {
        for (const auto& [saver, loader] :
             {std::pair{"core", "core"}, std::pair{"torch_dist", "torch_dist"}}) {
            for (int tp : {1, 2}) {
                TempDir dir;
                const std::string what =
                    std::string(name) + " " + saver + " TP" + std::to_string(tp);
                convert_ok(hf_fixture(name), dir / "megatron",
                           std::string("--loader hf --saver ") + saver +
                               " --target-tensor-parallel-size " + std::to_string(tp));
                if (std::string(saver) == "core") {
                    for (int r = 0; r < tp; ++r)
                        EXPECT_TRUE(fs::exists(dir / "megatron/iter_0000001" /
                                               ("mp_rank_0" + std::to_string(r)) /
                                               "model_optim_rng.pt"))
                            << what;
                    if (tp == 2 && std::string(name) == "megatron_bert")
                        expect_core_keys_at_tp2(
                            dir / "megatron/iter_0000001/mp_rank_01/model_optim_rng.pt");
                } else {
                    EXPECT_TRUE(fs::exists(dir / "megatron/iter_0000001/metadata.json")) << what;
                }
                convert_ok(dir / "megatron", dir / "hf",
                           std::string("--loader ") + loader + " --saver hf");
                SCOPED_TRACE(what);
                expect_same_folder(hf_fixture(name), dir / "hf");
            }
        }
    }
}

TEST(BertCheckpoint, LegacyLayoutIsMegatronsAndReadsBack) {
    TempDir dir;
    convert_ok(hf_fixture("megatron_bert"), dir / "legacy", "--loader hf --saver legacy");
    const fs::path file = dir / "legacy/iter_0000001/mp_rank_00/model_optim_rng.pt";
    std::vector<std::string> keys, megatron;
    flat_keys(mt::io::load_torch_file(file)["model"], "", keys);
    std::ifstream in(mt::test::fixtures_dir() / "bert" / "legacy_bert_keys.txt");
    for (std::string line; std::getline(in, line);) megatron.push_back(line);
    EXPECT_EQ(keys, megatron);
    convert_ok(dir / "legacy", dir / "hf", "--loader legacy --saver hf");
    expect_same_folder(hf_fixture("megatron_bert"), dir / "hf");
}

// The original post-LayerNorm BERT is Megatron's legacy BERT with
// --apply-residual-connection-post-layernorm (core_v0.13's legacy BertModel loads this file
// and gives transformers' logits: tests/fixtures/bert/check_megatron_legacy_loads_post_ln_bert.py).
TEST(BertCheckpoint, PostLayerNormBertIsALegacyBertWithTheResidualAfterTheNorm) {
    TempDir dir;
    convert_ok(hf_fixture("bert"), dir / "legacy", "--loader hf --saver legacy");
    const mt::io::PyValue saved =
        mt::io::load_torch_file(dir / "legacy/iter_0000001/mp_rank_00/model_optim_rng.pt");
    const mt::io::PyValue& args = saved["args"];
    EXPECT_TRUE(args["apply_residual_connection_post_layernorm"].as_bool());
    EXPECT_TRUE(args["use_legacy_models"].as_bool());
    convert_ok(dir / "legacy", dir / "hf", "--loader legacy --saver hf");
    expect_same_folder(hf_fixture("bert"), dir / "hf");
}

TEST(BertCheckpoint, PublishedLegacyLayoutConvertsToMegatronCore) {
    TempDir dir;
    const fs::path legacy = mt::test::fixtures_dir() / "bert" / "legacy_bert";
    convert_ok(legacy, dir / "core",
               "--loader legacy --saver core --target-tensor-parallel-size 2");
    const mt::io::PyValue model =
        mt::io::load_torch_file(dir / "core/release/mp_rank_01/model_optim_rng.pt")["model"];
    // A legacy model's file: the local spec's norm names unless --saver-transformer-impl.
    for (const char* key : {"encoder.layers.1.self_attention.linear_qkv.weight",
                            "encoder.layers.1.input_layernorm.weight",
                            "encoder.final_layernorm.bias", "lm_head.layer_norm.weight",
                            "output_layer.bias", "binary_head.weight", "pooler.dense.weight"})
        EXPECT_TRUE(model.find(key)) << key;
    // Back to the legacy layout at TP1: the release's tensors in today's spelling and QKV order,
    // which reads back as the release itself does.
    convert_ok(dir / "core", dir / "legacy",
               "--loader core --saver legacy --target-tensor-parallel-size 1");
    convert_ok(dir / "legacy", dir / "again", "--loader legacy --saver core");
    convert_ok(legacy, dir / "direct", "--loader legacy --saver core");
    expect_same_model(dir / "direct/release/mp_rank_00/model_optim_rng.pt",
                      dir / "again/release/mp_rank_00/model_optim_rng.pt");
    // Megatron's defaults (the fused bias-GeLU: tanh in the layers, erf in the LM head) have no
    // Hugging Face BERT.
    auto r = convert(legacy, dir / "hf", "--loader legacy --saver hf");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.output.find("not supported yet: bias_gelu_fusion=True in --saver hf"),
              std::string::npos)
        << r.output;
}

}  // namespace
