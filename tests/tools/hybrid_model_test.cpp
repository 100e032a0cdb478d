// megatron-train --model mamba with the flags of Megatron's examples/mamba/train.sh (tiny sizes,
// local data): Megatron's allocation lines, a falling loss, a checkpoint that resumes and that
// megatron-eval scores (WIKITEXT103); and megatron-generate on such a checkpoint, whose
// decoding over the recurrent state gives the log-probabilities of reading the whole sequence at
// once, also after megatron-convert moved it between formats and pipeline layouts; and activation
// recompute giving the same losses; Hugging Face Mamba-2 and Nemotron-H folders through
// generate and convert, both ways.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <regex>
#include <sstream>

#include "test_support.h"

namespace fs = std::filesystem;
using mt::test::printed_logprobs;
using mt::test::run_command;
using mt::test::shell_quote;
using mt::test::TempDir;
using mt::test::tool_path;

namespace {

// examples/mamba/train.sh's model and training flags at tiny sizes (4 layers: 0.25 attention
// and 0.25 MLP make Megatron's "MM*-").
const std::string kMambaExample =
    " --model mamba --num-layers 4 --hidden-size 32 --num-attention-heads 4"
    " --group-query-attention --num-query-groups 2 --hybrid-attention-ratio 0.25"
    " --hybrid-mlp-ratio 0.25 --mamba-state-dim 8 --mamba-head-dim 8 --mamba-num-groups 2"
    " --position-embedding-type none --untie-embeddings-and-output-weights --init-method-std 0.02"
    " --seq-length 32 --max-position-embeddings 32 --micro-batch-size 2 --global-batch-size 4"
    " --lr 2.5e-3 --min-lr 2.5e-4 --lr-decay-style cosine --weight-decay 0.1 --clip-grad 1.0"
    " --attention-dropout 0.0 --hidden-dropout 0.0 --disable-bias-linear --normalization RMSNorm"
    " --adam-beta1 0.9 --adam-beta2 0.95 --use-mcore-models "
    "--no-create-attention-mask-in-dataloader"
    " --spec megatron.core.models.mamba.mamba_layer_specs mamba_stack_spec";

// The "lm loss" of each logged iteration.
std::vector<double> losses(const std::string& log) {
    static const std::regex loss(R"(lm loss: ([0-9.E+-]+))");
    std::vector<double> out;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), loss); it != std::sregex_iterator();
         ++it)
        out.push_back(std::stod((*it)[1].str()));
    return out;
}

TEST(HybridModel, TrainsWithMegatronsMambaExampleFlagsAndResumes) {
    TempDir dir;
    const std::string data = mt::test::tiny_gpt2_dataset(dir, mt::test::hello_documents(200));
    const std::string base =
        shell_quote(tool_path("megatron-train")) + kMambaExample +
        mt::test::tiny_gpt2_tokenizer_flags() + " --data-path " + shell_quote(data) +
        " --split 90,8,2 --data-cache-path " + shell_quote(dir.path() / "cache") +
        " --train-iters 50 --log-interval 10 --eval-interval 1000 --eval-iters 1 --save " +
        shell_quote(dir.path() / "ckpt") + " --save-interval 40";
    auto r = run_command(base + " --exit-interval 40");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("Hybrid allocation (M is mamba, * is attention, - is mlp):\n"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("\nMM*-\n"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("Target attention ratio: 0.25. Actual attention ratio: 0.25."),
              std::string::npos);
    const std::vector<double> l = losses(r.output);
    ASSERT_EQ(l.size(), 4u) << r.output;
    EXPECT_LT(l.back(), l.front() - 1.0) << r.output;
    // Resumed from iteration 40.
    auto resumed = run_command(base + " --load " + shell_quote(dir.path() / "ckpt"));
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    EXPECT_NE(resumed.output.find("iteration       50/      50"), std::string::npos)
        << resumed.output;
    EXPECT_EQ(resumed.output.find("iteration       10/"), std::string::npos) << resumed.output;
    // megatron-eval reads the checkpoint the same way (its args name the tokenizer).
    mt::test::write_file(dir.path() / "wiki.txt",
                         " = Document 3 = \n Document 3 says hello and then goodbye . \n");
    auto eval = run_command(shell_quote(tool_path("megatron-eval")) +
                            " --model mamba --task WIKITEXT103 --micro-batch-size 2 --load " +
                            shell_quote(dir.path() / "ckpt") + " --valid-data " +
                            shell_quote(dir.path() / "wiki.txt"));
    ASSERT_EQ(eval.exit_code, 0) << eval.output;
    EXPECT_NE(eval.output.find("validation results on WIKITEXT103 | avg loss: "), std::string::npos)
        << eval.output;
}

// Activation recompute (full, uniform over 2 layers; selective, the MLP and the norms) replays
// every layer with its hidden dropout: the same losses as keeping everything.
TEST(HybridModel, RecomputeGivesTheSameLosses) {
    const std::string train = shell_quote(tool_path("megatron-train")) + kMambaExample +
                              " --mock-data --tokenizer-type NullTokenizer --vocab-size 4096"
                              " --hidden-dropout 0.1 --train-iters 4 --log-interval 1"
                              " --eval-iters 0";
    auto kept = run_command(train);
    ASSERT_EQ(kept.exit_code, 0) << kept.output;
    ASSERT_EQ(losses(kept.output).size(), 4u) << kept.output;
    for (const char* recompute :
         {" --recompute-granularity full --recompute-method uniform --recompute-num-layers 2",
          " --recompute-granularity selective --recompute-modules mlp layernorm"}) {
        auto r = run_command(train + recompute);
        ASSERT_EQ(r.exit_code, 0) << r.output;
        EXPECT_EQ(losses(r.output), losses(kept.output)) << recompute;
    }
}

TEST(HybridModel, GeneratesOverTheRecurrentStateAsItScoresWholeSequences) {
    TempDir dir;
    const fs::path ckpt = dir.path() / "ckpt";
    auto r = run_command(shell_quote(tool_path("megatron-train")) + kMambaExample +
                         " --mock-data --tokenizer-type NullTokenizer --vocab-size 4096"
                         " --train-iters 3 --log-interval 1 --eval-iters 0 --save " +
                         shell_quote(ckpt) + " --save-interval 3");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto generate = [](const fs::path& load, const std::string& flags) {
        return run_command(shell_quote(tool_path("megatron-generate")) + " --model mamba --load " +
                           shell_quote(load) +
                           " --tokenizer-type NullTokenizer --vocab-size 4096 --greedy"
                           " --return-log-probs " +
                           flags);
    };
    // A prompt of 5 tokens, then 6 decoded one at a time over the Mamba and attention states.
    auto decoded = generate(ckpt, "--out-seq-length 6 --prompts '3 1 4 1 5'");
    ASSERT_EQ(decoded.exit_code, 0) << decoded.output;
    static const std::regex text(R"(\n(3 1 4 1 5( \d+){6})\n)");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(decoded.output, m, text)) << decoded.output;
    const std::string whole_sequence = "--out-seq-length 0 --prompts '" + m[1].str() + "'";
    auto whole = generate(ckpt, whole_sequence);
    ASSERT_EQ(whole.exit_code, 0) << whole.output;
    const std::vector<double> a = printed_logprobs(decoded.output),
                              b = printed_logprobs(whole.output);
    ASSERT_EQ(a.size(), 10u) << decoded.output;
    ASSERT_EQ(b.size(), 10u) << whole.output;
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-4) << i;

    // megatron-convert --model-type Mamba: torch_dist -> torch over 2 pipeline stages, or 2
    // tensor ranks (each holding its slice of in_proj's z, x, B, C and dt) -> torch_dist; every
    // copy scores the sequence to the bit.
    const std::string convert = shell_quote(tool_path("megatron-convert")) + " --model-type Mamba";
    for (const char* target : {"pipeline", "tensor"}) {
        const std::string to = std::string(target) == "pipeline" ? "pp2" : "tp2";
        auto c = run_command(convert + " --loader torch_dist --saver core --load-dir " +
                             shell_quote(ckpt) + " --save-dir " + shell_quote(dir.path() / to) +
                             " --target-" + target + "-parallel-size 2");
        ASSERT_EQ(c.exit_code, 0) << c.output;
        c = run_command(convert + " --loader core --saver torch_dist --load-dir " +
                        shell_quote(dir.path() / to) + " --save-dir " +
                        shell_quote(dir.path() / (to + "_back")));
        ASSERT_EQ(c.exit_code, 0) << c.output;
        for (const std::string copy : {to, to + "_back"}) {
            auto again = generate(dir.path() / copy, whole_sequence);
            ASSERT_EQ(again.exit_code, 0) << again.output;
            EXPECT_EQ(printed_logprobs(again.output), b) << copy;
        }
    }
    EXPECT_TRUE(fs::exists(dir.path() / "pp2/iter_0000003/mp_rank_00_001/model_optim_rng.pt"));
    EXPECT_TRUE(fs::exists(dir.path() / "tp2/iter_0000003/mp_rank_01/model_optim_rng.pt"));
    // examples/mamba/train.sh's MLP layers apply GeLU; Nemotron-H's relu2 (--squared-relu).
    auto c = run_command(convert + " --loader torch_dist --saver hf --load-dir " +
                         shell_quote(ckpt) + " --save-dir " + shell_quote(dir.path() / "hf"));
    EXPECT_NE(c.output.find("not supported yet: squared_relu=False in --saver hf"),
              std::string::npos)
        << c.output;
    EXPECT_FALSE(fs::exists(dir.path() / "hf"));
}

// A folder's ids in tests/fixtures/hf/hybrid_expected.json ("prompt_ids", "greedy_ids": the
// greedy continuation transformers generated) as NullTokenizer text.
std::string expected_ids(const std::string& folder, const char* key) {
    simdjson::dom::parser parser;
    const simdjson::dom::element doc =
        parser.load((mt::test::fixtures_dir() / "hf" / "hybrid_expected.json").string());
    std::string text;
    for (auto id : doc[folder][key].get_array())
        text += (text.empty() ? "" : " ") + std::to_string(int64_t(id.get_int64()));
    return text;
}

// A Mamba2ForCausalLM and two NemotronHForCausalLM folders (one with MoE layers) generate
// transformers' greedy tokens, convert to a Megatron torch_dist checkpoint split over two
// tensor-parallel ranks (in_proj's parts, the heads and the groups split; the experts' FFNs too)
// and generate the same there, and convert back to the very model.safetensors transformers wrote.
TEST(HybridModel, HuggingFaceFoldersGenerateConvertAndExportBackBitExactly) {
    for (const std::string name : {"mamba2", "nemotron_h", "nemotron_h_moe"}) {
        TempDir dir;
        const fs::path folder = mt::test::fixtures_dir() / "hf" / name;
        const std::string prompt = expected_ids(name, "prompt_ids");
        auto generate = [&](const fs::path& load) {
            return run_command(shell_quote(tool_path("megatron-generate")) + " --load " +
                               shell_quote(load) +
                               " --tokenizer-type NullTokenizer --vocab-size 127 --greedy"
                               " --out-seq-length 8 --prompts '" +
                               prompt + "'");
        };
        const std::string want = "\n" + prompt + " " + expected_ids(name, "greedy_ids") + "\n";
        auto r = generate(folder);
        ASSERT_EQ(r.exit_code, 0) << r.output;
        EXPECT_NE(r.output.find(want), std::string::npos) << name << r.output;
        const std::string convert =
            shell_quote(tool_path("megatron-convert")) + " --model-type Mamba";
        auto c = run_command(convert + " --loader hf --saver torch_dist --load-dir " +
                             shell_quote(folder) + " --save-dir " +
                             shell_quote(dir.path() / "tp2") + " --target-tensor-parallel-size 2");
        ASSERT_EQ(c.exit_code, 0) << c.output;
        r = generate(dir.path() / "tp2");
        ASSERT_EQ(r.exit_code, 0) << r.output;
        EXPECT_NE(r.output.find(want), std::string::npos) << name << r.output;
        c = run_command(convert + " --loader torch_dist --saver hf --load-dir " +
                        shell_quote(dir.path() / "tp2") + " --save-dir " +
                        shell_quote(dir.path() / "hf"));
        ASSERT_EQ(c.exit_code, 0) << c.output;
        EXPECT_TRUE(mt::test::read_file(dir.path() / "hf/model.safetensors") ==
                    mt::test::read_file(folder / "model.safetensors"))
            << name;
    }
}

}  // namespace
