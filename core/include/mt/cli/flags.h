// Flag groups shared by the tools, on Boost.Program_options, with Megatron-LM's flag names.
// A tool adds the groups it needs to its options and reads the filled structs after parsing.
#pragma once

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
#include <memory>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/model.h"
#include "mt/tokenizer.h"

namespace mt::cli {

namespace po = boost::program_options;

// Megatron's tokenizer arguments (--tokenizer-type, --vocab-file, --merge-file, ...).
struct TokenizerFlags {
    std::string type;
    TokenizerOptions options;
    // --no-use-tokenizer-model-from-checkpoint-args clears it (generation and evaluation).
    bool model_from_checkpoint_args = true;
};
// required: --tokenizer-type must be given (tools that can find the tokenizer elsewhere, e.g.
// next to a Hugging Face model, pass false); default_type: the entry point's default instead
// (Megatron's args_defaults: pretrain_gpt.py's GPT2BPETokenizer).
MT_API po::options_description tokenizer_flags(TokenizerFlags& out, bool required = true,
                                               const std::string& default_type = "");
// Megatron's --no-use-tokenizer-model-from-checkpoint-args, for the tools that load a
// checkpoint's tokenizer (megatron-generate, megatron-eval).
MT_API po::options_description checkpoint_tokenizer_flags(TokenizerFlags& out);
// Copies parsed optional values (e.g. --vocab-size) into `out` after po::notify.
MT_API void finish_tokenizer_flags(const po::variables_map& vm, TokenizerFlags& out);

// Megatron's --bf16 / --fp16: the model's weights and activations in that precision (training
// keeps f32 grads, master weights and optimizer state; inference widens the logits to f32).
MT_API po::options_description precision_flags();
// f32, bf16 or f16 as the parsed flags say (both given: mt::Error).
MT_API DType params_dtype_from(const po::variables_map& vm);

// Plugin discovery: --plugin-dir (repeatable) and --list-plugins.
struct PluginFlags {
    std::vector<std::string> plugin_dirs;
    bool list_plugins = false;
};
MT_API po::options_description plugin_flags(PluginFlags& out);

// A model family's flags (ModelFamily::flags()) as an options group, and the values given on
// the command line collected back into ModelArgs (switches that are set map to "").
MT_API po::options_description model_flags(const std::string& caption,
                                           const std::vector<FlagInfo>& flags);
// The family's flags as the group "Model (<family name>)".
MT_API po::options_description model_flags(const ModelFamily& family);
// With include_defaults false only the flags the command line gave (what should override a
// checkpoint's own arguments).
MT_API ModelArgs collect_model_args(const po::variables_map& vm, const std::vector<FlagInfo>& flags,
                                    bool include_defaults = true);

// The values of `--flag X` and `--flag=X` in argv, read before parsing: a tool needs
// --plugin-dir and --model first to know the model family's own flags.
MT_API std::vector<std::string> scan_flag(int argc, char** argv, const std::string& flag);
// Adds argv's --plugin-dir directories to the global registry's search path and creates the
// model family --model names (default: the tool's `default_model`; for "gpt", "mamba" when the
// --load checkpoint's args describe a Mamba hybrid model, as pretrain_mamba.py's do).
MT_API std::unique_ptr<ModelFamily> model_family_from_argv(int argc, char** argv,
                                                           const std::string& default_model);

}  // namespace mt::cli
