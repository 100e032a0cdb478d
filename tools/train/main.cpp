// megatron-train: Megatron-LM's pretrain_gpt.py in C++ (same flags, same data order, same
// schedule and log lines), on one CPU process or on the ranks of an mpirun/srun job with data,
// tensor and sequence parallelism and the distributed optimizer.
#include <array>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>

#include "mt/backend.h"
#include "mt/checkpoint.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/checkpoint/checkpoint_directory.h"
#include "mt/checkpoint/format_detection.h"
#include "mt/cli/flags.h"
#include "mt/cli/tool.h"
#include "mt/data/dataset_request.h"
#include "mt/data/sample_dataset.h"
#include "mt/error.h"
#include "mt/infer/model_loader.h"
#include "mt/model.h"
#include "mt/model_chunks.h"
#include "mt/nn/parameter.h"
#include "mt/parallel/parallel_state.h"
#include "mt/parallel/world.h"
#include "mt/registry.h"
#include "mt/tokenizer.h"
#include "mt/train/checkpoint_args.h"
#include "mt/train/checkpoint_io.h"
#include "mt/train/checkpointing.h"
#include "mt/train/training_flags.h"
#include "mt/train/training_run.h"

namespace {

std::atomic<bool> g_sigterm{false};
void on_sigterm(int) {
    g_sigterm = true;
}

// The datasets the family builds for the shared data flags, its own data flags and the sample
// counts the schedule needs.
mt::data::DatasetRequest dataset_request(const mt::train::TrainingFlags& f,
                                         const mt::Tokenizer& tokenizer, int64_t seq_length,
                                         const std::array<int64_t, 3>& sizes,
                                         const mt::ModelArgs& args) {
    mt::data::DatasetRequest r;
    mt::data::BlendedMegatronDatasetConfig& c = r.config;
    c.random_seed = static_cast<uint32_t>(f.seed);
    c.sequence_length = seq_length;
    if (!f.data_path.empty()) c.blend = mt::data::get_blend_from_list(f.data_path);
    const std::vector<std::string>* per_split[] = {&f.train_data_path, &f.valid_data_path,
                                                   &f.test_data_path};
    for (int s = 0; s < mt::data::kNumSplits; ++s) {
        if (!per_split[s]->empty())
            c.blend_per_split[s] = mt::data::get_blend_from_list(*per_split[s]);
        r.num_samples[s] = sizes[s];
    }
    c.split = f.split;
    c.path_to_cache = f.data_cache_path;
    c.tokenizer = tokenizer.dataset_identity();
    r.mock = f.mock_data;
    r.tokenizer = &tokenizer;
    r.args = args;
    r.cyclic_loader = f.dataloader_type == "cyclic";
    return r;
}

// Megatron prints its iteration lines and evaluations on the last rank (print_rank_last) and
// its setup messages on rank 0 (print_rank_0).
struct RankPrinter {
    bool last = true, first = true;
    void line(const std::string& text) const {
        if (!last) return;
        std::printf("%s\n", text.c_str());
        std::fflush(stdout);
    }
};

// Bytes this rank has sent through each process group (--log-rank-stats).
struct CommunicationVolume {
    static constexpr const char* kNames[] = {
        "tensor-parallel",   "data-parallel", "context-parallel", "data-context-parallel",
        "pipeline-parallel", "embedding",     "model-parallel",   "world"};
    std::array<int64_t, std::size(kNames)> bytes{};
    explicit CommunicationVolume(const mt::parallel::ParallelState& s) {
        const mt::Communicator* groups[] = {
            &s.tp(),   &s.dp(), &s.cp(), &s.dp_cp(), &s.pp(), s.embedding(), &s.model_parallel(),
            &s.world()};
        for (size_t i = 0; i < bytes.size(); ++i)
            bytes[i] = groups[i] ? groups[i]->bytes_sent() : 0;
    }
    void print_since(const CommunicationVolume& start, int64_t iterations, int rank) const {
        const double n = double(std::max<int64_t>(iterations, 1));
        std::string line = " > rank " + std::to_string(rank) + " bytes sent per iteration:";
        for (size_t i = 0; i < bytes.size(); ++i) {
            char value[64];
            std::snprintf(value, sizeof value, " %s %.0f", kNames[i],
                          double(bytes[i] - start.bytes[i]) / n);
            line += (i ? " |" : "") + std::string(value);
        }
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
    }
};

// The layout torch_dist keeps the distributed optimizer's state in (saved_distributed_layout),
// core_v0.19's dp_reshardable only where `format` can write it for the model's `params`: else
// its fully_reshardable, which core_v0.19 loads too (said on `first`).
mt::DistributedOptimizerLayout distributed_layout(const mt::train::TrainingFlags& flags,
                                                  const mt::train::ResumedOptimizer& resumed,
                                                  const mt::CheckpointFormat& format,
                                                  const mt::CheckpointArgs& args,
                                                  const std::vector<mt::ParameterInfo>& params,
                                                  bool first) {
    const mt::DistributedOptimizerLayout layout =
        mt::train::saved_distributed_layout(flags, resumed);
    if (layout != mt::DistributedOptimizerLayout::dp_reshardable ||
        !flags.data_parallel.distributed_optimizer)
        return layout;
    std::vector<std::string> names;
    for (const mt::ParameterInfo& p : params) names.push_back(p.name);
    const std::string refusal = format.distributed_layout_refusal(layout, args, names);
    if (refusal.empty()) return layout;
    if (first)
        std::printf(
            "the distributed optimizer's state is saved in core_v0.19's fully_reshardable "
            "layout, not its default dp_reshardable (%s)\n",
            refusal.substr(0, 300).c_str());
    return mt::DistributedOptimizerLayout::fully_reshardable;
}

int train(mt::train::TrainingFlags flags, const mt::cli::TokenizerFlags& tf,
          const mt::ModelFamily& family, mt::ModelArgs model_args,
          const std::vector<mt::FlagInfo>& model_flags, const mt::parallel::ParallelState& state) {
    mt::Communicator& world = state.world();
    const RankPrinter out{world.rank() == world.size() - 1, world.rank() == 0};
    if (!flags.kill_switch_file.empty() && std::filesystem::exists(flags.kill_switch_file)) {
        if (out.first)  // Megatron-DeepSpeed's pretrain(), before the model is built
            std::printf("Detected kill switch at %s. Exiting\n", flags.kill_switch_file.c_str());
        return 0;
    }
    // The format this run saves in (--save, or Megatron's --ckpt-convert-format), if any.
    const std::optional<std::string> saving = flags.ckpt_convert_format ? flags.ckpt_convert_format
                                              : flags.save
                                                  ? std::optional<std::string>(flags.ckpt_format)
                                                  : std::nullopt;
    // Megatron's torch files split an expert as the dense tensors, over the tensor ranks.
    MT_CHECK(!saving || *saving == "torch_dist" || state.expert_tp().size() == state.tp().size(),
             "not supported yet: --ckpt-format ", saving.value_or(""),
             " with --expert-tensor-parallel-size other than --tensor-model-parallel-size "
             "(torch_dist saves it)");
    std::unique_ptr<mt::CheckpointFormat> format;
    if (flags.save) format = mt::Registry::global().create_checkpoint(flags.ckpt_format);
    auto tokenizer = mt::Registry::global().create_tokenizer(tf.type, tf.options);
    if (out.first)
        std::printf("> building %s tokenizer (vocabulary %lld) ...\n", tf.type.c_str(),
                    static_cast<long long>(tokenizer->vocab_size()));
    model_args["vocab-size"] = std::to_string(tokenizer->vocab_size());
    // Megatron pads the vocabulary to a multiple of --make-vocab-size-divisible-by x tp.
    model_args["tensor-model-parallel-size"] = std::to_string(flags.parallel.tensor_parallel);
    // The family's derived values give the length (T5: --seq-length from --encoder-seq-length).
    const mt::ModelArgs resolved = family.resolved_args(model_args);
    MT_CHECK(resolved.count("seq-length"), "--seq-length is required for training");
    const int64_t seq_length = std::stoll(resolved.at("seq-length"));
    // Muon's QKV split (Megatron's _get_qkv_split_shapes): each query group's query, key and
    // value rows.
    if (resolved.count("num-attention-heads") && resolved.count("kv-channels")) {
        const int64_t heads = std::stoll(resolved.at("num-attention-heads"));
        const int64_t groups = resolved.count("num-query-groups")
                                   ? std::stoll(resolved.at("num-query-groups"))
                                   : heads;
        const int64_t kv = std::stoll(resolved.at("kv-channels"));
        if (heads > 0 && groups > 0 && heads % groups == 0)
            flags.optimizer_config.muon.qkv_split_shapes = {heads / groups * kv, kv, kv};
    }
    mt::train::settle_batch_sizes(flags, state.dp().size(), seq_length);
    // (Megatron-DeepSpeed truncates in pretrain_gpt.py; its other models take no curriculum.)
    MT_CHECK(!flags.deepspeed || !flags.deepspeed->curriculum || family.name() == "gpt",
             flags.deepspeed_config_path,
             ": not supported yet: the seqlen curriculum for a model other than GPT (--model ",
             std::string(family.name()), ")");

    auto backend = mt::make_cpu_backend();
    const mt::BuildContext context{*backend, state, flags.sequence_parallel, flags.params_dtype};
    auto model = mt::build_stage_model(family, model_args, context);
    model->initialize(static_cast<uint64_t>(flags.seed));
    int64_t num_params = 0;
    for (auto* p : model->parameters()) num_params += p->value.numel();
    if (state.dp().rank() == 0)  // as Megatron: each model-parallel rank reports its part
        std::printf(
            " > number of parameters on (tensor, pipeline) model parallel rank (%d, %d): %lld\n",
            state.tp().rank(), state.pp().rank(), static_cast<long long>(num_params));

    auto options = mt::train::trainer_options(flags);
    auto sizes = mt::data::train_valid_test_num_samples(
        flags.schedule.train_samples, options.train_iters, options.global_batch_size,
        options.eval_interval, options.eval_iters, options.eval_global_batch_size);
    // Rank 0 builds the sample-index caches first; the others then read them.
    mt::ModelArgs data_args = model_args;
    data_args.insert(flags.data_args.begin(), flags.data_args.end());
    const auto request = dataset_request(flags, *tokenizer, seq_length, sizes, data_args);
    std::array<std::shared_ptr<mt::data::SampleDataset>, 3> datasets;
    if (world.rank() == 0) datasets = family.datasets(request);
    world.barrier();
    if (world.rank() != 0) datasets = family.datasets(request);
    MT_CHECK(datasets[0], "the split gives no training data");
    const auto* valid = options.eval_iters > 0 ? datasets[1].get() : nullptr;
    const auto* test = options.eval_iters > 0 ? datasets[2].get() : nullptr;

    bool has_experts = false;
    for (const mt::nn::Parameter* p : model->parameters()) has_experts = has_experts || p->expert;
    // Megatron's checks in arguments.py.
    MT_CHECK(state.ep().size() == 1 || has_experts, "--expert-model-parallel-size ",
             state.ep().size(), " needs a MoE model (--num-experts)");
    // (Megatron-DeepSpeed's MoE layers allow it: the loss scaler skips a step where any rank's
    // gradients overflow, its experts' included.)
    MT_CHECK(state.ep().size() == 1 || flags.params_dtype != mt::DType::f16 || flags.deepspeed,
             "expert parallelism is not supported with --fp16 (Megatron refuses it too)");
    mt::train::TrainingRun run(
        *model, *backend, state, flags, mt::train::schedule_config(flags), options,
        [out](const std::string& line) { out.line(line); }, out.last);
    mt::train::Trainer& trainer = run.trainer();
    if (flags.exit_signal_handler) {
        trainer.set_stop_flag(&g_sigterm);
    } else {
        // No handler asked for: SIGTERM kills, as it does Megatron (one that came during setup
        // now).
        std::signal(SIGTERM, SIG_DFL);
        if (g_sigterm) std::raise(SIGTERM);
    }

    const mt::train::TrainingParts parts = run.parts();
    std::vector<mt::ParameterInfo> whole_params;
    for (const mt::nn::Parameter* p : mt::state_tensors(*model))
        whole_params.push_back(mt::nn::describe(*p));
    // The whole model's parameters: a stage reads the other stages' part of a split checkpoint,
    // and saves cut every stage's and expert-parallel rank's tensors by them.
    const std::vector<mt::ParameterInfo> model_params =
        flags.load || saving ? family.parameters(model_args) : std::vector<mt::ParameterInfo>();
    mt::train::ResumedOptimizer resumed;
    if (flags.load) {
        if (!mt::train::load_checkpoint(flags, parts, whole_params, &model_params, &resumed) &&
            flags.exit_on_missing_checkpoint) {
            out.line(">> '--exit-on-missing-checkpoint' set ... exiting. <<");
            return 0;
        }
    }
    // The args Namespace is the same at every save.
    mt::train::CaptureOptions capture_options;
    capture_options.optimizer = !flags.no_save_optim;
    capture_options.rng = !flags.no_save_rng;
    capture_options.args =
        mt::train::checkpoint_args(flags, tf, model_flags, family.resolved_args(model_args), state);
    capture_options.core_v0_19 = mt::train::saves_for_core_v0_19(flags, resumed);
    if (saving)
        capture_options.distributed_layout = distributed_layout(
            flags, resumed, *mt::Registry::global().create_checkpoint(*saving),
            capture_options.args, model_params, out.first);
    if (flags.ckpt_convert_format) {  // Megatron's conversion: save in the other format, stop
        auto to = mt::Registry::global().create_checkpoint(*flags.ckpt_convert_format);
        mt::train::TrainingFlags convert = flags;
        convert.save =
            (std::filesystem::path(*flags.ckpt_convert_save) / *flags.ckpt_convert_format).string();
        convert.ckpt_format = *flags.ckpt_convert_format;
        mt::train::save_checkpoint(convert, *to, parts, capture_options, model_params);
        if (out.first)
            std::printf("> converted checkpoint: %s -> %s.\n", flags.load->c_str(),
                        convert.save->c_str());
        return 0;
    }
    auto save = [&] {
        mt::train::save_checkpoint(flags, *format, parts, capture_options, model_params);
    };
    if (flags.save) trainer.set_saver(save);

    const CommunicationVolume before(state);
    const int64_t first_iteration = trainer.iteration();
    if (flags.skip_train) out.line("skipping training (--skip-train is on) ...");
    auto reason =
        flags.skip_train ? mt::train::StopReason::finished : trainer.train(*datasets[0], valid);
    if (flags.log_rank_stats) {
        CommunicationVolume(state).print_since(before, trainer.iteration() - first_iteration,
                                               world.rank());
        int64_t bytes = 0;
        for (auto* list : {&run.optimizer().first(), &run.optimizer().second()})
            for (const mt::Tensor& t : *list)
                if (t.defined()) bytes += t.nbytes();
        std::printf(" > rank %d optimizer state: %lld bytes\n", world.rank(),
                    static_cast<long long>(bytes));
        std::fflush(stdout);
    }
    switch (reason) {
        case mt::train::StopReason::signal:
            if (out.first) std::printf("exiting program after receiving SIGTERM.\n");
            return 0;
        case mt::train::StopReason::kill_switch:  // Megatron-DeepSpeed's message
            if (out.first)
                std::printf("Detected kill switch at %s, iteration=%lld. Exiting\n",
                            flags.kill_switch_file.c_str(),
                            static_cast<long long>(trainer.iteration()));
            return 0;
        case mt::train::StopReason::exit_interval:
            if (out.first)
                std::printf("exiting program at iteration %lld\n",
                            static_cast<long long>(trainer.iteration()));
            return 0;
        case mt::train::StopReason::exit_duration:
            if (out.first)
                std::printf("exiting program after %g minutes\n", *flags.exit_duration_in_mins);
            return 0;
        case mt::train::StopReason::result_validation:  // Megatron's sys.exit(exit_code)
            return trainer.exit_code();
        case mt::train::StopReason::finished:
            break;
    }
    if (flags.save && !flags.skip_train && trainer.iteration() != 0 &&
        (!flags.save_interval || trainer.iteration() % *flags.save_interval != 0))
        save();
    const std::string it = "iteration " + std::to_string(trainer.iteration());
    if (valid) {
        int64_t consumed = trainer.consumed_valid_samples();
        trainer.print_evaluation(it + " on validation set", trainer.evaluate(*valid, consumed),
                                 false);
    }
    if (test) {
        int64_t consumed = 0;
        trainer.print_evaluation(it + " on test set", trainer.evaluate(*test, consumed), false);
    }
    return 0;
}

// A run resuming a core_v0.19 checkpoint builds its tokenizer with core_v0.19's classes, as
// Megatron core_v0.19 itself does (NullTokenizer's vocabulary, the identities in dataset cache
// keys), unless --tokenizer-classes says otherwise; anything the --load directory lacks is left
// to the load to report.
void take_checkpoint_tokenizer_classes(const std::filesystem::path& dir,
                                       mt::cli::TokenizerFlags& tf) {
    if (!std::filesystem::exists(mt::checkpoint_tracker(dir))) return;
    try {
        const mt::CheckpointArgs saved =
            mt::detect_checkpoint_format(mt::Registry::global(), dir)->load_args(dir);
        if (mt::core_v0_19_tokenizer_args(saved))
            tf.options.classes = mt::TokenizerOptions::Classes::core_v0_19;
    } catch (const mt::Error&) {
    }
}

// Megatron's --use-checkpoint-args (load_args_from_checkpoint): the model args of the --load
// checkpoint where Megatron takes them, and its tokenizer where the flags name none (Megatron
// takes the type and --tokenizer-model, not the vocabulary files). Without a checkpoint there,
// the flags' own, as Megatron goes on with them.
void take_checkpoint_args(const boost::program_options::variables_map& vm,
                          const mt::train::TrainingFlags& flags, const mt::ModelFamily& family,
                          const std::vector<mt::FlagInfo>& model_flags, mt::ModelArgs& model_args,
                          mt::cli::TokenizerFlags& tf) {
    MT_CHECK(flags.load, "--use-checkpoint-args needs --load");
    const std::filesystem::path dir = *flags.load;
    if (!std::filesystem::exists(mt::checkpoint_tracker(dir))) {
        std::printf("Checkpoint not found to provide arguments, using provided arguments.\n");
        return;
    }
    const mt::CheckpointArgs saved =
        mt::detect_checkpoint_format(mt::Registry::global(), dir)->load_args(dir);
    model_args = mt::load_args_from_checkpoint(model_args, saved, model_flags);
    if (vm["tokenizer-type"].defaulted()) {
        mt::infer::TokenizerChoice choice =
            mt::infer::tokenizer_choice("", tf.options, dir, saved, family.default_tokenizer_type(),
                                        tf.model_from_checkpoint_args);
        tf.type = std::move(choice.type);
        tf.options = std::move(choice.options);
    }
}

// The ranks of this job split as the flags say, then train(). An error on one rank stops every
// rank (MPI_Abort) with the message and the rank, instead of leaving the others waiting.
int train_on_ranks(const mt::train::TrainingFlags& flags, const mt::cli::TokenizerFlags& tf,
                   const mt::ModelFamily& family, const mt::ModelArgs& model_args,
                   const std::vector<mt::FlagInfo>& model_flags) {
    auto state = std::make_unique<mt::parallel::ParallelState>(
        mt::parallel::make_world_communicator(mt::Registry::global(), "cpu"),
        mt::train::parallel_config(flags, model_args));
    int status = 0;
    mt::parallel::run_on_ranks(state->world(), [&] {
        status = train(flags, tf, family, model_args, model_flags, *state);
    });
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    // Caught from the start: a SIGTERM during setup (flags, plugins, datasets, the model) is
    // kept for --exit-signal-handler's first iteration boundary instead of killing the run;
    // without that flag the default action is restored and taken once setup knows.
    std::signal(SIGTERM, on_sigterm);
    mt::train::TrainingFlags flags;
    mt::cli::TokenizerFlags tokenizer;
    std::vector<mt::FlagInfo> data_flags;  // the family's (spec.run reads them after parsing)
    return mt::cli::run_model_tool(
        argc, argv, "gpt", [&](const mt::ModelFamily& family, mt::cli::ToolSpec& spec) {
            spec.name = "megatron-train";
            spec.megatron_args = mt::cli::MegatronTool::training;  // docs/flags.md
            spec.description =
                "Pretrains a model on Megatron indexed datasets, as Megatron-LM's pretrain_gpt.py\n"
                "does: same flags, same sample order, learning-rate schedule and log lines. One "
                "CPU\n"
                "process, or the ranks of mpirun/srun (data, tensor and sequence parallelism).";
            for (auto& group : mt::train::training_flag_groups(flags)) spec.options.add(group);
            spec.options.add(mt::cli::model_flags(family));
            data_flags = family.data_flags();
            if (!data_flags.empty())
                spec.options.add(
                    mt::cli::model_flags("Data (" + std::string(family.name()) + ")", data_flags));
            // The pretraining script's args_defaults (pretrain_gpt.py: GPT2BPETokenizer).
            spec.options.add(
                mt::cli::tokenizer_flags(tokenizer, true, family.default_tokenizer_type()));
            spec.options.add(mt::cli::checkpoint_tokenizer_flags(tokenizer));
            spec.run = [&](const boost::program_options::variables_map& vm) {
                mt::train::finish(vm, flags);
                mt::cli::finish_tokenizer_flags(vm, tokenizer);
                if (flags.load && !vm.count("tokenizer-classes"))
                    take_checkpoint_tokenizer_classes(*flags.load, tokenizer);
                flags.data_args = mt::cli::collect_model_args(vm, data_flags);
                const auto model_flags = family.flags();
                mt::ModelArgs model_args = mt::cli::collect_model_args(vm, model_flags);
                mt::train::apply_deepspeed_model_args(flags, model_args);
                if (vm["use-checkpoint-args"].as<bool>())
                    take_checkpoint_args(vm, flags, family, model_flags, model_args, tokenizer);
                return train_on_ranks(flags, tokenizer, family, model_args, model_flags);
            };
        });
}
