// The training loop's mechanics on a toy model whose gradients are known exactly: gradient
// accumulation, the token-weighted loss, the schedule's stepping, log and evaluation lines,
// TensorBoard scalars and the exit conditions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "mt/data/gpt_dataset.h"
#include "mt/io/tensorboard_writer.h"
#include "mt/nn/dropout.h"
#include "mt/nn/parameter.h"
#include "mt/train/trainer.h"
#include "test_support.h"

namespace {

using namespace mt;

// Per-token loss 0.5·(w[token] − 0.01·label)² over a weight per token id.
class ToyModel final : public Model {
  public:
    explicit ToyModel(int64_t vocab)
        : w_(nn::make_parameter(single_process_context().backend, "w", {vocab}, DType::f32, {},
                                true)) {}
    std::vector<nn::Parameter*> parameters() override { return {&w_}; }
    void initialize(uint64_t) override {
        for (int64_t i = 0; i < w_.value.numel(); ++i)
            w_.value.data<float>()[i] = 0.1f * float(i % 7);
    }
    struct Saved : Activations {
        Tensor tokens, diff;
    };
    Losses forward(const Batch& batch, nn::DropoutContext&,
                   std::unique_ptr<Activations>* saved) override {
        const Tensor& tokens = batch.at("tokens");
        const Tensor& labels = batch.at("labels");
        Tensor losses = Tensor::empty(tokens.shape(), DType::f32);
        Tensor diff = Tensor::empty(tokens.shape(), DType::f32);
        for (int64_t i = 0; i < tokens.numel(); ++i) {
            float d = w_.value.data<float>()[tokens.data<int64_t>()[i]] -
                      0.01f * float(labels.data<int64_t>()[i]);
            diff.data<float>()[i] = d;
            losses.data<float>()[i] = 0.5f * d * d;
        }
        if (saved) {
            auto s = std::make_unique<Saved>();
            s->tokens = tokens;
            s->diff = diff;
            *saved = std::move(s);
        }
        return {{"lm loss", losses, batch.at("loss_mask")}};
    }
    double training_flops(int64_t samples) const override { return 1e9 * double(samples); }
    void backward(const std::vector<Tensor>& dterms, const Activations& a) override {
        const auto& s = static_cast<const Saved&>(a);
        const Tensor& dlosses = dterms.at(0);
        for (int64_t i = 0; i < dlosses.numel(); ++i)
            w_.grad.data<float>()[s.tokens.data<int64_t>()[i]] +=
                dlosses.data<float>()[i] * s.diff.data<float>()[i];
    }

  private:
    nn::Parameter w_;
};

// Sample i: tokens (i+t) % 11, labels i+t+1, loss mask 0 on position 0 of odd samples.
class ToyData final : public data::GPTSampleDataset {
  public:
    explicit ToyData(int64_t n, data::Split split = data::Split::train) : n_(n), split_(split) {}
    int64_t size() const override { return n_; }
    data::GPTSample get(int64_t i) const override {
        data::GPTSample s;
        for (int64_t t = 0; t < 4; ++t) {
            s.tokens.push_back((i + t) % 11);
            s.labels.push_back(i + t + 1);
            s.loss_mask.push_back(t == 0 && i % 2 ? 0.f : 1.f);
            s.position_ids.push_back(t);
            s.document_start.push_back(0);
        }
        return s;
    }
    data::Split split() const override { return split_; }

  private:
    int64_t n_;
    data::Split split_;
};

optim::LrScheduleConfig constant_lr(double lr, int64_t steps) {
    optim::LrScheduleConfig c;
    c.max_lr = lr;
    c.lr_decay_steps = steps;
    c.lr_decay_style = optim::LrDecayStyle::constant;
    c.start_wd = c.end_wd = 0.0;
    return c;
}

struct ToyRun {
    std::vector<double> losses;
    std::vector<std::string> lines;
    float w3 = 0;
    std::vector<float> w;  // the weights after training
};

ToyRun train_toy(train::TrainerOptions o, int64_t data_size = 64) {
    ToyModel model(11);
    model.initialize(0);
    optim::OptimizerConfig oc;
    oc.type = optim::OptimizerType::sgd;
    oc.sgd_momentum = 0.0;
    optim::Optimizer opt(single_process_context().backend, model.parameters(), oc);
    optim::LrScheduler sched(constant_lr(0.5, 1000));
    ToyRun run;
    train::Trainer t(model, opt, sched, o, [&](const std::string& l) { run.lines.push_back(l); });
    ToyData data(data_size), valid(64, data::Split::valid);
    t.train(data, &valid);
    run.losses = t.losses();
    const Tensor& w = model.parameters()[0]->value;
    run.w3 = w.data<float>()[3];
    run.w.assign(w.data<float>(), w.data<float>() + w.numel());
    return run;
}

TEST(Trainer, GradientAccumulationEqualsOneBigBatchForEqualTokenCounts) {
    // With micro-batches of equal token counts, 2 x 2 accumulates to the same update as 1 x 4.
    train::TrainerOptions a;
    a.micro_batch_size = 2;
    a.global_batch_size = 4;
    a.train_iters = 5;
    a.log_interval = 0;
    a.eval_interval = 0;
    a.clip_grad = 0;
    train::TrainerOptions b = a;
    b.micro_batch_size = 4;
    ToyRun ra = train_toy(a), rb = train_toy(b);
    ASSERT_EQ(ra.losses.size(), 5u);
    for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(ra.losses[i], rb.losses[i], 1e-6) << i;
    EXPECT_NEAR(ra.w3, rb.w3, 1e-6);
    EXPECT_LT(ra.losses.back(), ra.losses.front());  // it learns
}

TEST(Trainer, FirstLossIsTheTokenWeightedMean) {
    train::TrainerOptions o;
    o.micro_batch_size = 1;
    o.global_batch_size = 2;
    o.train_iters = 1;
    o.log_interval = 0;
    o.eval_interval = 0;
    ToyRun r = train_toy(o);
    // Samples 0 (4 tokens) and 1 (3 tokens: position 0 masked), initial w[i] = 0.1·(i % 7).
    double sum = 0, n = 0;
    for (int i = 0; i < 2; ++i)
        for (int t = 0; t < 4; ++t) {
            if (t == 0 && i == 1) continue;
            double d = 0.1f * float(((i + t) % 11) % 7) - 0.01f * float(i + t + 1);
            sum += 0.5 * d * d;
            n += 1;
        }
    EXPECT_NEAR(r.losses[0], sum / n, 1e-7);
}

TEST(Trainer, PrintsMegatronLinesAndStopsOnExitInterval) {
    train::TrainerOptions o;
    o.micro_batch_size = 2;
    o.global_batch_size = 2;
    o.train_iters = 10;
    o.log_interval = 2;
    o.eval_interval = 3;
    o.eval_iters = 1;
    o.exit_interval = 4;
    ToyRun r = train_toy(o);
    EXPECT_EQ(r.losses.size(), 4u);
    // iteration 2, the memory report (once), evaluation at 3, iteration 4
    ASSERT_EQ(r.lines.size(), 4u);
    EXPECT_NE(r.lines[0].find("] iteration        2/      10 | consumed samples:            4 |"),
              std::string::npos)
        << r.lines[0];
    EXPECT_NE(
        r.lines[0].find("| learning rate: 5.000000E-01 | global batch size:     2 | lm loss:"),
        std::string::npos)
        << r.lines[0];
    EXPECT_EQ(r.lines[1].find("[Rank 0] (after 2 iterations) memory (MB) | allocated: "), 0u)
        << r.lines[1];
    EXPECT_NE(r.lines[2].find(" validation loss at iteration 3 | lm loss value: "),
              std::string::npos)
        << r.lines[2];
}

// --log-num-zeros-in-grad and --log-params-norm: iteration 1 reads samples 0 and 1, tokens
// 0..3 and 1..4 (sample 1's first position masked), so 6 of the 11 gradient elements are zero;
// the params norm is that of the weights after the update.
TEST(Trainer, LogsZeroGradientsAndTheParamsNorm) {
    train::TrainerOptions o;
    o.micro_batch_size = o.global_batch_size = 2;
    o.train_iters = 1;
    o.log_interval = 1;
    o.eval_iters = 0;
    o.log_num_zeros_in_grad = o.log_params_norm = true;
    const ToyRun r = train_toy(o);
    ASSERT_EQ(r.lines.size(), 2u);  // the iteration and the memory report
    double sq = 0;
    for (float v : r.w) sq += double(v) * double(v);
    char want[64];
    std::snprintf(want, sizeof want, "| num zeros: 6.0 | params norm: %.3f |", std::sqrt(sq));
    EXPECT_NE(r.lines[0].find(want), std::string::npos) << r.lines[0] << "\n" << want;
}

TEST(Trainer, StopFlagEndsAfterTheCurrentIteration) {
    ToyModel model(11);
    model.initialize(0);
    optim::Optimizer opt(single_process_context().backend, model.parameters(), {});
    optim::LrScheduler sched(constant_lr(0.1, 100));
    train::TrainerOptions o;
    o.train_iters = 5;
    o.log_interval = 0;
    o.eval_interval = 0;
    std::atomic<bool> stop{true};
    train::Trainer t(model, opt, sched, o, [](const std::string&) {});
    t.set_stop_flag(&stop);
    ToyData data(16);
    EXPECT_EQ(t.train(data, nullptr), train::StopReason::signal);
    EXPECT_EQ(t.iteration(), 1);
    EXPECT_EQ(t.consumed_train_samples(), 1);
}

TEST(Trainer, TensorBoardGetsTheScalars) {
    test::TempDir dir;
    ToyModel model(11);
    model.initialize(0);
    optim::Optimizer opt(single_process_context().backend, model.parameters(), {});
    optim::LrScheduler sched(constant_lr(0.1, 100));
    train::TrainerOptions o;
    o.train_iters = 2;
    o.log_interval = 1;
    o.eval_interval = 0;
    std::filesystem::path path;
    {
        io::TensorBoardWriter tb(dir / "tb");
        train::Trainer t(model, opt, sched, o, [](const std::string&) {});
        t.set_tensorboard(&tb);
        ToyData data(8);
        t.train(data, nullptr);
        path = tb.path();
    }
    std::string bytes = test::read_file(path);
    for (const char* tag : {"lm loss", "learning-rate", "grad-norm", "batch-size", "throughput"})
        EXPECT_NE(bytes.find(tag), std::string::npos) << tag;
}

TEST(Trainer, RunningOutOfDataIsAnError) {
    train::TrainerOptions o;
    o.micro_batch_size = 4;
    o.global_batch_size = 4;
    o.train_iters = 3;
    o.log_interval = 0;
    o.eval_interval = 0;
    EXPECT_NE(test::error_of([&] { train_toy(o, 8); }).find("no samples left to consume: 8"),
              std::string::npos);
}

}  // namespace
