// The training setup shared by the golden-curve fixtures (tests/fixtures/gpt/
// make_training_fixtures.py, tests/fixtures/bert/make_bert_training_fixture.py): AdamW betas
// (0.9, 0.95), eps 1e-8, weight decay 0.1 on weights; the cosine schedule from 1e-3 to 1e-4
// with 3 warm-up iterations over 20; global batch 4 of micro-batches of 2; clipping at 1.0.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mt/data/gpt_dataset.h"
#include "mt/model.h"
#include "mt/optim/lr_schedule.h"
#include "mt/optim/optimizer.h"
#include "mt/train/trainer.h"

namespace mt::test {

struct GoldenTraining {
    optim::Optimizer optimizer;
    optim::LrScheduler scheduler;
    train::TrainerOptions options;  // the loop's, to adjust before building the trainer
};

// The setup for `model`'s parameters on the one-process backend.
std::unique_ptr<GoldenTraining> golden_training(Model& model);

// A golden-curve fixture: a "config" line of the model's flags (key=value words), then one line
// per iteration, "<iteration> <number>..." with optional key=value words after the numbers
// (auxiliary values, e.g. the MoE routers' losses).
struct GoldenCurve {
    ModelArgs args;
    std::vector<std::vector<double>> rows;  // per iteration, the numbers after its index
    std::map<std::string, std::vector<double>> auxiliary;
    std::vector<double> column(size_t i) const;  // the i-th number of every row
};

GoldenCurve load_golden_curve(const std::filesystem::path& file);

// The fixtures' samples (make_training_fixtures.py's formula): sample s is 17 hashed ids
// modulo `vocab` (tokens the first 16, labels the last 16) and a loss mask with ~10% zeros.
class FormulaSamples final : public data::GPTSampleDataset {
  public:
    explicit FormulaSamples(int64_t vocab) : vocab_(vocab) {}
    int64_t size() const override { return 80; }
    data::GPTSample get(int64_t s) const override;
    data::Split split() const override { return data::Split::train; }

  private:
    int64_t vocab_;
};

}  // namespace mt::test
