#include "mt/checkpoint/convert.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "mt/checkpoint/checkpoint_args.h"
#include "mt/checkpoint/file_maps.h"
#include "mt/checkpoint/reshard.h"
#include "mt/error.h"
#include "mt/progress.h"

namespace mt {

namespace {

std::string layout_str(const CheckpointLayout& l) {
    return "tensor parallel " + std::to_string(l.tensor_parallel) + ", pipeline parallel " +
           std::to_string(l.pipeline_parallel) +
           (l.expert_parallel > 1 ? ", expert parallel " + std::to_string(l.expert_parallel)
                                  : std::string());
}

// One thread that makes the next target tensor while the saver writes the current one, for the
// whole conversion: a thread per tensor (std::async) spreads the allocations over as many malloc
// arenas, which keep what is freed (1.9 GB of resident memory instead of 0.5 for a DeepSeek-V3-
// shaped model's bf16 conversion).
template <class Made>
class Prefetcher {
  public:
    explicit Prefetcher(std::function<Made(size_t)> make)
        : make_(std::move(make)), thread_([this] { loop(); }) {}
    ~Prefetcher() {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }
    // Starts making tensor j; one still being made, or made and not taken, is let go first.
    void start(size_t j) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return !job_; });
            job_ = j;
            result_.reset();
            error_ = nullptr;
        }
        wake_.notify_all();
    }
    // The tensor started last, once made (its error rethrown).
    Made take() {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return !job_ && (result_ || error_); });
        if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
        Made m = std::move(*result_);
        result_.reset();
        return m;
    }

  private:
    void loop() {
        std::unique_lock lock(mutex_);
        for (;;) {
            wake_.wait(lock, [&] { return stop_ || job_; });
            if (stop_) return;
            const size_t j = *job_;
            lock.unlock();
            std::optional<Made> made;
            std::exception_ptr error;
            try {
                made = make_(j);
            } catch (...) {
                error = std::current_exception();
            }
            lock.lock();
            job_.reset();
            result_ = std::move(made);
            error_ = error;
            wake_.notify_all();
        }
    }

    std::function<Made(size_t)> make_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::optional<size_t> job_;
    std::optional<Made> result_;
    std::exception_ptr error_;
    bool stop_ = false;
    std::thread thread_;  // last: started once the rest is ready
};

}  // namespace

Tensor SourceCheckpoint::piece(size_t i, size_t rank) const {
    MT_CHECK(i < pieces.size() && rank < pieces[i].size(), "no piece ", rank, " of parameter ", i,
             " in a checkpoint of ", pieces.size());
    return make_piece(pieces[i][rank]);
}

Tensor SourceCheckpoint::whole(size_t i) const {
    MT_CHECK(i < params.size(), "no parameter ", i, " in a checkpoint of ", params.size());
    std::vector<Tensor> made;
    for (size_t r = 0; r < pieces[i].size(); ++r) made.push_back(piece(i, r));
    return unshard_tensor(made, params[i].shard);
}

SourceCheckpoint load_source_checkpoint(CheckpointFormat& loader, const std::filesystem::path& dir,
                                        const ModelFamily& family, bool progress) {
    // ---- load every rank (tensors view the files) ----
    SourceCheckpoint w;
    w.layout = loader.layout(dir);
    const CheckpointLayout& source = w.layout;
    std::vector<std::vector<NamedTensors>> ranks(size_t(source.pipeline_parallel));
    // A streamed load's placeholders by storage: its make and the tensor's index.
    struct Lazy {
        std::shared_ptr<const std::function<Tensor(size_t)>> make;
        size_t index = 0;
    };
    auto lazy = std::make_shared<std::map<const Storage*, Lazy>>();
    {
        Progress bar("loading", source.ranks(), "ranks", progress && ::isatty(STDERR_FILENO) == 1);
        for (int64_t pp = 0; pp < source.pipeline_parallel; ++pp)
            for (int64_t tp = 0; tp < source.tensor_parallel; ++tp) {
                CheckpointState s;
                if (!loader.per_rank_files() && source.ranks() == 1) {
                    StreamedState streamed = loader.load_streamed(dir);
                    auto make = std::make_shared<const std::function<Tensor(size_t)>>(
                        std::move(streamed.make));
                    for (size_t i = 0; i < streamed.state.model.size(); ++i) {
                        const Tensor& t = streamed.state.model[i].second.local;
                        if (t.defined() && t.storage() && !t.storage()->data)
                            (*lazy)[t.storage().get()] = Lazy{make, i};
                    }
                    s = std::move(streamed.state);
                } else {
                    s = loader.load_rank(dir, tp, pp);
                }
                ranks[size_t(pp)].push_back(model_tensors(s));
                if (tp == 0 && pp == 0) {
                    s.model.clear();
                    s.optimizer.reset();
                    w.head = std::move(s);
                }
                bar.add(1);
            }
        bar.finish();
    }

    // ---- the model the source's args describe, as pieces of whole tensors ----
    w.args = model_args_from_checkpoint(w.head.args, family.flags());
    if (bool_arg(w.head.args, "use_legacy_models")) w.args["transformer-impl"] = "local";
    if (!w.args.count("padded-vocab-size"))
        for (const auto& [name, t] : ranks[0][0])
            if (name == "embedding.word_embeddings.weight")
                w.args["padded-vocab-size"] = std::to_string(t.shape()[0] * source.tensor_parallel);
    w.args["tensor-model-parallel-size"] = "1";
    w.params = family.parameters(w.args);
    // Pipeline stages: their layers as the args say they were split (uneven, virtual stages).
    std::optional<parallel::PipelineSplit> split;
    if (source.pipeline_parallel > 1 && int_arg(w.head.args, "num_layers"))
        split = pipeline_split_of(w.head.args, source.pipeline_parallel);
    // The pieces keep their storages (and the files' maps) alive.
    w.pieces = parameter_pieces(
        w.params, source,
        [&](int64_t tp, int64_t pp) -> const NamedTensors& {
            return ranks[size_t(pp)][size_t(tp)];
        },
        split ? &*split : nullptr);
    if (!lazy->empty())
        w.make_piece = [lazy](const Tensor& p) -> Tensor {
            if (!p.defined() || !p.storage() || p.storage()->data) return p;
            auto it = lazy->find(p.storage().get());
            if (it == lazy->end()) return p;
            Tensor t = (*it->second.make)(it->second.index);
            MT_CHECK(t.shape() == p.shape() && t.dtype() == p.dtype(), "the loader made ",
                     t.describe(), " for a tensor it announced as ", p.describe());
            return t;
        };
    return w;
}

void convert_checkpoint(CheckpointFormat& loader, const std::filesystem::path& load_dir,
                        CheckpointFormat& saver, const std::filesystem::path& save_dir,
                        const ModelFamily& family, const ConvertOptions& o) {
    const FileMaps before;
    const SourceCheckpoint src = load_source_checkpoint(loader, load_dir, family, o.progress);
    o.log("loaded a " + std::string(loader.name()) + " checkpoint (" + layout_str(src.layout) +
          ") from " + load_dir.string());
    const CheckpointLayout& source = src.layout;
    const CheckpointState& head = src.head;
    const ModelArgs& args = src.args;
    const std::vector<ParameterInfo>& params = src.params;
    // Loading read (checksummed) the files: let their pages go until each tensor is written.
    // The source's maps are those opened while loading.
    const FileMaps maps(&before);
    maps.release_all();

    // ---- the target model ----
    // By default the layout the source was trained with (its args; a whole-tensor format's
    // files do not show it).
    CheckpointLayout target{
        o.target_tensor_parallel > 0
            ? o.target_tensor_parallel
            : int_arg(head.args, "tensor_model_parallel_size").value_or(source.tensor_parallel),
        o.target_pipeline_parallel > 0 ? o.target_pipeline_parallel
                                       : int_arg(head.args, "pipeline_model_parallel_size")
                                             .value_or(source.pipeline_parallel)};
    target.expert_parallel =
        o.target_expert_parallel > 0
            ? o.target_expert_parallel
            : int_arg(head.args, "expert_model_parallel_size").value_or(source.expert_parallel);
    // Sizes read from a file are checked like flags before anything divides by them.
    MT_CHECK(target.expert_parallel > 0, "the target expert-parallel size ", target.expert_parallel,
             " must be positive");
    if (target.expert_parallel > 1) {
        const int64_t experts = int_arg(head.args, "num_experts").value_or(0);
        MT_CHECK(experts > 0 && experts % target.expert_parallel == 0,
                 "--target-expert-parallel-size ", target.expert_parallel,
                 ": the model's experts (num_experts ", experts, ") must split evenly over it");
    }
    MT_CHECK(target.tensor_parallel > 0 && target.pipeline_parallel > 0,
             "the target layout tensor parallel ", target.tensor_parallel, " x pipeline parallel ",
             target.pipeline_parallel, " (from ",
             o.target_tensor_parallel > 0 ? "the flags"
                                          : "the checkpoint's args in " + load_dir.string(),
             ") must be positive");
    ModelArgs target_args = args;
    if (o.legacy) target_args["transformer-impl"] = "local";
    if (o.transformer_impl) target_args["transformer-impl"] = *o.transformer_impl;
    target_args["tensor-model-parallel-size"] = std::to_string(target.tensor_parallel);
    if (o.make_vocab_size_divisible_by)
        target_args["make-vocab-size-divisible-by"] =
            std::to_string(*o.make_vocab_size_divisible_by);
    if (o.true_vocab_size) {
        ModelArgs sizing = target_args;
        sizing.erase("padded-vocab-size");
        sizing["vocab-size"] = std::to_string(*o.true_vocab_size);
        target_args["padded-vocab-size"] = family.resolved_args(sizing).at("padded-vocab-size");
        target_args["vocab-size"] = std::to_string(*o.true_vocab_size);
    } else {
        o.log("warning: no --true-vocab-size or --vocab-file: the vocabulary table keeps its " +
              args.at("padded-vocab-size") + " rows");
    }
    const int64_t target_vocab = std::stoll(target_args.at("padded-vocab-size"));
    const std::vector<ParameterInfo> target_params = family.parameters(target_args);
    std::map<std::string, size_t> by_name;
    for (size_t i = 0; i < params.size(); ++i) by_name[params[i].name] = i;
    // Each target tensor's source and dtype, checked before anything is written.
    std::vector<size_t> source_of;
    std::vector<DType> dtype_of;
    for (const ParameterInfo& p : target_params) {
        auto it = by_name.find(p.name);
        if (it == by_name.end()) it = by_name.find(other_impl_name(p.name));
        MT_CHECK(it != by_name.end(), "the target model has '", p.name,
                 "', which the source model does not");
        Shape shape = params[it->second].shape;
        if (p.shard.kind == ShardSpec::Kind::vocab) shape[0] = target_vocab;
        MT_CHECK(shape == p.shape, "'", p.name, "' has shape ", shape_str(shape),
                 " but the target model needs ", shape_str(p.shape));
        source_of.push_back(it->second);
        dtype_of.push_back(o.dtype.value_or(src.pieces[it->second][0].dtype()));
    }

    // The target tensors, made one at a time as the saver asks for them: the last one made is
    // kept with its pieces for every target rank (each rank takes its piece in turn), and when
    // the saver moves on, the source's pages (those it viewed, and those a streamed loader read
    // to make it) are let go. While the saver writes one tensor, the next one it will likely
    // ask for is made on another thread (predicted from the order of its requests), so that
    // making (joining, converting, slicing) overlaps writing; at most three are held.
    const bool per_rank = saver.per_rank_files();
    auto bytes_of = [&](size_t j) {
        return shape_numel(target_params[j].shape) * dtype_size(dtype_of[j]);
    };
    int64_t total_bytes = 0;
    for (size_t j = 0; j < target_params.size(); ++j) total_bytes += bytes_of(j);
    Progress bar("saving", int64_t(target_params.size()), "tensors",
                 o.progress && ::isatty(STDERR_FILENO) == 1, total_bytes);
    struct Made {
        size_t j = 0;
        Tensor whole;               // not per_rank: the whole target tensor, contiguous
        std::vector<Tensor> ranks;  // per_rank: each target tensor rank's piece, contiguous
    };
    auto prepare = [&](size_t j) {
        const ParameterInfo& p = target_params[j];
        Tensor t = src.whole(source_of[j]);
        if (p.shard.kind == ShardSpec::Kind::vocab) t = resize_vocab_rows(t, target_vocab);
        if (t.dtype() != dtype_of[j]) t = cast_float(t, dtype_of[j]);
        Made m{j, t.contiguous(), {}};
        if (per_rank) {
            for (int64_t r = 0; r < target.tensor_parallel; ++r)
                m.ranks.push_back(
                    shard_tensor(m.whole, p.shard, target.tensor_parallel, r).contiguous());
            m.whole = Tensor();  // the pieces keep it where they view it
        }
        return m;
    };
    std::optional<Made> current, spare;
    std::optional<size_t> previous;     // the request before current's
    Prefetcher<Made> pending(prepare);  // declared last: stopped first if the saver throws
    std::optional<size_t> pending_j;
    auto made = [&](size_t j) -> const Made& {
        if (current && current->j == j) return *current;
        if (current) {
            previous = current->j;
            current.reset();
            maps.release_all();
        }
        if (pending_j == j) {
            current = pending.take();
            pending_j.reset();
        } else if (spare && spare->j == j) {
            current = std::move(spare);
            spare.reset();
        } else {
            if (pending_j) {  // a wrong guess: kept, it may come later
                spare = pending.take();
                pending_j.reset();
            }
            current = prepare(j);
        }
        bar.add(1, bytes_of(j));
        // In order (j + 1), or interleaved with other stages' files (the request after the
        // previous one's).
        size_t next = previous && *previous + 1 != j ? *previous + 1 : j + 1;
        if (next < target_params.size() && next != j && !(spare && spare->j == next)) {
            pending_j = next;
            pending.start(next);
        }
        return *current;
    };
    auto release_last = [&] {
        if (pending_j) {
            try {
                pending.take();
            } catch (const std::exception&) {
                // A guess the saver never asked for: its error does not matter.
            }
        }
        pending_j.reset();
        current.reset();
        spare.reset();
        maps.release_all();
    };

    // ---- save ----
    CheckpointState out;
    out.iteration = o.iteration.value_or(head.iteration);
    out.consumed_train_samples = head.consumed_train_samples;
    out.consumed_valid_samples = head.consumed_valid_samples;
    out.num_floating_point_operations_so_far = head.num_floating_point_operations_so_far;
    out.args = head.args;
    set_arg(out.args, "tensor_model_parallel_size", target.tensor_parallel);
    set_arg(out.args, "pipeline_model_parallel_size", target.pipeline_parallel);
    set_arg(out.args, "expert_model_parallel_size", target.expert_parallel);
    set_arg(out.args, "padded_vocab_size", target_vocab);
    if (auto impl = target_args.find("transformer-impl"); impl != target_args.end())
        set_arg(out.args, "transformer_impl", impl->second);
    set_arg(out.args, "use_legacy_models", o.legacy);
    if (o.true_vocab_size) set_arg(out.args, "vocab_size", *o.true_vocab_size);
    if (o.make_vocab_size_divisible_by)
        set_arg(out.args, "make_vocab_size_divisible_by", *o.make_vocab_size_divisible_by);
    if (o.dtype) {
        set_arg(out.args, "bf16", *o.dtype == DType::bf16);
        set_arg(out.args, "fp16", *o.dtype == DType::f16);
        set_arg(out.args, "params_dtype",
                std::string(*o.dtype == DType::bf16  ? "bfloat16"
                            : *o.dtype == DType::f16 ? "float16"
                                                     : "float32"));
    }
    o.log("saving a " + std::string(saver.name()) + " checkpoint (" + layout_str(target) +
          ") at iteration " + std::to_string(out.iteration) + " to " + save_dir.string());
    // A whole-tensor format (torch_dist, hf) takes whole tensors whatever the target layout (its
    // args say it); a per-rank one each rank's pieces.
    const CheckpointLayout written = per_rank ? target : CheckpointLayout{};
    MT_CHECK(per_rank || target.expert_parallel == 1 || saver.name() != "hf",
             "--saver hf writes whole tensors: --target-expert-parallel-size must be 1");
    saver.save_streamed(save_dir, written, [&](int64_t tp, int64_t pp) {
        StreamedState s{out, {}};
        std::vector<size_t> param_of;
        if (!per_rank) {
            for (size_t j = 0; j < target_params.size(); ++j) {
                s.state.model.emplace_back(
                    target_params[j].name,
                    ShardedTensor::whole(tensor_placeholder(target_params[j].shape, dtype_of[j])));
                param_of.push_back(j);
            }
            for (const ParameterInfo& p : target_params)
                for (const std::string& alias : p.aliases)
                    s.state.model_aliases.emplace_back(alias, p.name);
            s.make = [&, param_of](size_t i) { return made(param_of.at(i)).whole; };
            return s;
        }
        for (const StageKey& k : stage_keys(target_params, target.pipeline_parallel, pp)) {
            const ParameterInfo& p = target_params[k.param];
            const Shape shape =
                shard_shape(p.shape, p.shard, target.tensor_parallel, "'" + p.name + "'");
            s.state.model.emplace_back(
                k.key, ShardedTensor::whole(tensor_placeholder(shape, dtype_of[k.param])));
            param_of.push_back(k.param);
            for (const std::string& alias : p.aliases)
                s.state.model_aliases.emplace_back(alias, k.key);
        }
        s.make = [&, param_of, tp](size_t i) { return made(param_of.at(i)).ranks.at(size_t(tp)); };
        return s;
    });
    release_last();
    bar.finish();
}

}  // namespace mt
