// Checkpoint → inference model: the format's reader, the model its args describe, its weights.
#include "mt/infer/model_loader.h"

#include "mt/checkpoint/convert.h"
#include "mt/checkpoint/format_detection.h"
#include "mt/checkpoint/model_weights.h"
#include "mt/error.h"
#include "mt/nn/parameter.h"

namespace mt::infer {

LoadedModel load_for_inference(Registry& registry, const ModelFamily& family,
                               const std::filesystem::path& dir, const ModelArgs& overrides,
                               const std::string& format, DType params_dtype) {
    auto reader = detect_checkpoint_format(registry, dir, format);
    // Any tensor/pipeline layout: the rank files are joined into the whole model.
    WholeCheckpoint whole = load_whole_checkpoint(*reader, dir, family, true);
    ModelArgs args = whole.args;
    for (const auto& [k, v] : overrides) args[k] = v;
    // Inference: no dropout whatever the training used.
    args["attention-dropout"] = "0";
    args["hidden-dropout"] = "0";
    LoadedModel out;
    out.args = family.resolved_args(args);
    const BuildContext& one = single_process_context();
    out.model =
        family.build(out.args, BuildContext{one.backend, one.parallel, false, params_dtype});
    CheckpointState weights;
    for (size_t i = 0; i < whole.params.size(); ++i) {
        const Tensor& t = whole.tensors[i];
        weights.model.emplace_back(whole.params[i].name,
                                   ShardedTensor{t, t.shape(), Shape(t.shape().size(), 0)});
    }
    load_model_weights(weights, *out.model, WeightLoad::share);
    // No backward at inference: free the gradient buffers (as large as the weights).
    for (nn::Parameter* p : out.model->parameters()) p->grad = Tensor();
    out.format = std::string(reader->name());
    out.checkpoint_args = whole.head.args;
    out.iteration = whole.head.iteration;
    return out;
}

std::unique_ptr<Tokenizer> tokenizer_for(Registry& registry, const std::string& type,
                                         TokenizerOptions options, const std::filesystem::path& dir,
                                         const CheckpointArgs& saved,
                                         const std::string& default_type) {
    if (!type.empty()) return registry.create_tokenizer(type, options);
    if (const ArgValue* t = find_arg(saved, "tokenizer_type");
        t && std::holds_alternative<std::string>(*t)) {
        // The files the training named, where no flag names others.
        for (auto [name, slot] : {std::pair{"vocab_file", &options.vocab_file},
                                  std::pair{"merge_file", &options.merge_file},
                                  std::pair{"tokenizer_model", &options.tokenizer_model}}) {
            const ArgValue* v = find_arg(saved, name);
            if (!slot->empty() || !v || !std::holds_alternative<std::string>(*v)) continue;
            *slot = std::get<std::string>(*v);
            MT_CHECK(std::filesystem::exists(*slot), "the checkpoint in ", dir.string(),
                     " names its tokenizer's ", name, " ", *slot,
                     ", which does not exist here: give --",
                     name == std::string("vocab_file")   ? "vocab-file"
                     : name == std::string("merge_file") ? "merge-file"
                                                         : "tokenizer-model",
                     " (or --tokenizer-type and its files)");
        }
        return registry.create_tokenizer(std::get<std::string>(*t), options);
    }
    // Tokenizer files but no type: the model family's usual tokenizer over them (GPT's
    // GPT2BPETokenizer, as Megatron's text generation server examples give it).
    const bool files = !options.vocab_file.empty() || !options.merge_file.empty() ||
                       !options.tokenizer_model.empty();
    if (files && !default_type.empty()) return registry.create_tokenizer(default_type, options);
    MT_FAIL("--tokenizer-type is required: the checkpoint in ", dir.string(),
            " names no tokenizer (its args have no tokenizer_type, and a Hugging Face folder "
            "has no tokenizer.json, vocab.json + merges.txt or vocab.txt)");
}

}  // namespace mt::infer
