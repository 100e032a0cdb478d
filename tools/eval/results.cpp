#include "results.h"

#include <cmath>
#include <cstdio>

#include "mt/data/dataset_description.h"
#include "mt/error.h"
#include "mt/io/json_writer.h"

namespace mt::eval {

namespace {

// Python's '{:.4E}'.format(v).
std::string e4(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.4E", v);
    return buf;
}

// math.exp(min(20, v)): Python's min keeps 20 unless v is smaller (so NaN gives exp(20)).
double capped_exp(double v) {
    return std::exp(v < 20 ? v : 20.0);
}

std::string block(const std::string& line) {
    const std::string dashes(line.size() + 1, '-');
    return dashes + "\n" + line + "\n" + dashes + "\n";
}

io::JsonWriter& settings_json(io::JsonWriter& w, const EvalSettings& s) {
    w.begin_object().key("task").value(s.task).key("valid_data").value(s.valid_data);
    w.key("load").value(s.load).key("seq_length").value(s.seq_length);
    if (s.task == "WIKITEXT103") w.key("overlapping_eval").value(s.overlapping_eval);
    if (s.task == "LAMBADA") w.key("strict_lambada").value(s.strict_lambada);
    return w;
}

}  // namespace

PerplexityResult perplexity_result(double loss_sum, int64_t num_original_tokens,
                                   int64_t num_tokenized_tokens) {
    MT_CHECK(num_tokenized_tokens >= 2, "the text gives ", num_tokenized_tokens,
             " token(s): at least 2 are needed to score one");
    MT_CHECK(num_original_tokens >= 2, "the text has ", num_original_tokens,
             " space-separated word(s): the token ratio needs at least 2");
    PerplexityResult r;
    r.num_original_tokens = num_original_tokens;
    r.num_tokenized_tokens = num_tokenized_tokens;
    r.avg_loss = loss_sum / double(num_tokenized_tokens - 1);
    r.ppl = capped_exp(r.avg_loss);
    r.token_ratio = double(num_tokenized_tokens - 1) / double(num_original_tokens - 1);
    r.adjusted_ppl = capped_exp(r.avg_loss * r.token_ratio);
    return r;
}

AccuracyResult accuracy_result(int64_t number_correct, int64_t total_examples) {
    MT_CHECK(total_examples > 0, "no examples to evaluate");
    return {number_correct, total_examples, double(number_correct) / double(total_examples)};
}

std::string result_block(const std::string& task, const PerplexityResult& r) {
    return block(" validation results on " + task + " | avg loss: " + e4(r.avg_loss) +
                 " | ppl: " + e4(r.ppl) + " | adjusted ppl: " + e4(r.adjusted_ppl) +
                 " | token ratio: " + data::python_float_repr(r.token_ratio) + " |");
}

std::string result_block(const std::string& task, const AccuracyResult& r) {
    return block(" validation results on " + task +
                 " | number correct: " + e4(double(r.number_correct)) + " | total examples: " +
                 e4(double(r.total_examples)) + " | avg accuracy: " + e4(r.avg_accuracy));
}

std::string result_json(const EvalSettings& settings, const PerplexityResult& r) {
    io::JsonWriter w;
    settings_json(w, settings)
        .key("num_original_tokens")
        .value(r.num_original_tokens)
        .key("num_tokenized_tokens")
        .value(r.num_tokenized_tokens)
        .key("avg_loss")
        .value(r.avg_loss)
        .key("ppl")
        .value(r.ppl)
        .key("adjusted_ppl")
        .value(r.adjusted_ppl)
        .key("token_ratio")
        .value(r.token_ratio)
        .end_object();
    return w.str() + "\n";
}

std::string result_json(const EvalSettings& settings, const AccuracyResult& r) {
    io::JsonWriter w;
    settings_json(w, settings)
        .key("number_correct")
        .value(r.number_correct)
        .key("total_examples")
        .value(r.total_examples)
        .key("avg_accuracy")
        .value(r.avg_accuracy)
        .end_object();
    return w.str() + "\n";
}

}  // namespace mt::eval
