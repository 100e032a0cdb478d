#include "race_data.h"

#include <simdjson.h>

#include <exception>
#include <optional>
#include <string>

#include "mt/error.h"
#include "task_text.h"

namespace mt::eval {

namespace {

namespace fs = std::filesystem;

// Python's json keeps the last of duplicate keys.
simdjson::dom::element field(simdjson::dom::object object, std::string_view key,
                             const std::string& where) {
    std::optional<simdjson::dom::element> value;
    for (auto f : object)
        if (f.key == key) value = f.value;
    MT_CHECK(value.has_value(), where, ": no key '", key, "'");
    return *value;
}

simdjson::dom::array array_of(simdjson::dom::element e, const std::string& where,
                              std::string_view what) {
    simdjson::dom::array a;
    MT_CHECK(!e.get_array().get(a), where, ": '", what, "' must be a list");
    return a;
}

std::string_view string_of(simdjson::dom::element e, const std::string& where,
                           std::string_view what) {
    std::string_view s;
    MT_CHECK(!e.get_string().get(s), where, ": ", what, " must be a string");
    return s;
}

// The examples of one document (one JSON line); uids are set by the caller.
void document_examples(std::string_view line, const std::string& where,
                       simdjson::dom::parser& parser, const Tokenizer& tokenizer,
                       const ClassificationSpecialIds& special, int64_t max_seq_length,
                       int64_t max_qa_length, std::vector<ClassificationExample>& out) {
    simdjson::dom::element doc;
    auto error = parser.parse(line.data(), line.size(), true).get(doc);
    MT_CHECK(!error, where, ": not valid JSON (", simdjson::error_message(error), ")");
    simdjson::dom::object object;
    MT_CHECK(!doc.get_object().get(object), where, ": expected a JSON object");
    const std::string_view article = string_of(field(object, "article", where), where, "'article'");
    const auto questions = array_of(field(object, "questions", where), where, "questions");
    const auto options = array_of(field(object, "options", where), where, "options");
    const auto answers = array_of(field(object, "answers", where), where, "answers");
    MT_CHECK(questions.size() == answers.size() && questions.size() == options.size(), where, ": ",
             questions.size(), " questions, ", answers.size(), " answers and ", options.size(),
             " option lists; Megatron needs as many of each");

    const std::vector<int32_t> article_ids = tokenizer.encode(clean_text(article));
    const std::span<const int32_t> article_span(article_ids);
    for (size_t qi = 0; qi < questions.size(); ++qi) {
        const std::string at = where + ": question " + std::to_string(qi);
        const std::string_view question = string_of(questions.at(qi), at, "the question");
        const std::string_view answer = string_of(answers.at(qi), at, "the answer");
        MT_CHECK(answer.size() == 1 && answer[0] >= 'A' && answer[0] < 'A' + kRaceChoices, at,
                 ": the answer '", answer, "' is not one of A, B, C, D");
        const auto choices = array_of(options.at(qi), at, "options");
        MT_CHECK(choices.size() == size_t(kRaceChoices), at, ": ", choices.size(),
                 " options, Megatron needs ", kRaceChoices);
        ClassificationExample example;
        example.label = answer[0] - 'A';
        const bool blank = question.find('_') != std::string_view::npos;
        for (auto option : choices) {
            const std::string_view choice = string_of(option, at, "an option");
            const std::string qa = blank ? python_replace(question, "_", choice)
                                         : std::string(question) + " " + std::string(choice);
            std::vector<int32_t> qa_ids = tokenizer.encode(clean_text(qa));
            if (int64_t(qa_ids.size()) > max_qa_length) qa_ids.resize(size_t(max_qa_length));
            example.rows.push_back(build_tokens_types_paddings(
                qa_ids, article_span, max_seq_length, special.cls, special.sep, special.pad));
        }
        out.push_back(std::move(example));
    }
}

std::vector<ClassificationExample> file_examples(const fs::path& file, const Tokenizer& tokenizer,
                                                 const ClassificationSpecialIds& special,
                                                 int64_t max_seq_length, int64_t max_qa_length) {
    std::vector<ClassificationExample> out;
    simdjson::dom::parser parser;
    for_each_text_line(file, [&](std::string_view line, int64_t number) {
        document_examples(line, file.string() + ":" + std::to_string(number), parser, tokenizer,
                          special, max_seq_length, max_qa_length, out);
    });
    return out;
}

}  // namespace

std::vector<fs::path> race_files(const fs::path& dir) {
    MT_CHECK(fs::is_directory(dir), "RACE data ", dir.string(), ": not a directory");
    std::vector<fs::path> files;
    // directory_iterator walks readdir's order, which is what os.scandir (and so glob) sees.
    for (const auto& entry : fs::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || name[0] == '.') continue;  // glob's '*' skips hidden names
        if (name.size() >= 4 && name.compare(name.size() - 4, 4, ".txt") == 0)
            files.push_back(entry.path());
    }
    if (files.empty()) {
        // Megatron would read nothing here and fail later without saying why: a RACE split
        // directory keeps its files in middle/ and high/.
        std::string subdirectories;
        for (const auto& entry : fs::directory_iterator(dir))
            if (entry.is_directory()) subdirectories += " " + entry.path().string();
        MT_CHECK(subdirectories.empty(), "RACE data ", dir.string(),
                 ": no *.txt files (each directory's own files are read, as Megatron's glob "
                 "does, not its subdirectories): give",
                 subdirectories);
    }
    return files;
}

std::vector<ClassificationExample> race_examples(const std::vector<fs::path>& files,
                                                 const Tokenizer& tokenizer, int64_t max_seq_length,
                                                 int64_t max_qa_length) {
    MT_CHECK(max_qa_length >= 0, "the RACE question length cap must not be negative, not ",
             max_qa_length);
    MT_CHECK(max_seq_length >= 1, "the sequence length must be at least 1, not ", max_seq_length);
    const ClassificationSpecialIds special = classification_special_ids(tokenizer);
    const int64_t n = int64_t(files.size());
    std::vector<std::vector<ClassificationExample>> per_file(files.size());
    std::vector<std::exception_ptr> errors(files.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t i = 0; i < n; ++i) {
        try {
            per_file[size_t(i)] =
                file_examples(files[size_t(i)], tokenizer, special, max_seq_length, max_qa_length);
        } catch (...) {
            errors[size_t(i)] = std::current_exception();
        }
    }
    // Megatron stops at the first bad file in its order; so does this.
    for (const auto& error : errors)
        if (error) std::rethrow_exception(error);
    std::vector<ClassificationExample> out;
    for (auto& examples : per_file)
        for (auto& example : examples) {
            example.uid = int64_t(out.size());
            out.push_back(std::move(example));
        }
    return out;
}

std::vector<ClassificationExample> race_dataset(const std::vector<fs::path>& dirs,
                                                const Tokenizer& tokenizer,
                                                int64_t max_seq_length) {
    std::vector<ClassificationExample> out;
    for (const auto& dir : dirs) {
        auto examples = race_examples(race_files(dir), tokenizer, max_seq_length);
        out.insert(out.end(), std::make_move_iterator(examples.begin()),
                   std::make_move_iterator(examples.end()));
    }
    return out;
}

}  // namespace mt::eval
