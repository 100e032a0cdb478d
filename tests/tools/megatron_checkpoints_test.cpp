// Checkpoints Megatron's own training code wrote (tests/fixtures/megatron_checkpoints/
// make_fixtures.py: the flags of Megatron's GPT-3, Llama 3, BERT and Mixtral example scripts
// through its parse_args + validate_args, its get_model and save_checkpoint; core_v0.13 and
// core_v0.19; torch and torch_dist; fp32 and bf16) through every tool: megatron-generate scores
// the fixed tokens with megatron-core's log-probabilities (1e-5), megatron-eval's WIKITEXT103
// gives their mean loss, megatron-convert reshards them to the other format at TP2 (and EP2) with
// the same numbers, megatron-train resumes from them with the example script's own flags, and a
// BERT one finetunes with megatron-eval. (BERT's log-probabilities: tests/plugins/bert.)
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mt/io/torch_file.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using mt::test::run_command;
using mt::test::shell_quote;
using mt::test::tool_path;

fs::path fixtures() {
    return mt::test::fixtures_dir() / "megatron_checkpoints";
}

struct Fixture {
    std::string key;                            // "core_v0.13/llama_torch_dist_bf16"
    std::string model;                          // gpt, llama, bert, mixtral or mamba
    std::string format;                         // torch or torch_dist
    std::vector<std::string> flags;             // the Megatron flags that made it
    std::vector<std::vector<int64_t>> tokens;   // the scored token rows
    std::vector<std::vector<double>> logprobs;  // megatron-core's, of tokens[1:] (GPT models)

    // The tools' --model (the Megatron entry point that made it: pretrain_gpt.py, pretrain_bert.py
    // or pretrain_mamba.py / pretrain_hybrid.py).
    std::string family() const { return model == "bert" || model == "mamba" ? model : "gpt"; }
};

std::vector<Fixture> load_fixtures() {
    simdjson::dom::parser parser;
    const simdjson::dom::element root = parser.load((fixtures() / "expected.json").string());
    std::vector<Fixture> out;
    for (auto [key, value] : root.get_object()) {
        Fixture f;
        f.key = std::string(key);
        const std::string name = f.key.substr(f.key.find('/') + 1);
        f.model = name.substr(0, name.find('_'));
        // T5's (encoder-decoder: the scored tokens are labels of a decoder over an encoder's
        // input) are read by the t5 family's own tests (tests/plugins/t5).
        if (f.model == "t5") continue;
        f.format = name.find("_torch_dist_") != std::string::npos ? "torch_dist" : "torch";
        for (auto flag : value["flags"].get_array())
            f.flags.emplace_back(flag.get_string().value());
        for (auto row : value["tokens"].get_array()) {
            f.tokens.emplace_back();
            for (auto t : row.get_array()) f.tokens.back().push_back(t.get_int64());
        }
        if (f.model != "bert")
            for (auto row : value["logprobs"].get_array()) {
                f.logprobs.emplace_back();
                for (auto v : row.get_array()) f.logprobs.back().push_back(v.get_double());
            }
        out.push_back(std::move(f));
    }
    return out;
}

std::string words(const std::vector<int64_t>& ids) {
    std::string s;
    for (int64_t id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
    return s;
}

// The token log-probabilities megatron-generate prints for each prompt ('  "17" -5.03').
std::vector<std::vector<double>> printed_logprobs(const std::string& output) {
    std::vector<std::vector<double>> rows;
    std::istringstream in(output);
    bool started = false;
    for (std::string line; std::getline(in, line);) {
        if (line.find(" loaded ") != std::string::npos) {
            started = true;
            continue;
        }
        if (!started) continue;
        if (line.rfind("  \"", 0) == 0)
            rows.back().push_back(std::stod(line.substr(line.rfind("\" ") + 2)));
        else
            rows.emplace_back();
    }
    return rows;
}

void expect_logprobs(const std::vector<std::vector<double>>& got,
                     const std::vector<std::vector<double>>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t r = 0; r < want.size(); ++r) {
        ASSERT_EQ(got[r].size(), want[r].size()) << what << " row " << r;
        for (size_t i = 0; i < want[r].size(); ++i)
            EXPECT_NEAR(got[r][i], want[r][i], 1e-5 * std::max(1.0, std::abs(want[r][i])))
                << what << " row " << r << " token " << i + 1;
    }
}

// megatron-generate's scores of the fixture's tokens (NullTokenizer ids: every vocabulary here
// holds them).
std::string score_command(const fs::path& load, const Fixture& f) {
    std::string command = shell_quote(tool_path("megatron-generate")) + " --model " + f.family() +
                          " --load " + shell_quote(load) +
                          " --tokenizer-type NullTokenizer --vocab-size 200 --out-seq-length 0"
                          " --return-log-probs --prompts";
    for (const auto& row : f.tokens) command += " '" + words(row) + "'";
    return command;
}

// megatron-eval's zero-shot WIKITEXT103 on `f`'s first token row (NullTokenizer ids, written to
// `text`): their mean loss, printed to five digits.
void expect_eval_mean_loss(const fs::path& load, const Fixture& f, int vocab,
                           const fs::path& text) {
    mt::test::write_file(text, words(f.tokens[0]));
    auto r = run_command(shell_quote(tool_path("megatron-eval")) + " --model " + f.family() +
                         " --task WIKITEXT103 --valid-data " + shell_quote(text) + " --load " +
                         shell_quote(load) + " --tokenizer-type NullTokenizer --vocab-size " +
                         std::to_string(vocab) + " --seq-length 32 --micro-batch-size 1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(avg loss: ([0-9.E+-]+) )")))
        << r.output;
    double mean = 0;
    for (double lp : f.logprobs[0]) mean -= lp / double(f.logprobs[0].size());
    EXPECT_NEAR(std::stod(m[1]), mean, 1e-4 * mean) << r.output;
}

// `flags` with each of `replace`'s flags given its value (dropped where the value is empty) and
// the rest kept; a flag missing from `flags` is appended.
std::string with_flags(const std::vector<std::string>& flags,
                       const std::vector<std::pair<std::string, std::string>>& replace) {
    std::map<std::string, std::string> values(replace.begin(), replace.end());
    std::set<std::string> done;
    std::string out;
    for (size_t i = 0; i < flags.size(); ++i) {
        const std::string& flag = flags[i];
        const bool takes_value = i + 1 < flags.size() && flags[i + 1].rfind("--", 0) != 0;
        if (auto it = values.find(flag); it != values.end()) {
            if (!it->second.empty()) out += " " + flag + " " + it->second;
            done.insert(flag);
            if (takes_value) ++i;
            continue;
        }
        out += " " + shell_quote(flag);
    }
    for (const auto& [flag, value] : replace)
        if (!done.count(flag) && !value.empty()) out += " " + flag + " " + value;
    return out;
}

class MegatronCheckpoints : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = new mt::test::TempDir();
        fixtures_ = new std::vector<Fixture>(load_fixtures());
        // A NullTokenizer corpus (ids below 200) for the Llama and Mixtral runs, a GPT-2 tiny
        // one for GPT, and a BERT one over tests/fixtures/wordpiece/tiny_vocab.txt.
        std::string ints, bert;
        uint64_t state = 11;
        auto next = [&](uint64_t n) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            return (state >> 33) % n;
        };
        for (int d = 0; d < 200; ++d) {
            ints += "{\"text\": \"";
            for (uint64_t i = 0, n = 20 + next(60); i < n; ++i)
                ints += (i ? " " : "") + std::to_string(1 + next(198));
            ints += "\"}\n";
        }
        const char* const kWords[] = {"hello",     "world", "cafe", "it", "is",
                                      "unaffable", "abc",   "x",    "5",  "café"};
        for (int d = 0; d < 1200; ++d) {
            bert += "{\"text\": [";
            for (uint64_t s = 0, n = 2 + next(4); s < n; ++s) {
                bert += s ? ", \"" : "\"";
                for (uint64_t w = 0, m = 3 + next(6); w < m; ++w)
                    bert += std::string(w ? " " : "") + kWords[next(10)];
                bert += " .\"";
            }
            bert += "]}\n";
        }
        const fs::path d = dir_->path();
        mt::test::write_file(d / "ints.jsonl", ints);
        mt::test::write_file(d / "bert.jsonl", bert);
        const std::string preprocess = shell_quote(tool_path("megatron-preprocess"));
        auto r = run_command(preprocess + " --input " + shell_quote(d / "ints.jsonl") +
                             " --output-prefix " + shell_quote(d / "ints") +
                             " --tokenizer-type NullTokenizer --vocab-size 200 --append-eod");
        ASSERT_EQ(r.exit_code, 0) << r.output;
        r = run_command(preprocess + " --input " + shell_quote(d / "bert.jsonl") +
                        " --output-prefix " + shell_quote(d / "bert") +
                        " --tokenizer-type BertWordPieceLowerCase --vocab-file " +
                        shell_quote(tiny_vocab()));
        ASSERT_EQ(r.exit_code, 0) << r.output;
        gpt_data_ =
            new std::string(mt::test::tiny_gpt2_dataset(*dir_, mt::test::hello_documents(2000)));
    }
    static void TearDownTestSuite() {
        delete dir_;
        delete fixtures_;
        delete gpt_data_;
    }
    static fs::path tiny_vocab() {
        return mt::test::fixtures_dir() / "wordpiece" / "tiny_vocab.txt";
    }
    // The example script's flags for a run of megatron-train resuming from the fixture: its
    // data, tokenizer files and output folders here, one more iteration, one eval iteration.
    static std::string train_command(const Fixture& f, const fs::path& save) {
        const fs::path d = dir_->path();
        const fs::path gpt2 = mt::test::fixtures_dir() / "gpt2-tiny";
        std::vector<std::pair<std::string, std::string>> replace = {
            {"--load", shell_quote(fixtures() / f.key)},
            {"--save", shell_quote(save)},
            {"--tensorboard-dir", ""},
            {"--data-cache-path", shell_quote(save.string() + ".cache")},
            {"--train-iters", "4"},
            {"--train-samples", ""},
            {"--lr-decay-samples", ""},
            {"--lr-warmup-samples", ""},
            {"--eval-iters", "1"},
            {"--split", "90,5,5"},  // the scripts' splits leave a corpus this small no test set
            {"--mock-data", ""},
        };
        if (f.model == "gpt") {
            replace.push_back({"--data-path", shell_quote(*gpt_data_)});
            replace.push_back({"--vocab-file", shell_quote(gpt2 / "vocab.json")});
            replace.push_back({"--merge-file", shell_quote(gpt2 / "merges.txt")});
        } else if (f.model == "bert") {
            replace.push_back({"--data-path", shell_quote(d / "bert_text_document")});
            replace.push_back({"--vocab-file", shell_quote(tiny_vocab())});
        } else {
            replace.push_back({"--data-path", shell_quote(d / "ints_text_document")});
        }
        // The fixtures hold no optimizer state (Mixtral's script says so itself).
        std::string command = shell_quote(tool_path("megatron-train")) + " --model " + f.family() +
                              with_flags(f.flags, replace);
        for (const char* flag : {"--no-load-optim", "--no-load-rng"})
            if (std::find(f.flags.begin(), f.flags.end(), flag) == f.flags.end())
                command += std::string(" ") + flag;
        return command;
    }

    static mt::test::TempDir* dir_;
    static std::vector<Fixture>* fixtures_;
    static std::string* gpt_data_;
};

mt::test::TempDir* MegatronCheckpoints::dir_ = nullptr;
std::vector<Fixture>* MegatronCheckpoints::fixtures_ = nullptr;
std::string* MegatronCheckpoints::gpt_data_ = nullptr;

TEST_F(MegatronCheckpoints, CoverBothVersionsFormatsDtypesAndExamples) {
    std::set<std::string> keys;
    for (const Fixture& f : *fixtures_) keys.insert(f.key);
    for (const char* version : {"core_v0.13", "core_v0.19"})
        for (const char* model : {"gpt", "llama", "bert", "mixtral", "mamba"})
            for (const char* format : {"torch", "torch_dist"})
                for (const char* dtype : {"fp32", "bf16"}) {
                    const std::string key =
                        std::string(version) + "/" + model + "_" + format + "_" + dtype;
                    EXPECT_TRUE(keys.count(key)) << key;
                    EXPECT_TRUE(fs::is_directory(fixtures() / key)) << key;
                }
}

// megatron-generate, on the checkpoint as saved and after megatron-convert to the other format
// at TP2 (EP2 for the Mixtral): megatron-core's log-probabilities.
TEST_F(MegatronCheckpoints, GenerateAndConvertGiveMegatronCoresLogProbs) {
    for (const Fixture& f : *fixtures_) {
        if (f.model == "bert") continue;
        SCOPED_TRACE(f.key);
        auto r = run_command(score_command(fixtures() / f.key, f));
        ASSERT_EQ(r.exit_code, 0) << r.output;
        expect_logprobs(printed_logprobs(r.output), f.logprobs, "as saved");

        const fs::path out = dir_->path() / ("converted_" + std::to_string(&f - fixtures_->data()));
        const std::string saver = f.format == "torch" ? "torch_dist" : "core";
        r = run_command(shell_quote(tool_path("megatron-convert")) + " --model-type " +
                        (f.model == "mamba" ? "Mamba" : "GPT") + " --loader " +
                        (f.format == "torch" ? "core" : "torch_dist") + " --saver " + saver +
                        " --load-dir " + shell_quote(fixtures() / f.key) + " --save-dir " +
                        shell_quote(out) + " --target-tensor-parallel-size 2" +
                        (f.model == "mixtral" ? " --target-expert-parallel-size 2" : ""));
        ASSERT_EQ(r.exit_code, 0) << r.output;
        r = run_command(score_command(out, f));
        ASSERT_EQ(r.exit_code, 0) << r.output;
        expect_logprobs(printed_logprobs(r.output), f.logprobs, "converted to " + saver);
        if (f.model == "mamba")
            for (const fs::path& dir : {fixtures() / f.key, out}) {
                // Without --model the checkpoint's args (any format, any layout: the converted
                // copy is TP2) choose the hybrid family.
                std::string plain = score_command(dir, f);
                plain.erase(plain.find(" --model mamba"), std::string(" --model mamba").size());
                r = run_command(plain);
                ASSERT_EQ(r.exit_code, 0) << r.output;
                expect_logprobs(printed_logprobs(r.output), f.logprobs, "without --model");
            }
    }
}

// megatron-eval's zero-shot WIKITEXT103 on the first token row: their mean loss.
TEST_F(MegatronCheckpoints, EvalGivesTheirMeanLoss) {
    const fs::path text = dir_->path() / "wiki.tokens";
    for (const Fixture& f : *fixtures_) {
        if (f.model == "bert") continue;
        SCOPED_TRACE(f.key);
        expect_eval_mean_loss(fixtures() / f.key, f, 200, text);
    }
}

// megatron-train with the example script's flags resumes from Megatron's checkpoint (its args,
// keys and iteration) and trains on.
TEST_F(MegatronCheckpoints, TrainResumesWithTheExampleScriptsFlags) {
    for (const Fixture& f : *fixtures_) {
        SCOPED_TRACE(f.key);
        const fs::path save = dir_->path() / ("resumed_" + std::to_string(&f - fixtures_->data()));
        auto r = run_command(train_command(f, save));
        ASSERT_EQ(r.exit_code, 0) << r.output;
        EXPECT_NE(r.output.find("successfully loaded checkpoint from"), std::string::npos)
            << r.output;
        EXPECT_NE(r.output.find("at iteration 3"), std::string::npos) << r.output;
        EXPECT_NE(r.output.find("saving checkpoint at iteration       4"), std::string::npos)
            << r.output;
        EXPECT_TRUE(fs::exists(save / "latest_checkpointed_iteration.txt"));
        if (f.model == "mamba" && f.format == "torch") {
            // The convolution under the name its Megatron version's MambaMixer loads.
            const mt::io::PyValue root = mt::io::load_torch_structure(
                save / "iter_0000004" / "mp_rank_00" / "model_optim_rng.pt");
            const bool v019 = f.key.starts_with("core_v0.19/");
            EXPECT_NE(root["model"].find(v019 ? "decoder.layers.0.mixer.conv1d_weight"
                                              : "decoder.layers.0.mixer.conv1d.weight"),
                      nullptr);
            EXPECT_EQ(root["model"].find(v019 ? "decoder.layers.0.mixer.conv1d.weight"
                                              : "decoder.layers.0.mixer.conv1d_weight"),
                      nullptr);
        }
    }
}

// The Megatron checkpoint Megatron-DeepSpeed's deepspeed_to_megatron.py wrote from a DeepSpeed
// checkpoint its pretrain_gpt.py trained (tests/fixtures/megatron_deepspeed/make_fixture.py):
// its args (encoder_num_layers, normalization 'layernorm', layernorm_epsilon, num_experts [1],
// its FPDT-era [Q | K | V] rows) read as the model Megatron-DeepSpeed trained, whose own
// log-probabilities megatron-generate gives, as saved and after megatron-convert --loader
// legacy to Megatron-core's torch_dist; megatron-eval reads it too.
TEST_F(MegatronCheckpoints, MegatronDeepSpeedsConvertedCheckpointGivesItsLogProbs) {
    const fs::path root = mt::test::fixtures_dir() / "megatron_deepspeed";
    simdjson::dom::parser parser;
    const simdjson::dom::element expected = parser.load((root / "expected.json").string());
    auto token_rows = [](simdjson::dom::element rows) {
        std::vector<std::vector<int64_t>> out;
        for (auto row : rows.get_array()) {
            out.emplace_back();
            for (auto t : row.get_array()) out.back().push_back(t.get_int64());
        }
        return out;
    };
    Fixture f;
    f.tokens = token_rows(expected["tokens"]);
    for (auto row : expected["logprobs"].get_array()) {
        f.logprobs.emplace_back();
        for (auto v : row.get_array()) f.logprobs.back().push_back(v.get_double());
    }
    // megatron-generate's log-probs of `rows` (the fixture's rows unless given).
    auto score = [&](const fs::path& load,
                     const std::vector<std::vector<int64_t>>* rows = nullptr) {
        std::string command = shell_quote(tool_path("megatron-generate")) + " --load " +
                              shell_quote(load) +
                              " --tokenizer-type NullTokenizer --vocab-size 5000"
                              " --out-seq-length 0 --return-log-probs --prompts";
        for (const auto& row : rows ? *rows : f.tokens) command += " '" + words(row) + "'";
        return run_command(command);
    };
    auto convert = [&](const std::string& flags) {
        return run_command(shell_quote(tool_path("megatron-convert")) + " --model-type GPT " +
                           flags);
    };
    // The fixture's rows scored from `load` give Megatron-DeepSpeed's log-probs.
    auto expect_its_logprobs = [&](const fs::path& load, const char* what) {
        const auto r = score(load);
        ASSERT_EQ(r.exit_code, 0) << what << "\n" << r.output;
        expect_logprobs(printed_logprobs(r.output), f.logprobs, what);
    };
    expect_its_logprobs(root / "megatron_gpt", "as deepspeed_to_megatron wrote it");
    const fs::path out = dir_->path() / "from_megatron_deepspeed";
    auto r = convert("--loader legacy --saver torch_dist --load-dir " +
                     shell_quote(root / "megatron_gpt") + " --save-dir " + shell_quote(out) +
                     " --target-tensor-parallel-size 2");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_its_logprobs(out, "converted to torch_dist");
    expect_eval_mean_loss(root / "megatron_gpt", f, 5000, dir_->path() / "ds_wiki.tokens");
    // DeepSpeed's own checkpoint (global_step3/), read as deepspeed_to_megatron.py reads it.
    expect_its_logprobs(root / "deepspeed_gpt", "as DeepSpeed saved it");
    const fs::path from_ds = dir_->path() / "from_deepspeed";
    r = convert("--loader deepspeed --saver core --load-dir " +
                shell_quote(root / "deepspeed_gpt") + " --save-dir " + shell_quote(from_ds) +
                " --target-pipeline-parallel-size 2");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = convert("--loader core --saver core --load-dir " + shell_quote(from_ds) + " --save-dir " +
                shell_quote(from_ds / "one") + " --target-pipeline-parallel-size 1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_its_logprobs(from_ds / "one", "DeepSpeed's, converted to torch PP2");
    // A tensor-parallel 2 x pipeline-parallel 2 run's checkpoint (its pipeline engine's layer
    // files per tensor rank, four mp_rank files) joined into one rank: DeepSpeed's evaluation
    // loss of the same rows (the mean over their predicted tokens).
    const auto parallel = expected["tp2_pp2"];
    const fs::path joined = dir_->path() / "from_deepspeed_tp2_pp2";
    r = convert("--loader deepspeed --saver core --load-dir " +
                shell_quote(root / "deepspeed_gpt_tp2_pp2") + " --save-dir " + shell_quote(joined) +
                " --target-tensor-parallel-size 1 --target-pipeline-parallel-size 1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto parallel_rows = token_rows(parallel["tokens"]);
    r = score(joined, &parallel_rows);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    double sum = 0;
    size_t n = 0;
    for (const auto& row : printed_logprobs(r.output))
        for (double lp : row) sum -= lp, ++n;
    ASSERT_EQ(n, 64u) << r.output;
    const double loss = parallel["loss"].get_double();
    EXPECT_NEAR(sum / double(n), loss, 1e-5 * loss) << r.output;
}

// What megatron-train saves holds every arg Megatron's load_args_from_checkpoint reads
// (load_args_fields_<version>.txt, from its source), so that Megatron's --use-checkpoint-args
// rebuilds the model from it (tests/fixtures/megatron_checkpoints/check_megatron_uses_our_args.sh
// runs that, by hand, under both versions).
TEST_F(MegatronCheckpoints, TrainSavesWhatMegatronsLoaderReads) {
    const fs::path save = dir_->path() / "ours";
    auto r = run_command(shell_quote(tool_path("megatron-train")) +
                         " --num-layers 2 --hidden-size 16 --num-attention-heads 4 --seq-length 32"
                         " --max-position-embeddings 32 --micro-batch-size 2 --lr 1e-3"
                         " --train-iters 1 --eval-iters 0 --split 100,0,0"
                         " --tokenizer-type NullTokenizer --vocab-size 200 --ckpt-format torch"
                         " --data-path " +
                         shell_quote(dir_->path() / "ints_text_document") + " --save " +
                         shell_quote(save));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const mt::io::PyValue root =
        mt::io::load_torch_structure(save / "iter_0000001" / "mp_rank_00" / "model_optim_rng.pt");
    const mt::io::PyValue& args = root["args"].object_ref().state;
    for (const char* version : {"0.13", "0.19"}) {
        std::istringstream fields(mt::test::read_file(
            fixtures() / ("load_args_fields_" + std::string(version) + ".txt")));
        int count = 0;
        for (std::string field; std::getline(fields, field); ++count)
            EXPECT_NE(args.find(field), nullptr) << "core_v" << version << ": " << field;
        EXPECT_GT(count, 50) << version;
    }
}

// A BERT Megatron pretrained finetunes on MNLI (megatron-eval --pretrained-checkpoint) and
// converts between the formats (megatron-convert --model-type BERT).
TEST_F(MegatronCheckpoints, BertFinetunesAndConverts) {
    const fs::path mnli = mt::test::fixtures_dir() / "tasks" / "mnli_edge.tsv";
    for (const Fixture& f : *fixtures_) {
        if (f.model != "bert") continue;
        SCOPED_TRACE(f.key);
        auto r = run_command(shell_quote(tool_path("megatron-eval")) + " --task MNLI" +
                             with_flags(f.flags, {{"--load", ""},
                                                  {"--save", ""},
                                                  {"--tensorboard-dir", ""},
                                                  {"--data-path", ""},
                                                  {"--vocab-file", shell_quote(tiny_vocab())},
                                                  {"--micro-batch-size", "2"},
                                                  {"--global-batch-size", "2"},
                                                  {"--tokenizer-type", "BertWordPieceLowerCase"}}) +
                             " --pretrained-checkpoint " + shell_quote(fixtures() / f.key) +
                             " --train-data " + shell_quote(mnli) + " --valid-data " +
                             shell_quote(mnli) + " --epochs 1");
        ASSERT_EQ(r.exit_code, 0) << r.output;
        EXPECT_NE(r.output.find(" >> |epoch: 0| overall: correct / total = "), std::string::npos)
            << r.output;
        const fs::path out = dir_->path() / ("bert_" + std::to_string(&f - fixtures_->data()));
        r = run_command(shell_quote(tool_path("megatron-convert")) +
                        " --model-type BERT --loader " +
                        (f.format == "torch" ? "core" : "torch_dist") + " --saver " +
                        (f.format == "torch" ? "torch_dist" : "core") + " --load-dir " +
                        shell_quote(fixtures() / f.key) + " --save-dir " + shell_quote(out) +
                        " --target-tensor-parallel-size 2");
        ASSERT_EQ(r.exit_code, 0) << r.output;
    }
}

}  // namespace
