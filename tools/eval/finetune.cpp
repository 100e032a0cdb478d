#include "finetune.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "classification_dataset.h"
#include "finetune_order.h"
#include "finetune_task.h"
#include "mt/backend.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/checkpoint/checkpoint_directory.h"
#include "mt/error.h"
#include "mt/io/atomic_file.h"
#include "mt/io/json_writer.h"
#include "mt/nn/parameter.h"
#include "mt/parallel/collectives.h"
#include "mt/parallel/parallel_state.h"
#include "mt/parallel/world.h"
#include "mt/progress.h"
#include "mt/registry.h"
#include "mt/tokenizer.h"
#include "mt/train/checkpoint_args.h"
#include "mt/train/checkpoint_io.h"
#include "mt/train/checkpointing.h"
#include "mt/train/training_run.h"
#include "pretrained_checkpoint.h"

namespace mt::eval {

namespace {

using Clock = std::chrono::steady_clock;

// Megatron prints its setup messages on rank 0 (print_rank_0) and its iteration lines and
// metrics on the last rank (print_rank_last).
struct RankPrinter {
    bool first = true, last = true;
    void to_first(const std::string& text) const { print(first, text); }
    void to_last(const std::string& text) const { print(last, text); }
    static void print(bool mine, const std::string& text) {
        if (!mine) return;
        std::printf("%s\n", text.c_str());
        std::fflush(stdout);
    }
};

// One --valid-data set of the accuracy callback.
struct ValidationSet {
    std::string name;
    std::unique_ptr<ClassificationDataset> dataset;
};

// The data-parallel sum of this rank's counts.
AccuracyCount all_ranks(const AccuracyCount& mine, const parallel::ParallelState& run) {
    std::vector<double> sums{double(mine.correct), double(mine.total)};
    if (run.dp().size() > 1) parallel::all_reduce_values(run.dp(), sums, ReduceOp::sum);
    return {int64_t(sums[0]), int64_t(sums[1])};
}

// Megatron's metrics_func: each set's count over every rank, then the overall.
EpochAccuracy measure_accuracy(int64_t epoch, Model& model, const std::vector<ValidationSet>& sets,
                               int64_t micro_batch_size, const parallel::ParallelState& run,
                               const RankPrinter& out) {
    out.to_last("calculating metrics ...");
    EpochAccuracy result;
    result.epoch = epoch;
    const int64_t dp = run.dp().size();
    for (const ValidationSet& set : sets) {
        const auto start = Clock::now();
        // Megatron's loaders here drop a last partial batch only with data parallelism.
        const LoaderShape shape{set.dataset->size(), micro_batch_size, dp, dp > 1};
        std::optional<Progress> progress;  // on the printing rank's terminal
        if (out.last) progress.emplace(set.name, set.dataset->size() / dp, "examples");
        const AccuracyCount mine =
            count_correct(model, *set.dataset, shape, run.dp().rank(), [&](int64_t n) {
                if (progress) progress->add(n);
            });
        if (progress) progress->finish();
        const AccuracyCount count = all_ranks(mine, run);
        out.to_last(dataset_accuracy_line(
            epoch, set.name, count, std::chrono::duration<double>(Clock::now() - start).count()));
        result.datasets.emplace_back(set.name, count);
        result.overall.correct += count.correct;
        result.overall.total += count.total;
    }
    out.to_last(overall_accuracy_line(epoch, result.overall));
    return result;
}

// The checkpoint args megatron-train saves, with the task's own.
CheckpointArgs finetune_checkpoint_args(const FinetuneFlags& flags,
                                        const train::TrainingFlags& scaled,
                                        const std::vector<FlagInfo>& model_flags,
                                        const ModelArgs& resolved,
                                        const parallel::ParallelState& run) {
    CheckpointArgs a = train::checkpoint_args(scaled, flags.tokenizer, model_flags, resolved, run);
    set_arg(a, "task", flags.task);
    set_arg(a, "epochs", *flags.epochs);
    set_arg(a, "keep_last", flags.keep_last);
    set_arg(a, "pretrained_checkpoint",
            flags.pretrained_checkpoint ? ArgValue{*flags.pretrained_checkpoint} : ArgValue{});
    return a;
}

std::vector<EpochAccuracy> run_finetune(const FinetuneFlags& flags, const ModelFamily& family,
                                        ModelArgs model_args,
                                        const std::vector<FlagInfo>& model_flags,
                                        const parallel::ParallelState& run) {
    const FinetuneTask task = finetune_task(flags.task);
    const train::TrainingFlags& training = flags.training;
    Communicator& world = run.world();
    const RankPrinter out{world.rank() == 0, world.rank() == world.size() - 1};
    MT_CHECK(flags.epochs, "--task ", task.name, " needs --epochs (0: evaluation only)");
    const int64_t epochs = *flags.epochs;
    MT_CHECK(epochs >= 0, "--epochs must not be negative, got ", epochs);
    MT_CHECK(!flags.valid_data.empty(), "--task ", task.name,
             " needs --valid-data (the sets its accuracy is measured on)");
    MT_CHECK(epochs == 0 || !flags.train_data.empty(), "--task ", task.name,
             " needs --train-data to finetune (or --epochs 0)");
    MT_CHECK(!training.rampup,
             "batch size scaling is not supported for finetuning "
             "(--rampup-batch-size)");
    MT_CHECK(training.micro_batch_size > 0, "--micro-batch-size must be positive, got ",
             training.micro_batch_size);
    const int64_t dp = run.dp().size(), mbs = training.micro_batch_size;
    const int64_t global_batch = training.global_batch_size.value_or(mbs * dp);
    MT_CHECK(global_batch == mbs * dp,
             "finetuning with gradient accumulation doesn't currently work (as in Megatron): "
             "--global-batch-size ",
             global_batch, " must be --micro-batch-size ", mbs, " x the data-parallel size ", dp);
    MT_CHECK(!flags.tokenizer.type.empty(), "--task ", task.name, " needs --tokenizer-type");
    MT_CHECK(model_args.count("seq-length"), "--task ", task.name, " needs --seq-length");
    const int64_t seq_length = std::stoll(model_args.at("seq-length"));

    auto tokenizer =
        Registry::global().create_tokenizer(flags.tokenizer.type, flags.tokenizer.options);
    out.to_first("> building " + flags.tokenizer.type + " tokenizer (vocabulary " +
                 std::to_string(tokenizer->vocab_size()) + ") ...");
    auto examples = [&](const std::string& name, const std::vector<std::string>& paths) {
        return task_examples(task, name, paths, *tokenizer, seq_length,
                             [&](const std::string& line) { out.to_first(line); });
    };

    // Megatron's order: the train and validation datasets, the callback's sets, the model. It
    // reads the validation files twice (the joined set, then one per path); they are read once
    // here, per path, and joined.
    std::vector<std::vector<ClassificationExample>> valid_parts;
    for (const std::string& path : flags.valid_data)
        valid_parts.push_back(read_task_examples(task, {path}, *tokenizer, seq_length));
    auto print_first = [&](const std::string& line) { out.to_first(line); };
    std::unique_ptr<ClassificationDataset> train_set, valid_set;
    int64_t per_epoch = 0;
    LoaderShape train_shape;
    if (epochs > 0) {
        train_set = std::make_unique<ClassificationDataset>(
            examples("training", flags.train_data), task.multiple_choice, data::Split::train);
        std::vector<ClassificationExample> joined;
        for (const auto& part : valid_parts) joined.insert(joined.end(), part.begin(), part.end());
        print_task_dataset(task, "validation", flags.valid_data, joined.size(), print_first);
        valid_set = std::make_unique<ClassificationDataset>(std::move(joined), task.multiple_choice,
                                                            data::Split::valid);
        out.to_first("building train and validation dataloaders ...");
        train_shape = {train_set->size(), mbs, dp, !flags.keep_last};
        per_epoch = batches_per_epoch(train_shape);
        MT_CHECK(per_epoch > 0, "the ", train_set->size(),
                 " training samples fill no batch of --micro-batch-size ", mbs, " on each of ", dp,
                 " data-parallel ranks");
    }
    const int64_t train_iters = epochs * per_epoch;
    std::vector<ValidationSet> sets;
    for (size_t i = 0; i < flags.valid_data.size(); ++i) {
        const std::string name = validation_set_name(task, flags.valid_data[i]);
        print_task_dataset(task, name, {flags.valid_data[i]}, valid_parts[i].size(), print_first);
        sets.push_back(
            {name, std::make_unique<ClassificationDataset>(
                       std::move(valid_parts[i]), task.multiple_choice, data::Split::valid)});
    }

    out.to_first(std::string("building ") +
                 (task.multiple_choice ? "multichoice" : "classification") + " model for " +
                 task.name + " ...");
    model_args["vocab-size"] = std::to_string(tokenizer->vocab_size());
    model_args["tensor-model-parallel-size"] = std::to_string(training.parallel.tensor_parallel);
    for (const auto& [name, value] : task_head_args(task)) model_args[name] = value;
    auto backend = make_cpu_backend();
    const BuildContext context{*backend, run, training.sequence_parallel, training.params_dtype};
    auto model = family.build(model_args, context);
    model->initialize(static_cast<uint64_t>(training.seed));
    int64_t num_params = 0;
    std::vector<ParameterInfo> whole_params;
    for (nn::Parameter* p : model->parameters()) {
        num_params += p->value.numel();
        whole_params.push_back(nn::describe(*p));
    }
    if (run.dp().rank() == 0)
        std::printf(
            " > number of parameters on (tensor, pipeline) model parallel rank (%d, %d): %lld\n",
            run.tp().rank(), run.pp().rank(), static_cast<long long>(num_params));
    const std::string head = task.multiple_choice ? "multichoice_head" : "classification_head";

    std::vector<EpochAccuracy> results;
    if (epochs == 0) {
        // Evaluation only: the model of --load (if it has a checkpoint), else the pretrained one.
        int64_t iteration = 0;
        if (training.load) {
            const std::filesystem::path tracker = checkpoint_tracker(*training.load);
            if (std::filesystem::exists(tracker))
                iteration =
                    load_task_model(*training.load, *model, nullptr, head, run, print_first);
            else
                out.to_first("WARNING: could not find the metadata file " + tracker.string() +
                             "\n    will not load any checkpoints and will start from random");
        }
        if (iteration == 0 && flags.pretrained_checkpoint)
            load_task_model(*flags.pretrained_checkpoint, *model, nullptr, head, run, print_first);
        out.to_first("done with setups ...");
        out.to_first("training ...");
        out.to_first("evaluation only mode, setting epoch to -1");
        results.push_back(measure_accuracy(-1, *model, sets, mbs, run, out));
        out.to_first("done :-)");
        return results;
    }

    // megatron-train's optimizer, schedule and trainer; RACE's choices count as samples where
    // Megatron multiplies its batch sizes by them.
    train::TrainingFlags unscaled = training;
    unscaled.schedule.train_iters = train_iters;
    unscaled.schedule.global_batch_size = global_batch;
    unscaled.global_batch_size = global_batch;
    train::TrainingFlags scaled = unscaled;
    scaled.micro_batch_size *= task.sample_multiplier;
    scaled.schedule.global_batch_size *= task.sample_multiplier;
    scaled.global_batch_size = scaled.schedule.global_batch_size;
    train::TrainerOptions options = train::trainer_options(unscaled);
    // Megatron's finetuning loop (tasks/finetune_utils.py) does not drive the re-run engine.
    options.rerun = {};
    options.check_for_spiky_loss = options.check_for_large_grads = false;
    options.sample_multiplier = task.sample_multiplier;
    options.log_consumed_samples = false;
    // Megatron's finetuning loop checks neither the clock nor signals.
    options.exit_duration_in_mins.reset();

    train::TrainingRun training_run(
        *model, *backend, run, training, train::schedule_config(scaled), options,
        [out](const std::string& line) { out.to_last(line); }, out.last);
    train::Trainer& trainer = training_run.trainer();
    optim::Optimizer& optimizer = training_run.optimizer();
    const train::TrainingParts parts = training_run.parts();
    if (training.load && !train::load_checkpoint(scaled, parts, whole_params) &&
        training.exit_on_missing_checkpoint) {
        out.to_last(">> '--exit-on-missing-checkpoint' set ... exiting. <<");
        return results;
    }
    // Megatron's loaders resume from the iteration alone (mid-epoch: its batches are skipped);
    // the validation iterator starts afresh.
    trainer.set_progress(trainer.iteration(), trainer.iteration() * mbs * dp, 0);
    if (trainer.iteration() == 0 && flags.pretrained_checkpoint)
        load_task_model(*flags.pretrained_checkpoint, *model, &optimizer, head, run, print_first);

    const EpochOrderedDataset train_view(*train_set, train_shape, epochs, [&](int64_t epoch) {
        return uint64_t(training.seed + epoch);
    });
    // Megatron's validation loader, never re-seeded (epoch 0), loops for as long as the
    // evaluations every --eval-interval iterations take.
    const LoaderShape valid_shape{valid_set->size(), mbs, dp, !flags.keep_last};
    const int64_t evaluations =
        training.eval_interval > 0 && training.eval_iters > 0
            ? train_iters / training.eval_interval - trainer.iteration() / training.eval_interval
            : 0;
    std::unique_ptr<EpochOrderedDataset> valid_view;
    if (evaluations > 0) {
        const int64_t per_valid_epoch = batches_per_epoch(valid_shape) * mbs * dp;
        MT_CHECK(per_valid_epoch > 0, "the ", valid_set->size(),
                 " validation samples fill no batch of --micro-batch-size ", mbs, " on each of ",
                 dp, " data-parallel ranks");
        const int64_t needed = evaluations * training.eval_iters * mbs * dp;
        valid_view = std::make_unique<EpochOrderedDataset>(
            *valid_set, valid_shape, (needed + per_valid_epoch - 1) / per_valid_epoch,
            [](int64_t) { return uint64_t(0); });
    }

    std::unique_ptr<CheckpointFormat> format;
    train::CaptureOptions capture_options;
    if (training.save) {
        format = Registry::global().create_checkpoint(training.ckpt_format);
        capture_options.optimizer = !training.no_save_optim;
        capture_options.rng = !training.no_save_rng;
        capture_options.args = finetune_checkpoint_args(flags, scaled, model_flags,
                                                        family.resolved_args(model_args), run);
        trainer.set_saver(
            [&] { train::save_checkpoint(scaled, *format, parts, capture_options, whole_params); });
    }
    // Megatron's end of an epoch: a checkpoint (with --save), then the accuracy callback.
    trainer.set_after_iteration([&] {
        if (trainer.iteration() % per_epoch != 0) return;
        const int64_t epoch = trainer.iteration() / per_epoch - 1;
        if (training.save)
            train::save_checkpoint(scaled, *format, parts, capture_options, whole_params);
        results.push_back(measure_accuracy(epoch, *model, sets, mbs, run, out));
        if (epoch + 1 < epochs)
            out.to_first("working on epoch " + std::to_string(epoch + 2) + " ...");
    });

    out.to_first("done with setups ...");
    out.to_first("training ...");
    if (trainer.iteration() < train_iters)
        out.to_first("working on epoch " + std::to_string(trainer.iteration() / per_epoch + 1) +
                     " ...");
    if (trainer.train(train_view, valid_view.get()) == train::StopReason::exit_interval) {
        out.to_first("exiting program at iteration " + std::to_string(trainer.iteration()));
        return results;
    }
    out.to_first("done :-)");
    return results;
}

}  // namespace

std::vector<EpochAccuracy> finetune(const FinetuneFlags& flags, const ModelFamily& family,
                                    const ModelArgs& model_args,
                                    const std::vector<FlagInfo>& model_flags) {
    auto run = std::make_unique<parallel::ParallelState>(
        parallel::make_world_communicator(Registry::global(), "cpu"),
        train::parallel_config(flags.training, model_args));
    std::vector<EpochAccuracy> results;
    parallel::run_on_ranks(run->world(), [&] {
        results = run_finetune(flags, family, model_args, model_flags, *run);
    });
    if (!flags.output_json.empty() && run->world().rank() == run->world().size() - 1) {
        io::AtomicFile file(flags.output_json);
        file.stream() << finetune_json(flags, std::stoll(model_args.at("seq-length")), results);
        file.commit();
    }
    return results;
}

std::string finetune_json(const FinetuneFlags& flags, int64_t seq_length,
                          const std::vector<EpochAccuracy>& results) {
    io::JsonWriter w;
    auto strings = [&](const std::vector<std::string>& list) {
        w.begin_array();
        for (const std::string& s : list) w.value(s);
        w.end_array();
    };
    auto count = [&](const AccuracyCount& c) {
        w.key("correct").value(c.correct).key("total").value(c.total);
        w.key("accuracy").value(accuracy_percent(c));
    };
    w.begin_object().key("task").value(flags.task).key("train_data");
    strings(flags.train_data);
    w.key("valid_data");
    strings(flags.valid_data);
    w.key("seq_length").value(seq_length).key("epochs").value(flags.epochs.value_or(0));
    w.key("results").begin_array();
    for (const EpochAccuracy& r : results) {
        w.begin_object().key("epoch").value(r.epoch).key("datasets").begin_array();
        for (const auto& [name, c] : r.datasets) {
            w.begin_object().key("name").value(name);
            count(c);
            w.end_object();
        }
        w.end_array().key("overall").begin_object();
        count(r.overall);
        w.end_object().end_object();
    }
    w.end_array().end_object();
    return w.str() + "\n";
}

}  // namespace mt::eval
