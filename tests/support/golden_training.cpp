#include "golden_training.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "formula_weights.h"

namespace mt::test {

std::unique_ptr<GoldenTraining> golden_training(Model& model) {
    optim::OptimizerConfig oc;
    oc.adam_beta1 = 0.9;
    oc.adam_beta2 = 0.95;
    oc.adam_eps = 1e-8;
    optim::LrScheduleFlags f;
    f.train_iters = 20;
    f.global_batch_size = 4;
    f.lr = 1e-3;
    f.min_lr = 1e-4;
    f.lr_decay_style = "cosine";
    f.lr_warmup_iters = 3;
    f.start_weight_decay = f.end_weight_decay = 0.1;
    train::TrainerOptions o;
    o.micro_batch_size = 2;
    o.global_batch_size = 4;
    o.train_iters = 20;
    o.log_interval = 0;
    o.eval_interval = 0;
    o.clip_grad = 1.0;
    return std::unique_ptr<GoldenTraining>(new GoldenTraining{
        optim::Optimizer(single_process_context().backend, model.parameters(), oc),
        optim::LrScheduler(optim::schedule_config_from_flags(f)), o});
}

data::GPTSample FormulaSamples::get(int64_t s) const {
    constexpr int64_t kSeq = 16;
    static const uint64_t text = fnv1a64("train.text"), mask = fnv1a64("train.mask");
    data::GPTSample out;
    for (int64_t t = 0; t < kSeq; ++t) {
        out.tokens.push_back(int64_t(formula_hash(text, uint64_t((kSeq + 1) * s + t)) % vocab_));
        out.labels.push_back(
            int64_t(formula_hash(text, uint64_t((kSeq + 1) * s + t + 1)) % vocab_));
        out.loss_mask.push_back(formula_hash(mask, uint64_t(kSeq * s + t)) % 10 != 0 ? 1.f : 0.f);
        out.position_ids.push_back(t);
        out.document_start.push_back(0);
    }
    return out;
}

std::vector<double> GoldenCurve::column(size_t i) const {
    std::vector<double> out;
    for (const auto& row : rows) {
        EXPECT_LT(i, row.size()) << "a golden-curve row has no number " << i;
        out.push_back(i < row.size() ? row[i] : 0.0);
    }
    return out;
}

GoldenCurve load_golden_curve(const std::filesystem::path& file) {
    std::ifstream in(file);
    EXPECT_TRUE(in) << "missing " << file;
    GoldenCurve c;
    for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::string first;
        words >> first;
        if (first.empty()) continue;
        if (first == "config") {
            for (std::string kv; words >> kv;)
                c.args[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
            continue;
        }
        std::vector<double>& row = c.rows.emplace_back();
        for (std::string word; words >> word;) {
            const size_t eq = word.find('=');
            if (eq == std::string::npos)
                row.push_back(std::strtod(word.c_str(), nullptr));  // nan too
            else
                c.auxiliary[word.substr(0, eq)].push_back(
                    std::strtod(word.c_str() + eq + 1, nullptr));
        }
    }
    return c;
}

}  // namespace mt::test
