// Checkpoint → inference model: the format's reader, the model its args describe, its weights.
#include "mt/infer/model_loader.h"

#include <cstring>

#include "mt/checkpoint/checkpoint_args.h"
#include "mt/checkpoint/convert.h"
#include "mt/checkpoint/file_maps.h"
#include "mt/checkpoint/format_detection.h"
#include "mt/checkpoint/model_weights.h"
#include "mt/error.h"
#include "mt/nn/inference_state.h"
#include "mt/nn/parameter.h"
#include "mt/parallel/parallel_state.h"
#include "mt/tokenizer_metadata.h"

namespace mt::infer {

namespace {

// A model whose vocabulary was padded for the tensor-parallel split: its logits cut back to the
// checkpoint's rows, so that the padding changes no softmax.
class VocabularyCut final : public Model {
  public:
    VocabularyCut(std::unique_ptr<Model> model, int64_t rows)
        : model_(std::move(model)), rows_(rows) {}
    Tensor logits(const Tensor& tokens, nn::InferenceState* cache, int64_t keep_last) override {
        Tensor logits = model_->logits(tokens, cache, keep_last);
        // (Only the first pipeline stage gets the logits.)
        return logits.defined() ? logits.slice(2, 0, rows_).contiguous() : logits;
    }
    std::unique_ptr<nn::InferenceState> make_inference_state(int64_t batch,
                                                             int64_t capacity) const override {
        return model_->make_inference_state(batch, capacity);
    }
    int64_t max_positions() const override { return model_->max_positions(); }
    std::vector<nn::Parameter*> parameters() override { return model_->parameters(); }
    std::vector<nn::Parameter*> buffers() override { return model_->buffers(); }
    void initialize(uint64_t seed) override { model_->initialize(seed); }
    Losses forward(const Batch&, nn::DropoutContext&, std::unique_ptr<Activations>*) override {
        MT_FAIL("a model padded for tensor-parallel inference does not train");
    }
    void backward(const std::vector<Tensor>&, const Activations&) override {
        MT_FAIL("a model padded for tensor-parallel inference does not train");
    }
    double training_flops(int64_t samples) const override {
        return model_->training_flops(samples);
    }

  private:
    std::unique_ptr<Model> model_;
    int64_t rows_;
};

// `t` with zero rows appended up to `rows`.
Tensor pad_rows(const Tensor& t, int64_t rows) {
    Shape shape = t.shape();
    shape[0] = rows;
    Tensor out = Tensor::empty(shape, t.dtype());
    std::memset(out.raw_data(), 0, size_t(out.numel()) * dtype_size(out.dtype()));
    out.slice(0, 0, t.size(0)).copy_from(t);
    return out;
}

}  // namespace

LoadedModel load_for_inference(Registry& registry, const ModelFamily& family,
                               const std::filesystem::path& dir, const ModelArgs& overrides,
                               const std::string& format, DType params_dtype,
                               const parallel::ParallelState* parallel) {
    auto reader = detect_checkpoint_format(registry, dir, format);
    // Any tensor/pipeline layout, its tensors viewing the files (a whole-tensor format's made
    // only when asked for).
    const bool leader = !parallel || parallel->world().rank() == 0;  // shows the progress
    const FileMaps before;
    const SourceCheckpoint source = load_source_checkpoint(*reader, dir, family, leader);
    const FileMaps maps(&before);  // the checkpoint's files
    ModelArgs args = source.args;
    for (const auto& [k, v] : overrides) args[k] = v;
    // Inference: no dropout whatever the training used.
    args["attention-dropout"] = "0";
    args["hidden-dropout"] = "0";
    LoadedModel out;
    out.args = family.resolved_args(args);
    // A vocabulary that does not split over the tensor-parallel ranks (a Hugging Face GPT-2's
    // 50257 rows) is padded with zero rows for the split and cut back from the logits.
    const int tp = parallel ? parallel->tp().size() : 1;
    const int64_t rows = std::stoll(out.args.at("padded-vocab-size"));
    const int64_t padded = (rows + tp - 1) / tp * tp;
    if (padded != rows) out.args["padded-vocab-size"] = std::to_string(padded);
    const BuildContext& one = single_process_context();
    std::unique_ptr<Model> model = family.build(
        out.args,
        BuildContext{one.backend, parallel ? *parallel : one.parallel, false, params_dtype});
    // Each parameter's whole tensor joined (or made) when it is loaded and let go after, with
    // the pages of the files it was read from, so a rank holds its part of the model and one
    // whole tensor; a pipeline stage or an expert-parallel rank makes only the tensors it keeps.
    std::vector<std::string> names;
    for (const ParameterInfo& info : source.params) names.push_back(info.name);
    const bool whole_model =
        !parallel || (parallel->pp().size() == 1 && parallel->ep().size() == 1);
    load_model_weights_made(
        names,
        [&](size_t i) {
            maps.release_all();  // the previous tensor's, copied into the model by now
            const Tensor t = source.whole(i);
            const bool vocab_rows = source.params[i].shard.kind == ShardSpec::Kind::vocab;
            return vocab_rows && padded != rows ? pad_rows(t, padded) : t;
        },
        *model, whole_model);
    maps.release_all();
    // No backward at inference: free the gradient buffers (as large as the weights).
    for (nn::Parameter* p : model->parameters()) p->grad = Tensor();
    out.model =
        padded != rows ? std::make_unique<VocabularyCut>(std::move(model), rows) : std::move(model);
    out.format = std::string(reader->name());
    out.checkpoint_args = source.head.args;
    out.iteration = source.head.iteration;
    return out;
}

namespace {

// tokenizer_choice's type and options, before --tokenizer-metadata is read against the type.
TokenizerChoice choose_tokenizer(const std::string& type, TokenizerOptions options,
                                 const std::filesystem::path& dir, const CheckpointArgs& saved,
                                 const std::string& default_type, bool model_from_args) {
    if (!type.empty()) return {type, options};
    if (const ArgValue* t = find_arg(saved, "tokenizer_type");
        t && std::holds_alternative<std::string>(*t)) {
        // The files the training named, where no flag names others.
        for (auto [name, slot] : {std::pair{"vocab_file", &options.vocab_file},
                                  std::pair{"merge_file", &options.merge_file},
                                  std::pair{"tokenizer_model", &options.tokenizer_model}}) {
            const ArgValue* v = find_arg(saved, name);
            if (!slot->empty() || !v || !std::holds_alternative<std::string>(*v)) continue;
            if (!model_from_args && slot == &options.tokenizer_model) continue;
            *slot = std::get<std::string>(*v);
            MT_CHECK(std::filesystem::exists(*slot), "the checkpoint in ", dir.string(),
                     " names its tokenizer's ", name, " ", *slot,
                     ", which does not exist here: give --",
                     name == std::string("vocab_file")   ? "vocab-file"
                     : name == std::string("merge_file") ? "merge-file"
                                                         : "tokenizer-model",
                     " (or --tokenizer-type and its files)");
        }
        // --vocab-size and TikTokenizer's options, where no flag gives them (Megatron's
        // load_args_from_checkpoint takes tiktoken_pattern; the others are the training's too).
        if (options.tiktoken_pattern.empty()) {
            if (const ArgValue* v = find_arg(saved, "tiktoken_pattern"))
                if (const auto* p = std::get_if<std::string>(v)) options.tiktoken_pattern = *p;
        }
        if (!options.tiktoken_num_special_tokens)
            options.tiktoken_num_special_tokens = int_arg(saved, "tiktoken_num_special_tokens");
        if (!options.tiktoken_special_tokens) {
            if (const ArgValue* v = find_arg(saved, "tiktoken_special_tokens"))
                if (const auto* list = std::get_if<std::vector<std::string>>(v))
                    options.tiktoken_special_tokens = *list;
        }
        if (!options.vocab_size) options.vocab_size = int_arg(saved, "vocab_size");
        // T5's sentinels (<extra_id_N>), which the tokenizer adds after its vocabulary.
        if (options.vocab_extra_ids == 0)
            options.vocab_extra_ids = int_arg(saved, "vocab_extra_ids").value_or(0);
        const std::string& type = std::get<std::string>(*t);
        // A core_v0.19 training built the tokenizer with core_v0.19's classes, from these.
        if (core_v0_19_tokenizer_args(saved)) {
            options.classes = TokenizerOptions::Classes::core_v0_19;
            options.sentencepiece_legacy = bool_arg(saved, "tokenizer_sentencepiece_legacy");
            const auto saved_bool = [&saved](const char* name, bool fallback) {
                const ArgValue* v = find_arg(saved, name);
                const bool* b = v ? std::get_if<bool>(v) : nullptr;
                return b ? *b : fallback;
            };
            options.sentencepiece_ignore_extra_whitespaces =
                saved_bool("tokenizer_sentencepiece_ignore_extra_whitespaces", true);
            options.hf_include_special_tokens =
                !saved_bool("tokenizer_hf_no_include_special_tokens", false);
            options.trust_remote_code = saved_bool("trust_remote_code", false);
            if (const ArgValue* v = find_arg(saved, "special_tokens"))
                if (const auto* list = std::get_if<std::vector<std::string>>(v))
                    options.special_tokens = *list;
            options.null_eod_id = int_arg(saved, "null_tokenizer_eod_id");
            options.null_pad_id = int_arg(saved, "null_tokenizer_pad_id").value_or(-1);
        }
        return {type, options};
    }
    // Tokenizer files but no type: the model family's usual tokenizer over them (GPT's
    // GPT2BPETokenizer, as Megatron's text generation server examples give it).
    const bool files = !options.vocab_file.empty() || !options.merge_file.empty() ||
                       !options.tokenizer_model.empty();
    if (files && !default_type.empty()) return {default_type, options};
    MT_FAIL("--tokenizer-type is required: the checkpoint in ", dir.string(),
            " names no tokenizer (its args have no tokenizer_type, and a Hugging Face folder "
            "has no tokenizer.json, vocab.json + merges.txt, vocab.txt or tokenizer.model)");
}

}  // namespace

TokenizerChoice tokenizer_choice(const std::string& type, TokenizerOptions options,
                                 const std::filesystem::path& dir, const CheckpointArgs& saved,
                                 const std::string& default_type, bool model_from_args) {
    TokenizerChoice choice =
        choose_tokenizer(type, std::move(options), dir, saved, default_type, model_from_args);
    // --tokenizer-metadata, read against the type chosen.
    if (!choice.options.metadata_path.empty())
        read_tokenizer_metadata(choice.options.metadata_path, choice.type, choice.options);
    return choice;
}

std::unique_ptr<Tokenizer> tokenizer_for(Registry& registry, const std::string& type,
                                         TokenizerOptions options, const std::filesystem::path& dir,
                                         const CheckpointArgs& saved,
                                         const std::string& default_type, bool model_from_args) {
    TokenizerChoice choice =
        tokenizer_choice(type, std::move(options), dir, saved, default_type, model_from_args);
    return registry.create_tokenizer(choice.type, choice.options);
}

}  // namespace mt::infer
