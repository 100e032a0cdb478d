// megatron-eval: Megatron-LM's tasks/main.py. The zero-shot GPT tasks, WIKITEXT103 (word-level
// perplexity) and LAMBADA (last-word accuracy), on a Megatron checkpoint or a Hugging Face model
// folder; and the finetuning tasks RACE, MNLI and QQP, which train a BERT task model from
// --pretrained-checkpoint with Megatron's training flags and report its accuracy; same flags,
// same numbers, same result lines.
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "finetune.h"
#include "lm_windows.h"
#include "mt/cli/flags.h"
#include "mt/cli/openmp_waiting.h"
#include "mt/cli/tool.h"
#include "mt/error.h"
#include "mt/infer/model_loader.h"
#include "mt/infer/model_parallel_inference.h"
#include "mt/io/atomic_file.h"
#include "mt/parallel/parallel_state.h"
#include "mt/parallel/world.h"
#include "mt/progress.h"
#include "mt/registry.h"
#include "mt/train/training_flags.h"
#include "results.h"
#include "scoring.h"
#include "zeroshot_data.h"

namespace {

namespace po = boost::program_options;

bool finetuning_task(const std::string& task) {
    return task == "RACE" || task == "MNLI" || task == "QQP";
}

// tasks/main.py's own flags, and what the zero-shot tasks read of Megatron's.
struct TaskFlags {
    std::string task, output_json;
    std::vector<std::string> train_data, valid_data;
    std::optional<int64_t> epochs;
    bool keep_last = false;
    std::optional<std::string> pretrained_checkpoint;
    int64_t overlapping_eval = 32;
    bool strict_lambada = false;
    bool use_checkpoint_args = false;
    // Zero-shot: from the training flags.
    std::string load, ckpt_format;
    int64_t micro_batch_size = 1, log_interval = 100;
    mt::DType params_dtype = mt::DType::f32;  // --bf16 / --fp16
    // The model split over an mpirun job's ranks (a MoE model's experts over the last).
    int tensor_parallel = 1, pipeline_parallel = 1, expert_parallel = 1;
};

// `load_required`: a zero-shot task evaluates the model of --load.
po::options_description task_flags(TaskFlags& f, bool load_required) {
    po::options_description g("Tasks (Megatron's tasks/main.py)", 100);
    auto* load = po::value(&f.load);
    if (load_required) load->required();
    g.add_options()("task", po::value(&f.task)->required(),
                    "WIKITEXT103 or LAMBADA (zero-shot), or RACE, MNLI or QQP (finetuning; the "
                    "retriever tasks are not supported yet)")(
        "valid-data", po::value(&f.valid_data)->multitoken()->zero_tokens(),
        "zero-shot: the evaluation file (exactly one): WikiText tokens (its path must contain "
        "'wiki', 'ptb' or 'lambada', which picks the detokenizer) or LAMBADA JSON lines with "
        "'text'; finetuning: the sets the accuracy is measured on (RACE: directories of *.txt "
        "JSON lines; MNLI, QQP: GLUE TSV files)")(
        "train-data", po::value(&f.train_data)->multitoken(),
        "finetuning: the training sets (RACE: directories; MNLI, QQP: TSV files)")(
        "epochs", po::value<int64_t>(),
        "finetuning: epochs over --train-data; 0: only measure the accuracy (of --load's or "
        "--pretrained-checkpoint's model)")(
        "keep-last", po::bool_switch(&f.keep_last),
        "finetuning: keep each epoch's last incomplete batch (only where there is none: not "
        "supported yet otherwise)")(
        "pretrained-checkpoint", po::value<std::string>(),
        "finetuning: the pretrained model (a checkpoint directory) loaded when the run starts "
        "at iteration 0; its task head, if it has none, keeps its random initialisation")(
        "overlapping-eval", po::value(&f.overlapping_eval)->default_value(32),
        "WIKITEXT103: stride of the sliding windows of --seq-length tokens")(
        "strict-lambada", po::bool_switch(&f.strict_lambada),
        "LAMBADA: predict the whole last word, not only its last token")(
        "load", load,
        "zero-shot: the model, a checkpoint directory of megatron-train / Megatron-LM or a "
        "Hugging Face model folder (required); finetuning: the run's own checkpoints to resume "
        "from")("use-checkpoint-args", po::bool_switch(&f.use_checkpoint_args),
                "accepted: zero-shot tasks always take the model from the checkpoint's args "
                "where no flag gives it")("output-json", po::value(&f.output_json),
                                          "also write the results as JSON to this file");
    return g;
}

std::string check_task_and_data(const TaskFlags& f) {
    if (f.task == "ICT-ZEROSHOT-NQ" || f.task == "RETRIEVER-EVAL" || f.task == "RET-FINETUNE-NQ")
        MT_FAIL("--task ", f.task,
                ": not supported yet (megatron-eval runs WIKITEXT103, LAMBADA, RACE, MNLI and "
                "QQP)");
    MT_CHECK(f.task == "WIKITEXT103" || f.task == "LAMBADA", "--task ", f.task, ": Task ", f.task,
             " is not implemented (known: WIKITEXT103, LAMBADA, RACE, MNLI, QQP)");
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

// Rank 0's evaluation (the model split over `ranks` led from here when they are several).
int evaluate(const TaskFlags& f, const mt::cli::TokenizerFlags& tf, const mt::ModelFamily& family,
             const mt::ModelArgs& model_args, const mt::parallel::ParallelState& ranks) {
    const std::string path = check_task_and_data(f);
    std::optional<mt::infer::LoadedModel> loaded;
    auto load = [&] {
        std::printf("building %s model ...\n", std::string(family.name()).c_str());
        std::fflush(stdout);
        loaded = mt::infer::load_for_inference(mt::Registry::global(), family, f.load, model_args,
                                               f.ckpt_format, f.params_dtype, &ranks);
        std::printf(" loaded checkpoint from %s (%s format) at iteration %lld\n", f.load.c_str(),
                    loaded->format.c_str(), static_cast<long long>(loaded->iteration));
    };
    // Without --tokenizer-type the checkpoint's args name the tokenizer (--use-checkpoint-args),
    // so the model loads first; with it the data is read first, so its errors do not wait.
    if (tf.type.empty()) load();
    auto tokenizer =
        mt::infer::tokenizer_for(mt::Registry::global(), tf.type, tf.options, f.load,
                                 loaded ? loaded->checkpoint_args : mt::CheckpointArgs{},
                                 family.default_tokenizer_type(), tf.model_from_checkpoint_args);
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
    MT_CHECK(!loaded->model->has_encoder(), "not supported: --task ", f.task,
             " with an encoder-decoder model (--model ", std::string(family.name()),
             "): Megatron's zero-shot evaluation (tasks/zeroshot_gpt) scores a decoder-only "
             "language model");
    const int64_t seq_length = std::stoll(loaded->args.at("seq-length"));
    const int64_t vocab = std::stoll(loaded->args.at("padded-vocab-size"));
    MT_CHECK(tokenizer->vocab_size() <= vocab, "the tokenizer's vocabulary (",
             tokenizer->vocab_size(), " tokens) is larger than the model's (", vocab, ")");
    const mt::eval::EvalSettings settings{
        f.task, path, f.load, seq_length, f.overlapping_eval, f.strict_lambada};
    std::optional<mt::infer::ModelParallelLeader> leader;
    if (ranks.world().size() > 1) leader.emplace(*loaded->model, ranks.world());
    mt::Model& model = leader ? static_cast<mt::Model&>(*leader) : *loaded->model;

    if (wiki) {
        const mt::eval::LmWindows windows(wiki->tokens, seq_length, tokenizer->eod(),
                                          f.overlapping_eval);
        const double loss = score_all(
            f, model, windows.size(), [&](int64_t i) { return windows.window(i); },
            mt::eval::Metric::loss);
        report(f, settings,
               mt::eval::perplexity_result(loss, wiki->num_original_tokens,
                                           int64_t(wiki->tokens.size())));
    } else {
        const auto sequences =
            mt::eval::lambada_sequences(lambada, seq_length, tokenizer->eod(), path);
        const int64_t count = int64_t(sequences.size());
        const double correct = score_all(
            f, model, count, [&](int64_t i) { return sequences[size_t(i)]; },
            mt::eval::Metric::accuracy);
        report(f, settings, mt::eval::accuracy_result(int64_t(correct), count));
    }
    return 0;
}

// The zero-shot evaluation on every rank of the job: rank 0 evaluates, the others hold their
// parts of the model and follow.
int run(const TaskFlags& f, const mt::cli::TokenizerFlags& tf, const mt::ModelFamily& family,
        const mt::ModelArgs& model_args) {
    auto ranks =
        mt::infer::inference_ranks(f.tensor_parallel, f.pipeline_parallel, f.expert_parallel);
    int status = 0;
    mt::parallel::run_on_ranks(ranks->world(), [&] {
        if (ranks->world().rank() == 0) {
            status = evaluate(f, tf, family, model_args, *ranks);
            return;
        }
        auto loaded =
            mt::infer::load_for_inference(mt::Registry::global(), family, f.load, model_args,
                                          f.ckpt_format, f.params_dtype, ranks.get());
        mt::infer::follow_leader(*loaded.model, ranks->world());
    });
    return status;
}

// The finetuning flags from the parsed ones.
mt::eval::FinetuneFlags finetune_flags(const TaskFlags& f, const po::variables_map& vm,
                                       const mt::train::TrainingFlags& training,
                                       const mt::cli::TokenizerFlags& tokenizer) {
    MT_CHECK(!f.use_checkpoint_args, "--use-checkpoint-args: not supported yet with --task ",
             f.task, " (the task model comes from the model flags)");
    mt::eval::FinetuneFlags ff;
    ff.task = f.task;
    ff.train_data = f.train_data;
    ff.valid_data = f.valid_data;
    if (vm.count("epochs")) ff.epochs = vm["epochs"].as<int64_t>();
    ff.keep_last = f.keep_last;
    if (vm.count("pretrained-checkpoint"))
        ff.pretrained_checkpoint = vm["pretrained-checkpoint"].as<std::string>();
    ff.output_json = f.output_json;
    ff.training = training;
    ff.tokenizer = tokenizer;
    MT_CHECK(ff.epochs.value_or(0) == 0 || vm.count("lr"), "--task ", f.task,
             " needs --lr to finetune");
    return ff;
}

}  // namespace

int main(int argc, char** argv) {
    // The task decides the default model family (finetuning: BERT) and whether --load is
    // required (the zero-shot tasks evaluate its model), so it is read before parsing.
    const std::vector<std::string> tasks = mt::cli::scan_flag(argc, argv, "--task");
    const bool finetuning = !tasks.empty() && finetuning_task(tasks.back());
    // Evaluation's threads spin briefly, as megatron-generate's; finetuning trains, with
    // libgomp's default (docs/benchmarks.md).
    if (!finetuning) mt::cli::spin_briefly_unless_chosen(argv);
    TaskFlags flags;
    mt::train::TrainingFlags training;
    mt::cli::TokenizerFlags tokenizer;
    return mt::cli::run_model_tool(
        argc, argv, finetuning ? "bert" : "gpt",
        [&](const mt::ModelFamily& family, mt::cli::ToolSpec& spec) {
            spec.name = "megatron-eval";
            spec.megatron_args = mt::cli::MegatronTool::inference;  // docs/flags.md
            spec.description =
                "Megatron-LM's tasks/main.py. Zero-shot evaluation: --task WIKITEXT103 "
                "(perplexity,\nadjusted to words) or --task LAMBADA (last-word accuracy) of the "
                "model in --load (a\nMegatron checkpoint or a Hugging Face folder) on "
                "--valid-data; model flags given here\noverride the checkpoint's own; without "
                "--tokenizer-type, a Hugging Face folder's own\ntokenizer is used. Finetuning: "
                "--task RACE, MNLI or QQP trains the task model (BERT by\ndefault) from "
                "--pretrained-checkpoint on --train-data for --epochs epochs with\nMegatron's "
                "training flags, and reports its accuracy on each --valid-data set.";
            spec.options.add(task_flags(flags, !finetuning));
            for (auto& group :
                 mt::train::training_flag_groups(training, mt::train::EntryPoint::tasks))
                spec.options.add(group);
            spec.options.add(mt::cli::model_flags(family));
            spec.options.add(mt::cli::tokenizer_flags(tokenizer, false));
            spec.options.add(mt::cli::checkpoint_tokenizer_flags(tokenizer));
            spec.run = [&](const po::variables_map& vm) {
                mt::cli::finish_tokenizer_flags(vm, tokenizer);
                if (finetuning_task(flags.task)) {
                    mt::train::finish(vm, training, mt::train::EntryPoint::tasks);
                    mt::eval::finetune(finetune_flags(flags, vm, training, tokenizer), family,
                                       mt::cli::collect_model_args(vm, family.flags()),
                                       family.flags());
                    return 0;
                }
                flags.micro_batch_size = training.micro_batch_size;
                flags.log_interval = training.log_interval;
                // An explicit --ckpt-format names the format of --load; else it is detected.
                if (!vm["ckpt-format"].defaulted()) flags.ckpt_format = training.ckpt_format;
                flags.params_dtype = mt::cli::params_dtype_from(vm);
                flags.tensor_parallel = training.parallel.tensor_parallel;
                flags.pipeline_parallel = training.parallel.pipeline_parallel;
                flags.expert_parallel = training.parallel.expert_parallel;
                return run(flags, tokenizer, family,
                           mt::cli::collect_model_args(vm, family.flags(), false));
            };
        });
}
