// megatron-eval: Megatron-LM's tasks/main.py for the zero-shot GPT tasks, WIKITEXT103
// (word-level perplexity) and LAMBADA (last-word accuracy), on a Megatron checkpoint or a
// Hugging Face model folder; same flags, same numbers, same result lines.
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lm_windows.h"
#include "mt/cli/flags.h"
#include "mt/cli/tool.h"
#include "mt/error.h"
#include "mt/infer/model_loader.h"
#include "mt/io/atomic_file.h"
#include "mt/progress.h"
#include "mt/registry.h"
#include "results.h"
#include "scoring.h"
#include "zeroshot_data.h"

namespace {

namespace po = boost::program_options;

struct TaskFlags {
    std::string task, model, load, ckpt_format, output_json;
    std::vector<std::string> valid_data;
    int64_t overlapping_eval = 32, micro_batch_size = 1, log_interval = 100;
    bool strict_lambada = false;
    mt::DType params_dtype = mt::DType::f32;  // --bf16 / --fp16
};

po::options_description task_flags(TaskFlags& f) {
    po::options_description g("Tasks (Megatron's tasks/main.py)", 100);
    g.add_options()("task", po::value(&f.task)->required(),
                    "WIKITEXT103 or LAMBADA (RACE, MNLI, QQP and the retriever tasks are not "
                    "supported yet)")(
        "valid-data", po::value(&f.valid_data)->multitoken()->zero_tokens(),
        "the evaluation file (exactly one): WikiText tokens (its path must contain 'wiki', "
        "'ptb' or 'lambada', which picks the detokenizer) or LAMBADA JSON lines with 'text'")(
        "overlapping-eval", po::value(&f.overlapping_eval)->default_value(32),
        "WIKITEXT103: stride of the sliding windows of --seq-length tokens")(
        "strict-lambada", po::bool_switch(&f.strict_lambada),
        "LAMBADA: predict the whole last word, not only its last token")(
        "micro-batch-size", po::value(&f.micro_batch_size)->default_value(1),
        "sequences per forward pass")(
        "log-interval", po::value(&f.log_interval)->default_value(100),
        "print '> working on iteration: N' (to stderr) every this many batches")(
        "load", po::value(&f.load)->required(),
        "the model: a checkpoint directory of megatron-train / Megatron-LM, or a Hugging Face "
        "model folder")("ckpt-format", po::value(&f.ckpt_format),
                        "checkpoint format of --load (default: detected)")(
        "use-checkpoint-args", po::bool_switch(),
        "accepted: the model always comes from the checkpoint's args where no flag gives it")(
        "model", po::value(&f.model)->default_value("gpt"), "model family")(
        "output-json", po::value(&f.output_json), "also write the results as JSON to this file");
    return g;
}

std::string check_task_and_data(const TaskFlags& f) {
    if (f.task == "RACE" || f.task == "MNLI" || f.task == "QQP" || f.task == "ICT-ZEROSHOT-NQ" ||
        f.task == "RETRIEVER-EVAL" || f.task == "RET-FINETUNE-NQ")
        MT_FAIL("--task ", f.task,
                ": not supported yet (megatron-eval runs WIKITEXT103 and LAMBADA)");
    MT_CHECK(f.task == "WIKITEXT103" || f.task == "LAMBADA", "--task ", f.task, ": Task ", f.task,
             " is not implemented (known: WIKITEXT103, LAMBADA)");
    MT_CHECK(f.valid_data.size() == 1, "--task ", f.task,
             " needs exactly one --valid-data file, got ", f.valid_data.size());
    MT_CHECK(f.micro_batch_size > 0, "--micro-batch-size must be positive, got ",
             f.micro_batch_size);
    return f.valid_data[0];
}

// Megatron's evaluate() over `count` sequences with a progress bar, and its
// "> working on iteration" lines (on stderr, beside the bar).
double score_all(const TaskFlags& f, mt::Model& model, int64_t count,
                 const std::function<mt::eval::ScoredSequence(int64_t)>& item,
                 mt::eval::Metric metric) {
    std::fflush(stdout);
    mt::Progress progress(f.task, count, metric == mt::eval::Metric::loss ? "windows" : "examples");
    progress.print_line("> working on iteration: 0");
    const int64_t batches = (count + f.micro_batch_size - 1) / f.micro_batch_size;
    const double total = mt::eval::evaluate(
        model, count, item, f.micro_batch_size, metric, [&](int64_t done, int64_t items) {
            progress.update(items);
            if (f.log_interval > 0 && done % f.log_interval == 0 && done < batches)
                progress.print_line("> working on iteration: " + std::to_string(done));
        });
    progress.finish();
    return total;
}

// Megatron's result block on stdout, and the JSON file of --output-json.
template <class Result>
void report(const TaskFlags& f, const mt::eval::EvalSettings& settings, const Result& r) {
    std::fputs(mt::eval::result_block(f.task, r).c_str(), stdout);
    if (!f.output_json.empty()) {
        mt::io::AtomicFile out(f.output_json);
        out.stream() << mt::eval::result_json(settings, r);
        out.commit();
    }
    std::printf("done :-)\n");
}

int run(const TaskFlags& f, const mt::cli::TokenizerFlags& tf, const mt::ModelFamily& family,
        const mt::ModelArgs& model_args) {
    const std::string path = check_task_and_data(f);
    std::optional<mt::infer::LoadedModel> loaded;
    auto load = [&] {
        std::printf("building %s model ...\n", std::string(family.name()).c_str());
        std::fflush(stdout);
        loaded = mt::infer::load_for_inference(mt::Registry::global(), family, f.load, model_args,
                                               f.ckpt_format, f.params_dtype);
        std::printf(" loaded checkpoint from %s (%s format) at iteration %lld\n", f.load.c_str(),
                    loaded->format.c_str(), static_cast<long long>(loaded->iteration));
    };
    // Without tokenizer flags the checkpoint's args name the tokenizer (--use-checkpoint-args),
    // so the model loads first; with them the data is read first, so its errors do not wait.
    if (tf.type.empty() && (tf.options.vocab_file.empty() || tf.options.merge_file.empty())) load();
    auto tokenizer =
        mt::infer::tokenizer_for(mt::Registry::global(), tf.type, tf.options, f.load,
                                 loaded ? loaded->checkpoint_args : mt::CheckpointArgs{});
    std::printf("> building %s tokenizer (vocabulary %lld) ...\n",
                std::string(tokenizer->name()).c_str(),
                static_cast<long long>(tokenizer->vocab_size()));

    std::optional<mt::eval::WikitextData> wiki;
    std::vector<mt::eval::LambadaExample> lambada;
    if (f.task == "WIKITEXT103") {
        wiki = mt::eval::wikitext103_data(path, *tokenizer);
        std::printf(" > number of original tokens: %lld, number of detokenized tokens: %zu\n",
                    static_cast<long long>(wiki->num_original_tokens), wiki->tokens.size());
    } else {
        std::printf("> building lambada dataset from %s ...\n", path.c_str());
        lambada = mt::eval::lambada_data(path, *tokenizer, f.strict_lambada);
        std::printf(" > found %zu samples.\n", lambada.size());
    }

    if (!loaded) load();
    const int64_t seq_length = std::stoll(loaded->args.at("seq-length"));
    const int64_t vocab = std::stoll(loaded->args.at("padded-vocab-size"));
    MT_CHECK(tokenizer->vocab_size() <= vocab, "the tokenizer's vocabulary (",
             tokenizer->vocab_size(), " tokens) is larger than the model's (", vocab, ")");
    const mt::eval::EvalSettings settings{
        f.task, path, f.load, seq_length, f.overlapping_eval, f.strict_lambada};

    if (wiki) {
        const mt::eval::LmWindows windows(wiki->tokens, seq_length, tokenizer->eod(),
                                          f.overlapping_eval);
        const double loss = score_all(
            f, *loaded->model, windows.size(), [&](int64_t i) { return windows.window(i); },
            mt::eval::Metric::loss);
        report(f, settings,
               mt::eval::perplexity_result(loss, wiki->num_original_tokens,
                                           int64_t(wiki->tokens.size())));
    } else {
        const auto sequences =
            mt::eval::lambada_sequences(lambada, seq_length, tokenizer->eod(), path);
        const int64_t count = int64_t(sequences.size());
        const double correct = score_all(
            f, *loaded->model, count, [&](int64_t i) { return sequences[size_t(i)]; },
            mt::eval::Metric::accuracy);
        report(f, settings, mt::eval::accuracy_result(int64_t(correct), count));
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    TaskFlags flags;
    mt::cli::TokenizerFlags tokenizer;
    return mt::cli::run_model_tool(
        argc, argv, "gpt", [&](const mt::ModelFamily& family, mt::cli::ToolSpec& spec) {
            spec.name = "megatron-eval";
            spec.megatron_args = mt::cli::MegatronTool::inference;  // docs/flags.md
            spec.description =
                "Zero-shot evaluation as Megatron-LM's tasks/main.py runs it: --task WIKITEXT103\n"
                "(perplexity, adjusted to words) or --task LAMBADA (last-word accuracy) of the "
                "model\n"
                "in --load (a Megatron checkpoint or a Hugging Face folder) on --valid-data. "
                "Model\n"
                "flags given here override the checkpoint's own; without --tokenizer-type, a "
                "Hugging\n"
                "Face folder's own tokenizer is used.";
            spec.options.add(task_flags(flags));
            spec.options.add(mt::cli::model_flags(family));
            spec.options.add(mt::cli::tokenizer_flags(tokenizer, false));
            spec.options.add(mt::cli::precision_flags());
            spec.run = [&](const po::variables_map& vm) {
                mt::cli::finish_tokenizer_flags(vm, tokenizer);
                flags.params_dtype = mt::cli::params_dtype_from(vm);
                return run(flags, tokenizer, family,
                           mt::cli::collect_model_args(vm, family.flags(), false));
            };
        });
}
