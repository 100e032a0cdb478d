#include "finetune_task.h"

#include <filesystem>

#include "glue_data.h"
#include "mt/error.h"
#include "race_data.h"
#include "task_text.h"

namespace mt::eval {

namespace {

// Python's text.split(sep)[-1].
std::string after_last(const std::string& text, const std::string& sep) {
    const size_t at = text.rfind(sep);
    return at == std::string::npos ? text : text.substr(at + sep.size());
}

// Python's text.strip(chars).
std::string strip(const std::string& text, const std::string& chars) {
    const size_t begin = text.find_first_not_of(chars);
    if (begin == std::string::npos) return "";
    return text.substr(begin, text.find_last_not_of(chars) - begin + 1);
}

}  // namespace

FinetuneTask finetune_task(const std::string& name) {
    if (name == "RACE") return {name, true, kRaceChoices, kRaceChoices};
    if (name == "MNLI") return {name, false, glue_num_classes(GlueTask::kMnli), 1};
    if (name == "QQP") return {name, false, glue_num_classes(GlueTask::kQqp), 1};
    MT_FAIL("--task ", name, ": not a finetuning task (RACE, MNLI or QQP)");
}

ModelArgs task_head_args(const FinetuneTask& task) {
    if (task.multiple_choice) return {{"task-head", "multichoice"}};
    return {{"task-head", "classification"}, {"num-classes", std::to_string(task.num_classes)}};
}

std::string validation_set_name(const FinetuneTask& task, const std::string& path) {
    std::string name = after_last(path, task.name);
    if (task.multiple_choice) return python_replace(strip(name, "/"), "/", "-");
    return python_replace(strip(strip(name, ".tsv"), "/"), "_", "-");
}

namespace {

void print_header(const FinetuneTask& task, const std::string& name,
                  const std::vector<std::string>& paths,
                  const std::function<void(const std::string&)>& print) {
    print(" > building " + task.name + " dataset for " + name + ":");
    std::string list = "  > paths:";
    for (const std::string& p : paths) list += " " + p;
    print(list);
}

void print_total(size_t count, const std::function<void(const std::string&)>& print) {
    print("  >> total number of samples: " + std::to_string(count));
}

}  // namespace

std::vector<ClassificationExample> read_task_examples(const FinetuneTask& task,
                                                      const std::vector<std::string>& paths,
                                                      const Tokenizer& tokenizer,
                                                      int64_t seq_length) {
    const std::vector<std::filesystem::path> files(paths.begin(), paths.end());
    if (task.multiple_choice) return race_dataset(files, tokenizer, seq_length);
    return glue_dataset(task.name == "MNLI" ? GlueTask::kMnli : GlueTask::kQqp, files, tokenizer,
                        seq_length);
}

std::vector<ClassificationExample> task_examples(
    const FinetuneTask& task, const std::string& name, const std::vector<std::string>& paths,
    const Tokenizer& tokenizer, int64_t seq_length,
    const std::function<void(const std::string&)>& print) {
    print_header(task, name, paths, print);
    std::vector<ClassificationExample> examples =
        read_task_examples(task, paths, tokenizer, seq_length);
    print_total(examples.size(), print);
    return examples;
}

void print_task_dataset(const FinetuneTask& task, const std::string& name,
                        const std::vector<std::string>& paths, size_t count,
                        const std::function<void(const std::string&)>& print) {
    print_header(task, name, paths, print);
    print_total(count, print);
}

}  // namespace mt::eval
