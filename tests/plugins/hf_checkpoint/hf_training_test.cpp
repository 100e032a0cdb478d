// 20 training iterations of the Qwen2, Qwen3, Qwen3-MoE, GPT-OSS and Gemma 3 folders, read by the
// hf plugin into Megatron's GPT with the flags their config.json implies, give the loss curve
// transformers' own models give on the same weights and samples (tests/fixtures/hf/
// make_hf_training_fixtures.py: float64, Megatron's optimizer, schedule and clipping) to 1e-5
// relative, with the same gradient norms.
#include <gtest/gtest.h>

#include <cmath>

#include "golden_training.h"
#include "hf_checkpoint.h"
#include "hf_config.h"
#include "hf_fixtures.h"
#include "mt/checkpoint/model_weights.h"
#include "mt/registry.h"
#include "mt/train/trainer.h"
#include "test_support.h"

namespace mt::plugins::hf {
namespace {

class HfTraining : public ::testing::TestWithParam<const char*> {};

TEST_P(HfTraining, LossCurveMatchesTransformers) {
    const std::string name = GetParam();
    const mt::test::GoldenCurve ref =
        mt::test::load_golden_curve(fixture("training_" + name + ".txt"));
    const std::vector<double> losses = ref.column(0), norms = ref.column(1);
    ASSERT_EQ(losses.size(), 20u);

    const HfConfig config = read_hf_config(fixture(name));
    auto model = Registry::global().create_model("gpt")->build(hf_model_args(config));
    HfCheckpoint format;
    load_model_weights(format.load(fixture(name)), *model, WeightLoad::copy);

    auto golden = mt::test::golden_training(*model);
    train::Trainer trainer(*model, golden->optimizer, golden->scheduler, golden->options,
                           [](const std::string&) {});
    mt::test::FormulaSamples data(config.vocab_size);
    trainer.train(data, nullptr);

    ASSERT_EQ(trainer.losses().size(), 20u);
    for (size_t i = 0; i < 20; ++i) {
        EXPECT_NEAR(trainer.losses()[i], losses[i], 1e-5 * losses[i]) << name << " " << i + 1;
        EXPECT_NEAR(trainer.grad_norms()[i], norms[i], 1e-5 * norms[i]) << name << " " << i + 1;
    }
}

INSTANTIATE_TEST_SUITE_P(Folders, HfTraining,
                         ::testing::Values("qwen2", "qwen3", "qwen3_moe", "gpt_oss", "gemma3"));

}  // namespace
}  // namespace mt::plugins::hf
