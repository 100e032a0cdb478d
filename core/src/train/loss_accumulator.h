// The named losses of a global batch as Megatron's training step and evaluation report them:
// each term's micro-batch sums gathered, summed over the data-parallel group, then averaged the
// way the term says (token-weighted, or the mean of the micro-batches' means).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "mt/model.h"
#include "mt/train/trainer.h"

namespace mt {
class Communicator;
}

namespace mt::train {

class LossAccumulator {
  public:
    // Adds one micro-batch's term: Σ values·mask = `sum` over Σ mask = `count`. Terms keep the
    // order they are first seen in.
    void add(const LossTerm& term, double sum, double count);
    // Sums every term over `dp` (null: one rank); call once, after the last micro-batch.
    void reduce(Communicator* dp);
    // Each term's reported value: the model's losses, and the auxiliary ones (LossTerm::auxiliary,
    // reported in training after the MoE losses).
    NamedLosses reported() const { return reported_where(false); }
    NamedLosses reported_auxiliary() const { return reported_where(true); }
    // Σ mask of the term `name` (all ranks after reduce()), for --calculate-per-token-loss.
    double count(const std::string& name) const;

  private:
    NamedLosses reported_where(bool auxiliary) const;

    struct Term {
        std::string name;
        LossTerm::Reporting reporting;
        bool auxiliary;
        double sum = 0, count = 0;  // token-weighted: Σ values·mask, Σ mask
        double means = 0;           // micro_batch_mean: Σ of the micro-batches' means
        double micro_batches = 0;   // how many micro-batches the means sum
    };
    std::vector<Term> terms_;
};

}  // namespace mt::train
