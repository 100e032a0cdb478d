// 20 BERT pretraining iterations (two micro-batches per global batch, clipping, AdamW with
// Megatron's parameter groups, the cosine schedule) against the curve of transformers'
// MegatronBertForPreTraining trained as pretrain_bert.py trains
// (tests/fixtures/bert/make_bert_training_fixture.py): the summed lm + sop loss and the gradient
// norm of every iteration within 1e-5.
#include <gtest/gtest.h>

#include <cmath>

#include "formula_weights.h"
#include "golden_training.h"
#include "mt/data/sample_dataset.h"
#include "mt/nn/parameter.h"
#include "mt/optim/lr_schedule.h"
#include "mt/optim/optimizer.h"
#include "mt/registry.h"
#include "mt/train/trainer.h"
#include "register.h"
#include "test_support.h"

namespace mt::plugins::bert {
namespace {

using mt::test::fnv1a64;
using mt::test::formula_hash;

constexpr int64_t kSeq = 16;

// The fixture script's samples, by the same formula.
class FormulaBertData final : public data::SampleDataset {
  public:
    int64_t size() const override { return 1000; }
    data::Split split() const override { return data::Split::train; }
    Batch batch(std::span<const int64_t> indices) const override {
        const int64_t B = int64_t(indices.size());
        Tensor text = Tensor::zeros({B, kSeq}, DType::i64), types = text.clone(),
               padding = text.clone(), labels = text.clone(), mask = text.clone();
        Tensor order = Tensor::zeros({B}, DType::i64);
        static const uint64_t text_hash = fnv1a64("bert.text"), label_hash = fnv1a64("bert.label"),
                              mask_hash = fnv1a64("bert.mask"), order_hash = fnv1a64("bert.order");
        for (int64_t b = 0; b < B; ++b) {
            const int64_t s = indices[size_t(b)], n = kSeq - s % 4;
            for (int64_t t = 0; t < kSeq; ++t) {
                const uint64_t at = uint64_t(kSeq * s + t);
                const int64_t i = b * kSeq + t;
                const bool token = t < n;
                const bool scored = token && (t == 0 || formula_hash(mask_hash, at) % 4 == 0);
                text.data<int64_t>()[i] =
                    token ? int64_t(formula_hash(text_hash, at) % 123) + 5 : 0;
                types.data<int64_t>()[i] = token && t >= n / 2 ? 1 : 0;
                padding.data<int64_t>()[i] = token ? 1 : 0;
                labels.data<int64_t>()[i] =
                    scored ? int64_t(formula_hash(label_hash, at) % 128) : -1;
                mask.data<int64_t>()[i] = scored ? 1 : 0;
            }
            order.data<int64_t>()[b] = int64_t(formula_hash(order_hash, uint64_t(s)) % 2);
        }
        return {{"text", text},     {"types", types},    {"padding_mask", padding},
                {"labels", labels}, {"loss_mask", mask}, {"is_random", order}};
    }
};

TEST(BertTraining, TwentyIterationsFollowTheTransformersCurve) {
    // Per iteration: lm loss, sop loss, gradient norm, learning rate.
    const mt::test::GoldenCurve ref =
        mt::test::load_golden_curve(mt::test::fixtures_dir() / "bert" / "bert_training.txt");
    const std::vector<double> lm = ref.column(0), sop = ref.column(1), norms = ref.column(2);
    ASSERT_EQ(lm.size(), 20u);
    Registry registry;
    register_bert(registry);
    auto model = registry.create_model("bert")->build(ref.args);
    for (nn::Parameter* p : model->parameters()) mt::test::fill_formula_weight(*p);
    auto golden = mt::test::golden_training(*model);
    optim::LrScheduler& scheduler = golden->scheduler;
    train::Trainer trainer(*model, golden->optimizer, scheduler, golden->options,
                           [](const std::string&) {});
    FormulaBertData data;
    trainer.train(data, nullptr);
    ASSERT_EQ(trainer.losses().size(), 20u);
    for (size_t i = 0; i < 20; ++i) {
        const double want = lm[i] + sop[i];
        EXPECT_NEAR(trainer.losses()[i], want, 1e-5 * want) << "iteration " << i + 1;
        EXPECT_NEAR(trainer.grad_norms()[i], norms[i], 1e-5 * norms[i]) << "iteration " << i + 1;
    }
    EXPECT_DOUBLE_EQ(scheduler.lr(), ref.column(3).back());
    EXPECT_LT(trainer.losses().back(), trainer.losses().front());
}

}  // namespace
}  // namespace mt::plugins::bert
