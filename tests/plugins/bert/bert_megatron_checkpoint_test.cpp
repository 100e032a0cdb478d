// BERT checkpoints Megatron's own pretrain_bert.py code saved (tests/fixtures/
// megatron_checkpoints/make_fixtures.py: examples/bert/train_bert_340m_distributed.sh's flags
// through parse_args + validate_args, get_model and save_checkpoint; core_v0.13 and core_v0.19,
// torch and torch_dist, fp32 and bf16) read with their own args into the bert family's model
// give megatron-core's masked-LM log-probabilities of the input tokens and its binary head's
// sentence-order loss (1e-5). The other tools' runs on them: tests/tools/
// megatron_checkpoints_test.cpp.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "mt/checkpoint/checkpoint_args.h"
#include "mt/checkpoint/format_detection.h"
#include "mt/checkpoint/model_weights.h"
#include "mt/nn/dropout.h"
#include "mt/registry.h"
#include "test_support.h"

namespace mt {
namespace {

namespace fs = std::filesystem;

Tensor i64(const std::vector<int64_t>& values, const Shape& shape) {
    Tensor t = Tensor::empty(shape, DType::i64);
    for (size_t i = 0; i < values.size(); ++i) t.data<int64_t>()[i] = values[i];
    return t;
}

TEST(BertMegatronCheckpoints, GiveMegatronCoresLogProbsAndSentenceOrderLoss) {
    const fs::path root = mt::test::fixtures_dir() / "megatron_checkpoints";
    simdjson::dom::parser parser;
    const simdjson::dom::element expected = parser.load((root / "expected.json").string());
    int checked = 0;
    for (auto [key_view, value] : expected.get_object()) {
        const std::string key(key_view);
        if (key.find("/bert_") == std::string::npos) continue;
        SCOPED_TRACE(key);
        std::vector<int64_t> text;
        int64_t B = 0, T = 0;
        for (auto row : value["tokens"].get_array()) {
            ++B;
            T = 0;
            for (auto t : row.get_array()) {
                text.push_back(t.get_int64());
                ++T;
            }
        }
        std::vector<int64_t> padding(text.size());
        for (size_t i = 0; i < text.size(); ++i) padding[i] = text[i] != 0;

        auto format = detect_checkpoint_format(Registry::global(), root / key);
        const CheckpointState state = format->load(root / key);
        auto family = Registry::global().create_model("bert");
        ModelArgs args = model_args_from_checkpoint(state.args, family->flags());
        auto model = family->build(args);
        load_model_weights(state, *model, WeightLoad::copy);
        const Batch batch = {{"text", i64(text, {B, T})},
                             {"types", i64(std::vector<int64_t>(text.size(), 0), {B, T})},
                             {"padding_mask", i64(padding, {B, T})},
                             {"labels", i64(text, {B, T})},
                             {"loss_mask", i64(std::vector<int64_t>(text.size(), 1), {B, T})},
                             {"is_random", i64(std::vector<int64_t>(size_t(B), 0), {B})}};
        nn::DropoutContext no_dropout{false, 0, 0};
        const Losses losses = model->forward(batch, no_dropout, nullptr);
        ASSERT_EQ(losses.size(), 2u);
        // Masked-LM loss of each input token = -its log-probability; padded positions are left
        // out (Megatron's padding mask also masks their queries).
        int64_t i = 0;
        for (auto row : value["lm_logprobs"].get_array())
            for (auto lp : row.get_array()) {
                const double want = -double(lp.get_double());
                if (padding[size_t(i)])
                    EXPECT_NEAR(mt::test::element(losses[0].values, i), want,
                                1e-5 * std::max(1.0, want))
                        << "position " << i;
                ++i;
            }
        // Sentence-order loss of label 0: logsumexp(binary logits) - the first logit.
        int64_t b = 0;
        for (auto row : value["binary_logits"].get_array()) {
            const double l0 = row.at(0).get_double(), l1 = row.at(1).get_double();
            const double m = std::max(l0, l1);
            const double want = m + std::log(std::exp(l0 - m) + std::exp(l1 - m)) - l0;
            EXPECT_NEAR(mt::test::element(losses[1].values, b), want, 1e-5) << "sample " << b;
            ++b;
        }
        ++checked;
    }
    EXPECT_EQ(checked, 8);  // two versions x two formats x two dtypes
}

}  // namespace
}  // namespace mt
