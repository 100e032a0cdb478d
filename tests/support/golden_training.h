// The training setup shared by the golden-curve fixtures (tests/fixtures/gpt/
// make_training_fixtures.py, tests/fixtures/bert/make_bert_training_fixture.py): AdamW betas
// (0.9, 0.95), eps 1e-8, weight decay 0.1 on weights; the cosine schedule from 1e-3 to 1e-4
// with 3 warm-up iterations over 20; global batch 4 of micro-batches of 2; clipping at 1.0.
#pragma once

#include <memory>

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

}  // namespace mt::test
