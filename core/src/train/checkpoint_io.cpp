#include "mt/train/checkpoint_io.h"

#include <cstdio>
#include <filesystem>
#include <set>

#include "mt/checkpoint/checkpoint_directory.h"
#include "mt/checkpoint/format_detection.h"
#include "mt/checkpoint/model_weights.h"
#include "mt/checkpoint/reshard.h"
#include "mt/error.h"
#include "mt/nn/parameter.h"
#include "mt/parallel/grad_buffer.h"
#include "mt/parallel/parallel_state.h"
#include "mt/registry.h"
#include "mt/train/log_lines.h"

namespace mt::train {

namespace {

// The run's groups (megatron-train always gives them, one process included).
const parallel::ParallelState& groups(const train::TrainingParts& parts) {
    MT_CHECK(parts.parallel, "megatron-train's checkpoints need the run's process groups");
    return *parts.parallel;
}

// Stage `pp`'s state in the whole model's names, its tensor-parallel pieces joined; the last
// stage's copy of tied word embeddings (no parameter of `params`) is left out.
CheckpointState read_stage(CheckpointFormat& format, const std::filesystem::path& dir,
                           const CheckpointLayout& layout, int64_t pp,
                           const std::vector<ParameterInfo>& params) {
    std::set<std::string> names;
    for (const ParameterInfo& p : params) names.insert(p.name);
    std::vector<CheckpointState> pieces;
    for (int64_t tp = 0; tp < layout.tensor_parallel; ++tp) {
        CheckpointState piece = format.load_rank(dir, tp, pp);
        if (layout.pipeline_parallel > 1)
            name_for_whole_model(piece, pipeline_split_of(piece.args, layout.pipeline_parallel),
                                 int(pp));
        const auto known = [&](const std::string& name) {
            return names.count(name) || names.count(other_impl_name(name)) ||
                   name.ends_with("._extra_state");
        };
        std::erase_if(piece.model, [&](const auto& entry) { return !known(entry.first); });
        if (piece.optimizer)
            std::erase_if(piece.optimizer->params,
                          [&](const OptimizerParamState& p) { return !known(p.name); });
        pieces.push_back(std::move(piece));
    }
    std::set<std::string> present;
    for (const auto& [name, tensor] : pieces[0].model) present.insert(name);
    std::vector<ParameterInfo> held;
    for (const ParameterInfo& p : params)
        if (present.count(p.name) || present.count(other_impl_name(p.name))) held.push_back(p);
    return join_tensor_parallel(pieces, held);
}

// The latest checkpoint of `dir` as whole tensors, whatever tensor and pipeline layout saved it
// (the stages' tensors and optimizer states put together in stage order).
CheckpointState read_whole(CheckpointFormat& format, const std::filesystem::path& dir,
                           const std::vector<ParameterInfo>& params) {
    const CheckpointLayout layout = format.layout(dir);
    if (layout.ranks() == 1) return format.load(dir);
    CheckpointState whole = read_stage(format, dir, layout, 0, params);
    for (int64_t pp = 1; pp < layout.pipeline_parallel; ++pp) {
        CheckpointState stage = read_stage(format, dir, layout, pp, params);
        for (auto& entry : stage.model) whole.model.push_back(std::move(entry));
        MT_CHECK(bool(stage.optimizer) == bool(whole.optimizer), dir.string(), ": pipeline stage ",
                 pp, stage.optimizer ? " has" : " has no", " optimizer state, stage 0 the reverse");
        if (whole.optimizer)
            for (auto& p : stage.optimizer->params) whole.optimizer->params.push_back(std::move(p));
    }
    return whole;
}

// --save-retain-interval: the checkpoint saved before `iteration` goes unless its iteration is a
// multiple of `retain` (Megatron's iter_finalize_fn; a symbolic link stays, and a failed delete
// is only reported).
void delete_unretained(const std::filesystem::path& dir,
                       const std::optional<LatestCheckpoint>& previous, int64_t iteration,
                       int64_t retain) {
    if (!previous || previous->release || previous->iteration == iteration ||
        previous->iteration % retain == 0)
        return;
    const std::filesystem::path old = iteration_dir(dir, *previous);
    const long long number = static_cast<long long>(previous->iteration);
    if (std::filesystem::is_symlink(old)) {
        std::printf(
            "  skipping deleting checkpoint from iteration %7lld at %s since it is a "
            "symbolic link\n",
            number, dir.string().c_str());
        return;
    }
    std::error_code failed;
    std::filesystem::remove_all(old, failed);
    if (failed)
        std::printf(
            "  encountered exception \"%s\" when trying to delete checkpoint from "
            "iteration %7lld at %s\n",
            failed.message().c_str(), number, dir.string().c_str());
    else
        std::printf("  successfully deleted checkpoint from iteration %7lld at %s\n", number,
                    dir.string().c_str());
}

}  // namespace

CheckpointState read_model_tensors(const std::filesystem::path& dir,
                                   const std::vector<ParameterInfo>& params) {
    auto format = detect_checkpoint_format(Registry::global(), dir);
    std::set<std::string> names;
    for (const ParameterInfo& p : params) {
        names.insert(p.name);
        names.insert(other_impl_name(p.name));
    }
    CheckpointState state = read_whole(*format, dir, params);
    std::erase_if(state.model, [&](const auto& entry) { return !names.count(entry.first); });
    state.optimizer.reset();
    return state;
}

bool load_checkpoint(const TrainingFlags& flags, const train::TrainingParts& parts,
                     const std::vector<ParameterInfo>& params,
                     const std::vector<ParameterInfo>* model_params,
                     ResumedOptimizer* resumed) {
    const parallel::ParallelState& run = groups(parts);
    const bool first = run.world().rank() == 0;
    const std::filesystem::path dir = *flags.load;
    const std::filesystem::path tracker = checkpoint_tracker(dir);
    // Megatron reads whichever format the directory holds, whatever --ckpt-format says; without
    // its tracker file, only a format of Megatron's own training loops that finds its own
    // (Megatron-DeepSpeed's `latest`, or a DeepSpeed tag folder) is a checkpoint to resume.
    const bool has_tracker = std::filesystem::exists(tracker);
    std::unique_ptr<CheckpointFormat> format;
    try {
        format = detect_checkpoint_format(Registry::global(), dir);
    } catch (const Error&) {
        if (has_tracker) throw;
    }
    if (!has_tracker && format &&
        format->detection_order() == CheckpointFormat::DetectionOrder::other)
        format.reset();
    if (!format) {
        if (first) {
            std::printf("WARNING: could not find the metadata file %s\n", tracker.string().c_str());
            if (!flags.exit_on_missing_checkpoint)
                std::printf("    will not load any checkpoints and will start from random\n");
        }
        return false;
    }
    if (!format->set_verify_integrity(flags.verify_integrity) && first)
        std::printf(
            "WARNING: --verify-integrity checks torch_dist checkpoints only: %s holds a %s "
            "checkpoint, loaded unchecked\n",
            dir.string().c_str(), std::string(format->name()).c_str());
    // This stage's parameters (a last stage's copy of tied word embeddings among them) and the
    // whole model's.
    std::vector<ParameterInfo> readable = params;
    if (model_params) {
        std::set<std::string> mine;
        for (const ParameterInfo& p : params) mine.insert(p.name);
        for (const ParameterInfo& p : *model_params)
            if (!mine.count(p.name)) readable.push_back(p);
    }
    // Megatron's torch files split an expert over the expert tensor-parallel ranks, which these
    // are joined over only when they are the tensor-parallel ones.
    MT_CHECK(!format->per_rank_files() || run.expert_tp().size() == run.tp().size(),
             "not supported yet: loading ", format->name(),
             " checkpoints with "
             "--expert-tensor-parallel-size other than --tensor-model-parallel-size (torch_dist "
             "ones load)");
    CheckpointState state = read_whole(*format, dir, readable);
    // A stage keeps its layers, an expert-parallel rank its experts.
    if (run.pp().size() > 1 || run.ep().size() > 1) keep_model_tensors(state, parts.model);
    if (first)
        std::printf(" loading checkpoint from %s at iteration %lld\n", flags.load->c_str(),
                    static_cast<long long>(state.iteration));
    train::RestoreOptions o;
    o.finetune = flags.finetune;
    o.schedule = flags.schedule_settings;
    o.optimizer = !flags.no_load_optim;
    o.rng = !flags.no_load_rng;
    train::restore_checkpoint(state, parts, o);
    if (resumed && state.optimizer) {
        resumed->layout = state.optimizer->layout;
        resumed->core_v0_19 = state.optimizer->core_v0_19;
    }
    run.world().barrier();
    if (first)
        std::printf(
            "  successfully loaded checkpoint from %s [ t %d/%d, p %d/%d ] at iteration %lld\n",
            flags.load->c_str(), run.tp().rank() + 1, run.tp().size(), run.pp().rank() + 1,
            run.pp().size(), static_cast<long long>(parts.trainer.iteration()));
    std::fflush(stdout);
    return true;
}

bool saves_for_core_v0_19(const TrainingFlags& flags, const ResumedOptimizer& resumed) {
    return resumed.core_v0_19 || !flags.core_v0_19_flag.empty();
}

DistributedOptimizerLayout saved_distributed_layout(const TrainingFlags& flags,
                                                    const ResumedOptimizer& resumed) {
    using Layout = DistributedOptimizerLayout;
    if (flags.dist_ckpt_optim_fully_reshardable) return Layout::fully_reshardable;
    if (saves_for_core_v0_19(flags, resumed)) return Layout::dp_reshardable;
    return Layout::fully_sharded_model_space;
}

void save_checkpoint(const TrainingFlags& flags, CheckpointFormat& format,
                     const train::TrainingParts& parts, const train::CaptureOptions& options,
                     const std::vector<ParameterInfo>& params) {
    Communicator& all = groups(parts).world();
    const int64_t tp = groups(parts).tp().size();
    // Megatron's torch files: one per expert-parallel rank beside the tensor and pipeline ones.
    const int64_t ep = groups(parts).ep().size();
    const bool first = all.rank() == 0;
    const int64_t iteration = parts.trainer.iteration();
    // The checkpoint this save makes the previous one (read before the tracker moves on).
    const std::optional<LatestCheckpoint> previous =
        first && flags.save_retain_interval ? read_tracker(*flags.save) : std::nullopt;
    if (first) {
        std::printf("saving checkpoint at iteration %7lld to %s in %s format\n",
                    static_cast<long long>(iteration), flags.save->c_str(),
                    flags.ckpt_format.c_str());
        std::fflush(stdout);
    }
    MT_CHECK(format.set_verify_integrity(flags.verify_integrity), "--verify-integrity: the ",
             format.name(), " format writes no integrity manifest (torch_dist does)");
    if (format.saves_collectively()) {
        // Megatron's sharded save: every rank writes what it holds, nothing gathered.
        train::CaptureOptions own = options;
        own.own_share = true;
        format.save_collective(*flags.save, train::capture_checkpoint(parts, own), all);
    } else if (groups(parts).pp().size() > 1) {
        // Megatron's torch files from pipeline stages: each stage's first rank writes its
        // mp_rank_TT_PPP files, its layers numbered from 0 in each model chunk, the last stage
        // with its copy of tied word embeddings.
        const parallel::ParallelState& run = groups(parts);
        train::CaptureOptions staged = options;
        staged.stage_copies = true;
        const CheckpointState state = train::capture_checkpoint(parts, staged);
        const int stage = run.pp().rank();
        const bool writer = run.tp().rank() == 0 && run.dp().rank() == 0 && run.cp().rank() == 0;
        const parallel::PipelineSplit split = pipeline_split_of(state.args, run.pp().size());
        // The last stage's copy of tied word embeddings (output_layer.weight) is no parameter of
        // the one-process model: each tensor-parallel rank's file holds its rows of it, as the
        // stage's own parameter describes them.
        std::vector<ParameterInfo> cut_by = params;
        for (const nn::Parameter* p : parts.model.parameters())
            if (!p->copy_of.empty()) cut_by.push_back(nn::describe(*p));
        format.save_stage(
            *flags.save, CheckpointLayout{tp, run.pp().size(), ep}, stage, writer,
            [&](int64_t rank) {
                CheckpointState piece = tensor_parallel_piece(state, cut_by, tp, rank);
                name_for_stage(piece, split, stage);
                return piece;
            },
            all);
    } else {
        const CheckpointState state = train::capture_checkpoint(parts, options);
        if (first) {
            if (format.per_rank_files() && (tp > 1 || ep > 1))
                format.save_ranks(*flags.save, CheckpointLayout{tp, 1, ep},
                                  [&](int64_t rank, int64_t) {
                                      return tensor_parallel_piece(state, params, tp, rank);
                                  });
            else
                format.save(*flags.save, state);
        }
    }
    // Nobody goes on (or loads) before the checkpoint is complete.
    all.barrier();
    if (first) {
        std::printf("%s\n", train::format_saved_checkpoint(iteration, *flags.save, 0, int(tp), 0,
                                                           groups(parts).pp().size())
                                .c_str());
        if (flags.save_retain_interval)
            delete_unretained(*flags.save, previous, iteration, *flags.save_retain_interval);
        std::fflush(stdout);
    }
}

}  // namespace mt::train
