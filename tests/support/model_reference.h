// Whole-model references made by the PyTorch fixture scripts (tests/fixtures/gpt/
// make_model_fixtures.py, tests/fixtures/bert/make_bert_fixtures.py): the model flags, named
// vectors (inputs, loss weights, losses) and per-parameter gradient summaries, checked here.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "mt/model.h"
#include "mt/nn/parameter.h"

namespace mt::test {

struct GradRecord {
    int64_t numel = 0;
    double max_abs = 0, sum_abs = 0, signed_sum = 0;  // signs from formula_hash("sign." name)
    std::vector<std::pair<int64_t, double>> samples;  // (index, value)
};

struct ModelReference {
    ModelArgs args;
    std::map<std::string, std::vector<double>> vectors;
    std::map<std::string, GradRecord> grads;
};

// Reads tests/fixtures/<relative>: "config k=v ...", "<name> <n> values...", and "grad <name>
// <numel> <max|g|> <sum|g|> <signed sum> <samples>" followed by <samples> "<index> <value>".
ModelReference load_model_reference(const std::string& relative);

// |got - want| <= tol (|want| + scale).
bool close_to(double got, double want, double scale, double tol = 1e-5);

// Every parameter's gradient against its record: the summaries within tol of themselves (the
// signed sum within tol of sum |g|: each element within tol relative) and the sampled entries.
void expect_grads_match_reference(const std::vector<nn::Parameter*>& params,
                                  const ModelReference& ref, const std::string& label,
                                  double tol = 1e-5);

}  // namespace mt::test
