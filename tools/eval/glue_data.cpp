#include "glue_data.h"

#include <exception>
#include <string_view>

#include "mt/error.h"
#include "python_text.h"
#include "task_text.h"

namespace mt::eval {

namespace {

namespace fs = std::filesystem;

// line.strip().split('\t')
std::vector<std::string_view> tsv_row(std::string_view line) {
    const std::string_view s = python_strip(line);
    std::vector<std::string_view> row;
    size_t begin = 0;
    for (size_t tab; (tab = s.find('\t', begin)) != std::string_view::npos; begin = tab + 1)
        row.push_back(s.substr(begin, tab - begin));
    row.push_back(s.substr(begin));
    return row;
}

int64_t int_column(std::string_view text, const std::string& where, std::string_view what) {
    const auto value = python_int(python_strip(text));
    MT_CHECK(value.has_value(), where, ": the ", what, " '", text, "' is not an integer");
    return *value;
}

std::string cleaned(std::string_view column) {
    return clean_text(python_strip(column));
}

// tasks/glue/mnli.py
void mnli_line(const std::vector<std::string_view>& row, const std::string& where, bool is_test,
               std::vector<GlueSample>& out) {
    MT_CHECK(row.size() >= 10, where, ": ", row.size(),
             " columns; MNLI rows need at least 10 (sentences in columns 8 and 9)");
    GlueSample s;
    s.text_a = cleaned(row[8]);
    s.text_b = cleaned(row[9]);
    s.uid = int_column(row[0], where, "index");
    const std::string_view label = is_test ? "contradiction" : python_strip(row.back());
    MT_CHECK(!s.text_a.empty(), where, ": empty sentence1");
    MT_CHECK(!s.text_b.empty(), where, ": empty sentence2");
    if (label == "contradiction")
        s.label = 0;
    else if (label == "entailment")
        s.label = 1;
    else if (label == "neutral")
        s.label = 2;
    else
        MT_FAIL(where, ": the label '", label,
                "' is not one of contradiction, entailment, neutral");
    MT_CHECK(s.uid >= 0, where, ": negative index ", s.uid);
    out.push_back(std::move(s));
}

// tasks/glue/qqp.py
void qqp_line(const std::vector<std::string_view>& row, const std::string& where, bool is_test,
              std::vector<GlueSample>& out) {
    GlueSample s;
    int64_t label = 0;
    if (is_test) {
        MT_CHECK(row.size() == 3, where, ": ", row.size(), " columns; a QQP test row needs 3");
        s.uid = int_column(row[0], where, "id");
        s.text_a = cleaned(row[1]);
        s.text_b = cleaned(row[2]);
        MT_CHECK(!s.text_a.empty(), where, ": empty question1");
        MT_CHECK(!s.text_b.empty(), where, ": empty question2");
    } else {
        if (row.size() != 6) return;  // Megatron: "***WARNING*** index error, skipping"
        s.uid = int_column(row[0], where, "id");
        s.text_a = cleaned(row[3]);
        s.text_b = cleaned(row[4]);
        label = int_column(row[5], where, "label");
        if (s.text_a.empty() || s.text_b.empty()) return;  // "zero length a/b, skipping"
    }
    MT_CHECK(label == 0 || label == 1, where, ": the label ", label, " is not 0 or 1");
    MT_CHECK(s.uid >= 0, where, ": negative id ", s.uid);
    s.label = int32_t(label);
    out.push_back(std::move(s));
}

}  // namespace

int glue_num_classes(GlueTask task) {
    return task == GlueTask::kMnli ? 3 : 2;
}

std::vector<GlueSample> glue_samples(GlueTask task, const fs::path& file) {
    std::vector<GlueSample> out;
    bool is_test = false;
    for_each_text_line(file, [&](std::string_view line, int64_t number) {
        const std::string where = file.string() + ":" + std::to_string(number);
        const auto row = tsv_row(line);
        if (number == 1) {
            if (task == GlueTask::kMnli) {
                is_test = row.size() == 10;
                // Megatron prints the header's columns 8, 9 and the last, so needs them.
                MT_CHECK(row.size() >= 10, where, ": an MNLI header has 10 columns (test file)",
                         " or more, not ", row.size());
            } else {
                is_test = row.size() == 3;
                MT_CHECK(is_test || row.size() == 6, where,
                         ": a QQP header has 3 columns (test file) or 6, not ", row.size());
            }
            return;
        }
        if (task == GlueTask::kMnli)
            mnli_line(row, where, is_test, out);
        else
            qqp_line(row, where, is_test, out);
    });
    return out;
}

std::vector<ClassificationExample> glue_dataset(GlueTask task, const std::vector<fs::path>& files,
                                                const Tokenizer& tokenizer,
                                                int64_t max_seq_length) {
    MT_CHECK(max_seq_length >= 1, "the sequence length must be at least 1, not ", max_seq_length);
    classification_special_ids(tokenizer);  // fail before reading when one is missing
    std::vector<GlueSample> samples;
    for (const auto& file : files) {
        auto more = glue_samples(task, file);
        samples.insert(samples.end(), std::make_move_iterator(more.begin()),
                       std::make_move_iterator(more.end()));
    }
    const int64_t n = int64_t(samples.size());
    std::vector<ClassificationExample> out(samples.size());
    std::exception_ptr error;
#pragma omp parallel for schedule(dynamic, 256)
    for (int64_t i = 0; i < n; ++i) {
        const GlueSample& s = samples[size_t(i)];
        ClassificationExample& e = out[size_t(i)];
        e.uid = s.uid;
        e.label = s.label;
        try {
            e.rows.push_back(build_tokens_types_paddings_from_text(s.text_a, s.text_b, tokenizer,
                                                                   max_seq_length));
        } catch (...) {
#pragma omp critical(mt_glue_dataset_error)
            if (!error) error = std::current_exception();
        }
    }
    if (error) std::rethrow_exception(error);
    return out;
}

}  // namespace mt::eval
