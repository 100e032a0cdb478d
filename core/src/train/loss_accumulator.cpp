#include "loss_accumulator.h"

#include <algorithm>

#include "mt/error.h"
#include "mt/parallel/collectives.h"

namespace mt::train {

void LossAccumulator::add(const LossTerm& term, double sum, double count) {
    auto it = std::find_if(terms_.begin(), terms_.end(),
                           [&](const Term& t) { return t.name == term.name; });
    if (it == terms_.end())
        it = terms_.insert(terms_.end(), Term{term.name, term.reporting, term.auxiliary});
    it->sum += sum;
    it->count += count;
    // A micro-batch with nothing counted adds a mean of 0 (torch would give NaN; Megatron's
    // datasets always count at least one element).
    it->means += count > 0 ? sum / count : 0.0;
    it->micro_batches += 1;
}

void LossAccumulator::reduce(Communicator* dp) {
    if (!dp) return;
    std::vector<double> values;
    for (const Term& t : terms_)
        values.insert(values.end(), {t.sum, t.count, t.means, t.micro_batches});
    parallel::all_reduce_values(*dp, values, ReduceOp::sum);
    for (size_t i = 0; i < terms_.size(); ++i) {
        terms_[i].sum = values[4 * i];
        terms_[i].count = values[4 * i + 1];
        terms_[i].means = values[4 * i + 2];
        terms_[i].micro_batches = values[4 * i + 3];
    }
}

NamedLosses LossAccumulator::reported_where(bool auxiliary) const {
    NamedLosses out;
    for (const Term& t : terms_) {
        if (t.auxiliary != auxiliary) continue;
        const bool tokens = t.reporting == LossTerm::Reporting::token_weighted;
        const double den = tokens ? t.count : t.micro_batches;
        out.emplace_back(t.name, den > 0 ? (tokens ? t.sum : t.means) / den : 0.0);
    }
    return out;
}

double LossAccumulator::count(const std::string& name) const {
    for (const Term& t : terms_)
        if (t.name == name) return t.count;
    MT_FAIL("no loss term \"", name, "\" was accumulated");
}

}  // namespace mt::train
