#include "mt/checkpoint/convert.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "mt/checkpoint/checkpoint_args.h"
#include "mt/checkpoint/reshard.h"
#include "mt/error.h"
#include "mt/progress.h"

namespace mt {

namespace {

ShardedTensor whole_piece(const Tensor& t) {
    return ShardedTensor::whole(in_own_storage(t));
}

std::string layout_str(const CheckpointLayout& l) {
    return "tensor parallel " + std::to_string(l.tensor_parallel) + ", pipeline parallel " +
           std::to_string(l.pipeline_parallel);
}

}  // namespace

WholeCheckpoint load_whole_checkpoint(CheckpointFormat& loader, const std::filesystem::path& dir,
                                      const ModelFamily& family, bool progress) {
    // ---- load every rank (tensors view the files) ----
    WholeCheckpoint w;
    w.layout = loader.layout(dir);
    const CheckpointLayout& source = w.layout;
    std::vector<std::vector<NamedTensors>> ranks(size_t(source.pipeline_parallel));
    {
        Progress bar("loading", source.ranks(), "ranks", progress && ::isatty(STDERR_FILENO) == 1);
        for (int64_t pp = 0; pp < source.pipeline_parallel; ++pp)
            for (int64_t tp = 0; tp < source.tensor_parallel; ++tp) {
                CheckpointState s = loader.load_rank(dir, tp, pp);
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

    // ---- the model the source's args describe, as whole tensors ----
    w.args = model_args_from_checkpoint(w.head.args, family.flags());
    if (bool_arg(w.head.args, "use_legacy_models")) w.args["transformer-impl"] = "local";
    if (!w.args.count("padded-vocab-size"))
        for (const auto& [name, t] : ranks[0][0])
            if (name == "embedding.word_embeddings.weight")
                w.args["padded-vocab-size"] = std::to_string(t.shape()[0] * source.tensor_parallel);
    w.args["tensor-model-parallel-size"] = "1";
    w.params = family.parameters(w.args);
    w.tensors = whole_tensors(w.params, source, [&](int64_t tp, int64_t pp) -> const NamedTensors& {
        return ranks[size_t(pp)][size_t(tp)];
    });
    return w;
}

void convert_checkpoint(CheckpointFormat& loader, const std::filesystem::path& load_dir,
                        CheckpointFormat& saver, const std::filesystem::path& save_dir,
                        const ModelFamily& family, const ConvertOptions& o) {
    WholeCheckpoint w = load_whole_checkpoint(loader, load_dir, family, o.progress);
    o.log("loaded a " + std::string(loader.name()) + " checkpoint (" + layout_str(w.layout) +
          ") from " + load_dir.string());
    const CheckpointLayout& source = w.layout;
    const CheckpointState& head = w.head;
    const ModelArgs& args = w.args;
    const std::vector<ParameterInfo>& params = w.params;
    const std::vector<Tensor>& whole = w.tensors;

    // ---- the target model ----
    // By default the layout the source was trained with (its args; a whole-tensor format's
    // files do not show it).
    const CheckpointLayout target{
        o.target_tensor_parallel > 0
            ? o.target_tensor_parallel
            : int_arg(head.args, "tensor_model_parallel_size").value_or(source.tensor_parallel),
        o.target_pipeline_parallel > 0 ? o.target_pipeline_parallel
                                       : int_arg(head.args, "pipeline_model_parallel_size")
                                             .value_or(source.pipeline_parallel)};
    // Sizes read from a file are checked like flags before anything divides by them.
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
    std::vector<Tensor> target_whole;
    for (const ParameterInfo& p : target_params) {
        auto it = by_name.find(p.name);
        if (it == by_name.end()) it = by_name.find(other_impl_name(p.name));
        MT_CHECK(it != by_name.end(), "the target model has '", p.name,
                 "', which the source model does not");
        Tensor t = whole[it->second];
        if (p.shard.kind == ShardSpec::Kind::vocab) t = resize_vocab_rows(t, target_vocab);
        MT_CHECK(t.shape() == p.shape, "'", p.name, "' has shape ", shape_str(t.shape()),
                 " but the target model needs ", shape_str(p.shape));
        if (o.dtype && t.dtype() != *o.dtype) t = cast_float(t, *o.dtype);
        target_whole.push_back(t);
    }

    // ---- save ----
    CheckpointState out;
    out.iteration = o.iteration.value_or(head.iteration);
    out.consumed_train_samples = head.consumed_train_samples;
    out.consumed_valid_samples = head.consumed_valid_samples;
    out.num_floating_point_operations_so_far = head.num_floating_point_operations_so_far;
    out.args = head.args;
    set_arg(out.args, "tensor_model_parallel_size", target.tensor_parallel);
    set_arg(out.args, "pipeline_model_parallel_size", target.pipeline_parallel);
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
    if (!saver.per_rank_files()) {
        for (size_t i = 0; i < target_params.size(); ++i)
            out.model.emplace_back(target_params[i].name, whole_piece(target_whole[i]));
        saver.save(save_dir, out);
        return;
    }
    Progress bar("saving", target.ranks(), "ranks", o.progress && ::isatty(STDERR_FILENO) == 1);
    saver.save_ranks(save_dir, target, [&](int64_t tp, int64_t pp) {
        CheckpointState s = out;
        for (auto& [name, t] : rank_tensors(target_params, target_whole, target, tp, pp))
            s.model.emplace_back(name, whole_piece(t));
        bar.add(1);
        return s;
    });
    bar.finish();
}

}  // namespace mt
