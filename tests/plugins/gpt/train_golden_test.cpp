// 20 iterations of training (two micro-batches per iteration, masked tokens, clipping, AdamW
// with Megatron's parameter groups and schedule) give the loss curve of the PyTorch reference
// of Megatron's GPT (tests/fixtures/gpt/make_training_fixtures.py) to 1e-5 relative, for a
// GPT-2-style and a Llama-style model.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "formula_weights.h"
#include "mt/nn/parameter.h"
#include "mt/optim/lr_schedule.h"
#include "mt/optim/optimizer.h"
#include "mt/registry.h"
#include "mt/train/trainer.h"
#include "register.h"
#include "test_support.h"

namespace mt::plugins::gpt {
namespace {

constexpr int64_t kSeq = 16, kVocab = 5000;

// The fixture's samples: 17 hashed ids per sample, and a loss mask with ~10% zeros.
class FormulaData final : public data::GPTSampleDataset {
  public:
    int64_t size() const override { return 80; }
    data::GPTSample get(int64_t s) const override {
        static const uint64_t text = fnv1a64("train.text"), mask = fnv1a64("train.mask");
        data::GPTSample out;
        for (int64_t t = 0; t < kSeq; ++t) {
            out.tokens.push_back(
                int64_t(formula_hash(text, uint64_t((kSeq + 1) * s + t)) % kVocab));
            out.labels.push_back(
                int64_t(formula_hash(text, uint64_t((kSeq + 1) * s + t + 1)) % kVocab));
            out.loss_mask.push_back(formula_hash(mask, uint64_t(kSeq * s + t)) % 10 != 0 ? 1.f
                                                                                         : 0.f);
            out.position_ids.push_back(t);
            out.document_start.push_back(0);
        }
        return out;
    }
    data::Split split() const override { return data::Split::train; }
};

struct Curve {
    ModelArgs args;
    std::vector<double> losses, lrs;
};

Curve load_curve(const std::string& name) {
    std::ifstream in(mt::test::fixtures_dir() / "gpt" / ("training_" + name + ".txt"));
    EXPECT_TRUE(in) << "missing tests/fixtures/gpt/training_" << name << ".txt";
    Curve c;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream s(line);
        std::string first;
        s >> first;
        if (first == "config") {
            std::string kv;
            while (s >> kv) c.args[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
            continue;
        }
        std::string loss, norm, lr;
        s >> loss >> norm >> lr;
        c.losses.push_back(std::strtod(loss.c_str(), nullptr));
        c.lrs.push_back(std::strtod(lr.c_str(), nullptr));
    }
    return c;
}

void check_curve(const std::string& name) {
    Curve ref = load_curve(name);
    ASSERT_EQ(ref.losses.size(), 20u);
    Registry registry;
    register_gpt(registry);
    auto model = registry.create_model("gpt")->build(ref.args);
    for (nn::Parameter* p : model->parameters()) fill_formula_weight(*p);

    optim::OptimizerConfig oc;
    oc.adam_beta1 = 0.9;
    oc.adam_beta2 = 0.95;
    oc.adam_eps = 1e-8;
    optim::Optimizer optimizer(single_process_context().backend, model->parameters(), oc);
    optim::LrScheduleFlags f;
    f.train_iters = 20;
    f.global_batch_size = 4;
    f.lr = 1e-3;
    f.min_lr = 1e-4;
    f.lr_decay_style = "cosine";
    f.lr_warmup_iters = 3;
    f.start_weight_decay = f.end_weight_decay = 0.1;
    optim::LrScheduler scheduler(optim::schedule_config_from_flags(f));
    train::TrainerOptions o;
    o.micro_batch_size = 2;
    o.global_batch_size = 4;
    o.train_iters = 20;
    o.log_interval = 0;
    o.eval_interval = 0;
    o.clip_grad = 1.0;
    train::Trainer trainer(*model, optimizer, scheduler, o, [](const std::string&) {});
    FormulaData data;
    trainer.train(data, nullptr);

    ASSERT_EQ(trainer.losses().size(), 20u);
    for (size_t i = 0; i < 20; ++i)
        EXPECT_NEAR(trainer.losses()[i], ref.losses[i], 1e-5 * std::abs(ref.losses[i]))
            << name << " iteration " << i + 1;
    EXPECT_DOUBLE_EQ(scheduler.lr(), ref.lrs.back());
    // The run learns: the reference's own curve goes down, and so does ours.
    EXPECT_LT(trainer.losses().back(), trainer.losses().front());
}

TEST(GptTraining, LossCurveMatchesPyTorchGpt2Style) {
    check_curve("gpt2");
}
TEST(GptTraining, LossCurveMatchesPyTorchLlamaStyle) {
    check_curve("llama");
}

}  // namespace
}  // namespace mt::plugins::gpt
