// The zero-shot results as Megatron's evaluate_and_print_results computes and prints them
// (perplexity with the word-level adjustment, accuracy), and the same as --output-json.
#pragma once

#include <cstdint>
#include <string>

namespace mt::eval {

struct PerplexityResult {
    int64_t num_original_tokens = 0;   // space-separated words of the raw file
    int64_t num_tokenized_tokens = 0;  // tokens of the detokenized text
    double avg_loss = 0, ppl = 0, adjusted_ppl = 0, token_ratio = 0;
};
// val_loss = loss_sum / (tokenized - 1), ppl = exp(min(20, val_loss)),
// token_ratio = (tokenized - 1) / (original - 1), adjusted = exp(min(20, val_loss * ratio)).
// mt::Error unless both counts are at least 2 (Megatron would divide by zero).
PerplexityResult perplexity_result(double loss_sum, int64_t num_original_tokens,
                                   int64_t num_tokenized_tokens);

struct AccuracyResult {
    int64_t number_correct = 0, total_examples = 0;
    double avg_accuracy = 0;
};
AccuracyResult accuracy_result(int64_t number_correct, int64_t total_examples);

// Megatron's result block: the line " validation results on TASK | ..." between two lines of
// dashes one longer than it, each line ending in '\n'.
std::string result_block(const std::string& task, const PerplexityResult& r);
std::string result_block(const std::string& task, const AccuracyResult& r);

// What the run evaluated, for the JSON output.
struct EvalSettings {
    std::string task, valid_data, load;
    int64_t seq_length = 0, overlapping_eval = 0;
    bool strict_lambada = false;
};
// One JSON object: the settings and the result's fields under Megatron's names
// (avg_loss, ppl, adjusted_ppl, token_ratio / number_correct, total_examples, avg_accuracy).
std::string result_json(const EvalSettings& settings, const PerplexityResult& r);
std::string result_json(const EvalSettings& settings, const AccuracyResult& r);

}  // namespace mt::eval
