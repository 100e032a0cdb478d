// 20 T5 training iterations (two micro-batches per global batch, --calculate-per-token-loss,
// clipping, AdamW with Megatron's parameter groups, the cosine schedule) against the curve of
// megatron-core's own T5Model trained as pretrain_t5.py trains it, in float64
// (tests/fixtures/t5/make_t5_training_fixture.py): the lm loss and the gradient norm of every
// iteration within 1e-5.
#include <gtest/gtest.h>

#include <cmath>

#include "formula_weights.h"
#include "golden_training.h"
#include "mt/data/sample_dataset.h"
#include "mt/nn/parameter.h"
#include "mt/registry.h"
#include "mt/train/trainer.h"
#include "register.h"
#include "test_support.h"

namespace mt::plugins::t5 {
namespace {

using mt::test::fnv1a64;
using mt::test::formula_hash;

constexpr int64_t kEnc = 16, kDec = 8;

// The fixture script's samples, by the same formula: padded encoder and decoder inputs, labels
// -1 (loss_mask 0) on the decoder's padding.
class FormulaT5Data final : public data::SampleDataset {
  public:
    int64_t size() const override { return 1000; }
    data::Split split() const override { return data::Split::train; }
    Batch batch(std::span<const int64_t> indices) const override {
        const int64_t B = int64_t(indices.size());
        Tensor enc = Tensor::zeros({B, kEnc}, DType::i64), enc_mask = enc.clone();
        Tensor dec = Tensor::zeros({B, kDec}, DType::i64), dec_mask = dec.clone(),
               labels = dec.clone(), loss_mask = dec.clone();
        static const uint64_t enc_hash = fnv1a64("t5.enc"), dec_hash = fnv1a64("t5.dec"),
                              label_hash = fnv1a64("t5.label");
        for (int64_t b = 0; b < B; ++b) {
            const int64_t s = indices[size_t(b)], n_enc = kEnc - s % 4, n_dec = kDec - s % 3;
            for (int64_t t = 0; t < n_enc; ++t) {
                enc.data<int64_t>()[b * kEnc + t] =
                    int64_t(formula_hash(enc_hash, uint64_t(kEnc * s + t)) % 123) + 5;
                enc_mask.data<int64_t>()[b * kEnc + t] = 1;
            }
            for (int64_t t = 0; t < kDec; ++t) {
                const int64_t i = b * kDec + t;
                const bool token = t < n_dec;
                const uint64_t at = uint64_t(kDec * s + t);
                dec.data<int64_t>()[i] = token ? int64_t(formula_hash(dec_hash, at) % 123) + 5 : 0;
                dec_mask.data<int64_t>()[i] = loss_mask.data<int64_t>()[i] = token ? 1 : 0;
                labels.data<int64_t>()[i] =
                    token ? int64_t(formula_hash(label_hash, at) % 128) : -1;
            }
        }
        return {{"text_enc", enc},        {"text_dec", dec},      {"labels", labels},
                {"loss_mask", loss_mask}, {"enc_mask", enc_mask}, {"dec_mask", dec_mask}};
    }
};

TEST(T5Training, TwentyIterationsFollowMegatronCoreT5Model) {
    // Per iteration: lm loss, gradient norm, learning rate.
    const mt::test::GoldenCurve ref =
        mt::test::load_golden_curve(mt::test::fixtures_dir() / "t5" / "t5_training.txt");
    const std::vector<double> lm = ref.column(0), norms = ref.column(1);
    ASSERT_EQ(lm.size(), 20u);
    Registry registry;
    register_t5(registry);
    auto model = registry.create_model("t5")->build(ref.args);
    for (nn::Parameter* p : model->parameters()) mt::test::fill_formula_weight(*p);
    auto golden = mt::test::golden_training(*model);
    golden->options.calculate_per_token_loss = true;
    optim::LrScheduler& scheduler = golden->scheduler;
    train::Trainer trainer(*model, golden->optimizer, scheduler, golden->options,
                           [](const std::string&) {});
    FormulaT5Data data;
    trainer.train(data, nullptr);
    ASSERT_EQ(trainer.losses().size(), 20u);
    for (size_t i = 0; i < 20; ++i) {
        EXPECT_NEAR(trainer.losses()[i], lm[i], 1e-5 * lm[i]) << "iteration " << i + 1;
        EXPECT_NEAR(trainer.grad_norms()[i], norms[i], 1e-5 * norms[i]) << "iteration " << i + 1;
    }
    EXPECT_DOUBLE_EQ(scheduler.lr(), ref.column(2).back());
    EXPECT_LT(trainer.losses().back(), trainer.losses().front());
}

}  // namespace
}  // namespace mt::plugins::t5
