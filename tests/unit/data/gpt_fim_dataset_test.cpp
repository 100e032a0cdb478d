// Megatron core_v0.19's GPTFIMDataset (--fim-data) against its own samples
// (tests/fixtures/fim/make_fixture.py: pretrain_gpt.py's dataset provider and
// build_pretraining_data_loader over the shared GPT-2 data, GPT2BPETokenizer of core_v0.19, and
// HuggingFaceTokenizer on Mistral's v3 tokenizer with its FIM tokens and TikTokenizer on the
// Tekken vocabulary with FIM special tokens, each over the fixture's own data):
// through the GPT family's datasets() with the case's flags, the first training micro-batches at
// --num-workers 0 and 2 (a worker's draws apart from the other's), and the first validation ones,
// token for token, over one dataset and over a weighted blend of two (each part its own draws);
// and numpy's legacy RandomState.binomial / randint draw for draw.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <memory>
#include <string>
#include <vector>

#include "mt/data/blend_split.h"
#include "mt/data/dataset_request.h"
#include "mt/data/numpy_random.h"
#include "mt/data/pretraining_loader.h"
#include "mt/model.h"
#include "mt/registry.h"
#include "mt/tokenizer.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;

simdjson::dom::element expected(simdjson::dom::parser& parser) {
    return parser.load((mt::test::fixtures_dir() / "fim" / "expected.json").string());
}

TEST(NumpyRandomState, BinomialAndRandintDrawAsNumpys) {
    simdjson::dom::parser parser;
    const auto numpy = expected(parser)["numpy"];
    const int64_t seed = numpy["seed"];
    mt::data::NumpyRandomState rng{uint32_t(seed)};
    size_t checked = 0;
    for (auto call : numpy["calls"].get_array()) {
        const std::string_view what = call["call"];
        if (what == "binomial") {
            EXPECT_EQ(rng.binomial(int64_t(call["n"]), double(call["p"])), int64_t(call["result"]))
                << "call " << checked;
        } else {
            ASSERT_EQ(what, "randint");
            const int64_t low = call["low"], high = call["high"];
            for (auto value : call["result"].get_array())
                EXPECT_EQ(rng.randint(low, high), int64_t(value)) << "call " << checked;
        }
        ++checked;
    }
    EXPECT_EQ(checked, 70u);
}

// The `count` micro-batches a loader of `dataset` gives, each sample's tokens and labels, against
// Megatron's `want` (a list of batches of {tokens, labels}).
void expect_batches(const mt::data::SampleDataset& dataset, simdjson::dom::array want,
                    const std::string& what) {
    mt::data::PretrainingLoader loader(dataset, 2, 0, 1, 0);
    size_t b = 0;
    for (auto batch : want) {
        mt::Batch got;
        ASSERT_TRUE(loader.next(got)) << what;
        const mt::Tensor& tokens = got.at("tokens");
        const mt::Tensor& labels = got.at("labels");
        size_t s = 0;
        for (auto sample : batch.get_array()) {
            std::vector<int64_t> want_tokens, want_labels;
            for (auto t : sample["tokens"].get_array()) want_tokens.push_back(int64_t(t));
            for (auto t : sample["labels"].get_array()) want_labels.push_back(int64_t(t));
            const int64_t L = tokens.size(1);
            ASSERT_EQ(int64_t(want_tokens.size()), L) << what;
            const int64_t* row = tokens.data<int64_t>() + int64_t(s) * L;
            const int64_t* label_row = labels.data<int64_t>() + int64_t(s) * L;
            EXPECT_EQ(std::vector<int64_t>(row, row + L), want_tokens)
                << what << " batch " << b << " sample " << s;
            EXPECT_EQ(std::vector<int64_t>(label_row, label_row + L), want_labels)
                << what << " batch " << b << " sample " << s;
            ++s;
        }
        ++b;
    }
}

TEST(GPTFIMDataset, GivesMegatronsSamplesForEachWorkerCount) {
    const auto data = mt::test::test_data("megatron_indexed");
    const auto gpt2 = mt::test::test_data("gpt2");
    if (!data || !gpt2) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: no GPT-2 data";
    simdjson::dom::parser parser;
    const auto doc = expected(parser);
    mt::TokenizerOptions o;
    o.vocab_file = (*gpt2 / "gpt2-vocab.json").string();
    o.merge_file = (*gpt2 / "gpt2-merges.txt").string();
    o.classes = mt::TokenizerOptions::Classes::core_v0_19;
    const auto gpt2_tokenizer = mt::Registry::global().create_tokenizer("GPT2BPETokenizer", o);
    auto family = mt::Registry::global().create_model("gpt");
    for (auto [name, c] : doc["cases"].get_object()) {
        const std::string case_name{std::string_view(name)};
        // The case's tokenizer (under MEGATRON_TEST_DATA), else GPT-2's.
        std::unique_ptr<mt::Tokenizer> own_tokenizer;
        simdjson::dom::object tokenizer_record;
        if (!c["tokenizer"].get(tokenizer_record)) {
            const auto model =
                mt::test::test_data(std::string(std::string_view(tokenizer_record["model"])));
            ASSERT_TRUE(model) << case_name << ": no tokenizer under MEGATRON_TEST_DATA";
            mt::TokenizerOptions options;
            options.tokenizer_model = model->string();
            options.classes = mt::TokenizerOptions::Classes::core_v0_19;
            std::string_view pattern;
            if (!tokenizer_record["tiktoken_pattern"].get(pattern))
                options.tiktoken_pattern = std::string(pattern);
            simdjson::dom::array special;
            if (!tokenizer_record["special_tokens"].get(special)) {
                options.special_tokens.emplace();
                for (auto t : special) options.special_tokens->emplace_back(std::string_view(t));
            }
            own_tokenizer = mt::Registry::global().create_tokenizer(
                std::string(std::string_view(tokenizer_record["type"])), options);
        }
        const mt::Tokenizer* tokenizer = own_tokenizer ? own_tokenizer.get() : gpt2_tokenizer.get();
        // The case's --fim-* flags, as the family reads them.
        mt::ModelArgs args;
        std::string flag;
        for (auto word : c["flags"].get_array()) {
            const std::string w{std::string_view(word)};
            if (w.rfind("--", 0) == 0) {
                flag = w.substr(2);
                args[flag] = "";
            } else {
                args[flag] = w;
            }
        }
        // The FIM tokens' ids (core_v0.19's tokens_to_ids of the --fim-*-token flags, or their
        // defaults), as Megatron's dataset holds them (*_tok_id).
        const std::pair<const char*, const char*> fim_tokens[] = {
            {"prefix", "<fim_prefix>"},
            {"middle", "<fim_middle>"},
            {"suffix", "<fim_suffix>"},
            {"pad", "<fim_pad>"},
            {"eod", "<|endoftext|>"}};
        for (const auto& [which, fallback] : fim_tokens) {
            const auto it = args.find(std::string("fim-") + which + "-token");
            const std::string token = it != args.end() ? it->second : fallback;
            EXPECT_EQ(tokenizer->token_to_id(token), int64_t(c["fim_tokens"][which]))
                << case_name << " " << which << " " << token;
        }
        // The case's --data-path (a weighted blend), else the one prefix.
        std::vector<std::string> data_path{"meg-gpt2-openwebtext_text_document"};
        simdjson::dom::array blend;
        if (!c["data_path"].get(blend)) {
            data_path.clear();
            for (auto word : blend) data_path.emplace_back(std::string_view(word));
        }
        // (Data make_fixture.py wrote next to itself, in the case's data_dir.)
        std::string_view data_dir;
        const bool own_data = !c["data_dir"].get(data_dir);
        for (std::string& word : data_path)
            if (word.rfind("meg-", 0) == 0)
                word = (*data / word).string();
            else if (own_data)
                word = (mt::test::fixtures_dir() / "fim" / data_dir / word).string();
        for (const std::string workers : {"0", "2"}) {
            mt::test::TempDir cache;
            mt::data::DatasetRequest request;
            request.config.random_seed = 1234;
            request.config.sequence_length = 64;
            request.config.blend = mt::data::get_blend_from_list(data_path);
            request.config.split = "98,1,1";
            request.config.path_to_cache = cache.path().string();
            request.config.tokenizer = tokenizer->dataset_identity();
            request.num_samples = {64, 16, 16};
            request.tokenizer = tokenizer;
            request.args = args;
            request.args["num-workers"] = workers;
            const auto datasets = family->datasets(request);
            ASSERT_TRUE(datasets[0] && datasets[1] && datasets[2]);
            EXPECT_EQ(datasets[0]->size(), int64_t(c["train_len"])) << case_name;
            EXPECT_EQ(datasets[1]->size(), int64_t(c["valid_len"])) << case_name;
            EXPECT_EQ(datasets[2]->size(), int64_t(c["test_len"])) << case_name;
            const auto runs = c["runs"][workers];
            expect_batches(*datasets[0], runs["train"].get_array(),
                           case_name + " train, --num-workers " + workers);
            simdjson::dom::array valid;
            if (!runs["valid"].get(valid))
                expect_batches(*datasets[1], valid, case_name + " valid, --num-workers " + workers);
            // Megatron's cache names carry the class: GPTFIMDataset.
            bool named = false;
            for (const auto& entry : fs::recursive_directory_iterator(cache.path()))
                named = named || entry.path().filename().string().find("-GPTFIMDataset-train-") !=
                                     std::string::npos;
            EXPECT_TRUE(named) << case_name;
        }
    }
}

}  // namespace
