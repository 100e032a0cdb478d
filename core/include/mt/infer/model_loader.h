// Loading a trained model for inference (megatron-generate, megatron-eval): find which
// checkpoint format --load holds, read it, build the model from the checkpoint's own arguments
// (Megatron's --use-checkpoint-args) with the command line's model flags on top, copy the weights.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mt/api.h"
#include "mt/checkpoint.h"
#include "mt/model.h"
#include "mt/registry.h"
#include "mt/tokenizer.h"

namespace mt::parallel {
class ParallelState;
}

namespace mt::infer {

struct LoadedModel {
    std::unique_ptr<Model> model;
    ModelArgs args;      // what built it (the family's resolved arguments)
    std::string format;  // the checkpoint format read ("torch", "torch_dist", "hf", ...)
    int64_t iteration = 0;
    CheckpointArgs checkpoint_args;  // the args the checkpoint stores (Megatron's Namespace)
};

// Reads `dir` in any tensor/pipeline layout (format as for mt::detect_checkpoint_format), builds
// family's model from the checkpoint's args overridden by `overrides` (the model flags given on
// the command line), with dropout off, and gives it the weights, in `params_dtype` (--bf16,
// --fp16: the weights cast to it, the activations computed in it).
// With `parallel` (model-parallel inference): this rank's part of the model, built for its
// tensor-parallel rank and pipeline stage (each rank reads the checkpoint, memory-mapped where
// the format allows, and keeps its part).
MT_API LoadedModel load_for_inference(Registry& registry, const ModelFamily& family,
                                      const std::filesystem::path& dir, const ModelArgs& overrides,
                                      const std::string& format = "",
                                      DType params_dtype = DType::f32,
                                      const parallel::ParallelState* parallel = nullptr);

// A tokenizer type with its options.
struct TokenizerChoice {
    std::string type;
    TokenizerOptions options;
};

// The tokenizer `type` names (--tokenizer-type with its options), or, when type is empty: the
// checkpoint's own (`saved`: its tokenizer_type, and its vocab_file, merge_file,
// tokenizer_model, vocab_size and tiktoken_* where no flag gives them: Megatron's
// --use-checkpoint-args; the Hugging Face
// reader names the tokenizer its folder carries); else `default_type` (the model family's
// default_tokenizer_type()) when tokenizer files are given. mt::Error when there is none.
// model_from_args false (--no-use-tokenizer-model-from-checkpoint-args): the args' tokenizer_model
// is not taken.
MT_API std::unique_ptr<Tokenizer> tokenizer_for(Registry& registry, const std::string& type,
                                                TokenizerOptions options,
                                                const std::filesystem::path& dir,
                                                const CheckpointArgs& saved,
                                                const std::string& default_type,
                                                bool model_from_args = true);
// What tokenizer_for builds, unbuilt (megatron-train --use-checkpoint-args builds it itself).
MT_API TokenizerChoice tokenizer_choice(const std::string& type, TokenizerOptions options,
                                        const std::filesystem::path& dir,
                                        const CheckpointArgs& saved,
                                        const std::string& default_type,
                                        bool model_from_args = true);

}  // namespace mt::infer
