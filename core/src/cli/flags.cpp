#include "mt/cli/flags.h"

#include <boost/program_options.hpp>
#include <filesystem>

#include "mt/checkpoint/checkpoint_args.h"
#include "mt/checkpoint/format_detection.h"
#include "mt/error.h"
#include "mt/plugin_loader.h"
#include "mt/registry.h"
#include "mt/tokenizer_metadata.h"

namespace mt::cli {

po::options_description tokenizer_flags(TokenizerFlags& out, bool required,
                                        const std::string& default_type) {
    po::options_description g("Tokenizer", 100);
    auto* type = po::value(&out.type);
    if (!default_type.empty())
        type->default_value(default_type);
    else if (required)
        type->required();
    g.add_options()(
        "tokenizer-type", type,
        "GPT2BPETokenizer, BertWordPieceLowerCase, BertWordPieceCase, NullTokenizer, or any "
        "tokenizer a plugin registers (see --list-plugins)")(
        "vocab-file", po::value(&out.options.vocab_file), "path to the vocab file")(
        "merge-file", po::value(&out.options.merge_file), "path to the BPE merge file")(
        "tokenizer-model", po::value(&out.options.tokenizer_model),
        "tokenizer model file (SentencePiece / Hugging Face)")("vocab-size", po::value<int64_t>(),
                                                               "vocabulary size (NullTokenizer, "
                                                               "TikTokenizer)")(
        "vocab-extra-ids", po::value(&out.options.vocab_extra_ids)->default_value(0),
        "number of additional vocabulary tokens (T5 sentinels)")(
        "tiktoken-pattern", po::value(&out.options.tiktoken_pattern),
        "TikTokenizer's split regex: v1 or v2 (Megatron's PATTERN_TIKTOKEN, PATTERN_TIKTOKEN_V2)")(
        "tiktoken-num-special-tokens", po::value<int64_t>(),
        "TikTokenizer's number of special tokens, the ids before the vocabulary's (default 1000)")(
        "tiktoken-special-tokens", po::value<std::vector<std::string>>()->multitoken(),
        "TikTokenizer's special tokens (ids 0, 1, ...; must hold <unk>, <s> and </s>; default "
        "those three)")(
        "tokenizer-classes", po::value<std::string>(),
        "whose tokenizer classes: core_v0.13 (megatron/training/tokenizer; the default) or "
        "core_v0.19 (megatron/core/tokenizers: SentencePiece types encode without their added "
        "tokens, GPT-2, BERT and Hugging Face ones as transformers does, NullTokenizer's "
        "vocabulary is --vocab-size); core_v0.19's flags below imply it, and so does a core_v0.19 "
        "checkpoint that training resumes")(
        "tokenizer-sentencepiece-legacy", po::bool_switch(),
        "core_v0.19: the SentencePiece types find --tokenizer-special-tokens in the text")(
        "no-tokenizer-sentencepiece-ignore-extra-whitespaces", po::bool_switch(),
        "core_v0.19: keep runs of spaces a SentencePiece model would remove")(
        "disable-tokenizer-sentencepiece-ignore-extra-whitespaces", po::bool_switch(), "the same")(
        "tokenizer-special-tokens", po::value<std::vector<std::string>>()->multitoken(),
        "core_v0.19: special tokens (SentencePiece types: with "
        "--tokenizer-sentencepiece-legacy)")(
        "tokenizer-hf-no-include-special-tokens", po::bool_switch(),
        "core_v0.19 (GPT2BPETokenizer, BertWordPiece*, HuggingFaceTokenizer): tokenize adds no "
        "post-processor tokens ([CLS]/[SEP], a BOS) and detokenize leaves special tokens out")(
        "trust-remote-code", po::bool_switch(),
        "core_v0.19: recorded in the dataset identity (these tokenizers never run a folder's "
        "code)")("null-tokenizer-eod-id", po::value<int64_t>(),
                 "core_v0.19's NullTokenizer: the eod id (default --vocab-size - 1)")(
        "null-tokenizer-pad-id", po::value<int64_t>(),
        "core_v0.19's NullTokenizer: the pad id (default -1, none)")(
        "tokenizer-hf-no-use-fast", po::bool_switch(),
        "core_v0.19: transformers' slow tokenizers (refused: not supported yet)")(
        "tokenizer-metadata", po::value<std::string>(),
        "core_v0.19: the tokenizer's metadata JSON (MegatronTokenizer.write_metadata's): its "
        "library must be --tokenizer-type's, its model_type names the tokenizer class of the "
        "dataset identity, its chat_template comes before --chat-template's");
    return g;
}

po::options_description checkpoint_tokenizer_flags(TokenizerFlags& out) {
    po::options_description g("Tokenizer from the checkpoint", 100);
    g.add_options()(
        "no-use-tokenizer-model-from-checkpoint-args",
        po::bool_switch()->notifier([&out](bool on) { out.model_from_checkpoint_args = !on; }),
        "do not take --tokenizer-model from the checkpoint's args (give it here)");
    return g;
}

void finish_tokenizer_flags(const po::variables_map& vm, TokenizerFlags& out) {
    if (vm.count("vocab-size")) out.options.vocab_size = vm["vocab-size"].as<int64_t>();
    if (vm.count("tiktoken-num-special-tokens"))
        out.options.tiktoken_num_special_tokens = vm["tiktoken-num-special-tokens"].as<int64_t>();
    if (vm.count("tiktoken-special-tokens"))
        out.options.tiktoken_special_tokens =
            vm["tiktoken-special-tokens"].as<std::vector<std::string>>();
    TokenizerOptions& o = out.options;
    const auto on = [&](const char* flag) { return vm.count(flag) && vm[flag].as<bool>(); };
    o.sentencepiece_legacy = on("tokenizer-sentencepiece-legacy");
    o.sentencepiece_ignore_extra_whitespaces =
        !on("no-tokenizer-sentencepiece-ignore-extra-whitespaces") &&
        !on("disable-tokenizer-sentencepiece-ignore-extra-whitespaces");
    if (vm.count("tokenizer-special-tokens"))
        o.special_tokens = vm["tokenizer-special-tokens"].as<std::vector<std::string>>();
    MT_CHECK(!on("tokenizer-hf-no-use-fast"),
             "--tokenizer-hf-no-use-fast: not supported yet: transformers' slow (Python) "
             "tokenizers; the fast ones are built here");
    o.hf_include_special_tokens = !on("tokenizer-hf-no-include-special-tokens");
    o.trust_remote_code = on("trust-remote-code");
    if (vm.count("null-tokenizer-eod-id"))
        o.null_eod_id = vm["null-tokenizer-eod-id"].as<int64_t>();
    if (vm.count("null-tokenizer-pad-id"))
        o.null_pad_id = vm["null-tokenizer-pad-id"].as<int64_t>();
    if (vm.count("tokenizer-metadata")) {
        o.metadata_path = vm["tokenizer-metadata"].as<std::string>();
        // (Without a type here, the checkpoint's: read once that is known.)
        if (!out.type.empty()) read_tokenizer_metadata(o.metadata_path, out.type, o);
    }
    const bool newer_flags = o.sentencepiece_legacy || !o.sentencepiece_ignore_extra_whitespaces ||
                             o.special_tokens || !o.hf_include_special_tokens ||
                             o.trust_remote_code || o.null_eod_id ||
                             vm.count("null-tokenizer-pad-id") || vm.count("tokenizer-metadata");
    if (vm.count("tokenizer-classes")) {
        const std::string classes = vm["tokenizer-classes"].as<std::string>();
        MT_CHECK(classes == "core_v0.13" || classes == "core_v0.19",
                 "--tokenizer-classes: expected core_v0.13 or core_v0.19, got '",
                 classes.substr(0, 100), "'");
        MT_CHECK(classes == "core_v0.19" || !newer_flags,
                 "--tokenizer-classes core_v0.13: --tokenizer-sentencepiece-legacy, "
                 "--no-tokenizer-sentencepiece-ignore-extra-whitespaces, "
                 "--tokenizer-special-tokens, --tokenizer-hf-no-include-special-tokens, "
                 "--trust-remote-code and --null-tokenizer-* are core_v0.19's");
        o.classes = classes == "core_v0.19" ? TokenizerOptions::Classes::core_v0_19
                                            : TokenizerOptions::Classes::core_v0_13;
    } else if (newer_flags || on("fim-data")) {
        // (--fim-data is core_v0.19's too: its dataset calls the tokenizer's classes.)
        o.classes = TokenizerOptions::Classes::core_v0_19;
    }
}

po::options_description precision_flags() {
    po::options_description g("Precision", 100);
    g.add_options()("bf16", po::bool_switch(),
                    "bf16 weights and activations (training: f32 grads, master weights and "
                    "optimizer state)")(
        "fp16", po::bool_switch(),
        "fp16 weights and activations (training: with loss scaling; f32 grads, master weights "
        "and optimizer state)");
    return g;
}

DType params_dtype_from(const po::variables_map& vm) {
    const bool bf16 = vm.count("bf16") && vm["bf16"].as<bool>();
    const bool fp16 = vm.count("fp16") && vm["fp16"].as<bool>();
    MT_CHECK(!(bf16 && fp16), "--bf16 and --fp16 exclude each other");
    return bf16 ? DType::bf16 : fp16 ? DType::f16 : DType::f32;
}

po::options_description plugin_flags(PluginFlags& out) {
    po::options_description g("Plugins", 100);
    g.add_options()(
        "plugin-dir", po::value(&out.plugin_dirs)->composing(),
        "directory searched for plugins before $MT_PLUGIN_PATH and the default locations "
        "(repeatable)")("list-plugins", po::bool_switch(&out.list_plugins),
                        "list the plugins found on the search path and exit");
    return g;
}

po::options_description model_flags(const std::string& caption,
                                    const std::vector<FlagInfo>& flags) {
    po::options_description g(caption, 100);
    for (const auto& f : flags) {
        if (f.is_switch) {
            g.add_options()(f.name.c_str(), po::bool_switch(), f.help.c_str());
        } else if (f.multiple) {
            g.add_options()(f.name.c_str(),
                            po::value<std::vector<std::string>>()->multitoken()->zero_tokens(),
                            f.help.c_str());
        } else if (f.default_value) {
            g.add_options()(f.name.c_str(),
                            po::value<std::string>()->default_value(*f.default_value),
                            f.help.c_str());
        } else {
            g.add_options()(f.name.c_str(), po::value<std::string>(), f.help.c_str());
        }
    }
    return g;
}

po::options_description model_flags(const ModelFamily& family) {
    return model_flags("Model (" + std::string(family.name()) + ")", family.flags());
}

ModelArgs collect_model_args(const po::variables_map& vm, const std::vector<FlagInfo>& flags,
                             bool include_defaults) {
    ModelArgs args;
    for (const auto& f : flags) {
        if (!vm.count(f.name) || (!include_defaults && vm[f.name].defaulted())) continue;
        if (f.is_switch) {
            if (vm[f.name].as<bool>()) args[f.name] = "";
        } else if (f.multiple) {
            std::string joined;
            for (const std::string& v : vm[f.name].as<std::vector<std::string>>())
                joined += (joined.empty() ? "" : " ") + v;
            args[f.name] = joined;
        } else {
            args[f.name] = vm[f.name].as<std::string>();
        }
    }
    return args;
}

std::vector<std::string> scan_flag(int argc, char** argv, const std::string& flag) {
    std::vector<std::string> values;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == flag && i + 1 < argc)
            values.push_back(argv[++i]);
        else if (a.rfind(flag + "=", 0) == 0)
            values.push_back(a.substr(flag.size() + 1));
    }
    return values;
}

namespace {

// The family a GPT tool's --load checkpoint needs: its args describe a Mamba hybrid model
// (pretrain_mamba.py's or pretrain_hybrid.py's) or not. A checkpoint that cannot be read is left
// to the tool's own load, which says why.
bool loads_mamba_checkpoint(int argc, char** argv) {
    const auto loads = scan_flag(argc, argv, "--load");
    if (loads.empty() || !std::filesystem::is_directory(loads.back())) return false;
    try {
        auto format = detect_checkpoint_format(Registry::global(), loads.back());
        return megatron_mamba_model(format->load_args(loads.back()));
    } catch (const std::exception&) {
        return false;
    }
}

}  // namespace

std::unique_ptr<ModelFamily> model_family_from_argv(int argc, char** argv,
                                                    const std::string& default_model) {
    for (const auto& dir : scan_flag(argc, argv, "--plugin-dir"))
        Registry::global().loader().add_search_dir(dir);
    auto models = scan_flag(argc, argv, "--model");
    if (!models.empty()) return Registry::global().create_model(models.back());
    if (default_model == "gpt" && loads_mamba_checkpoint(argc, argv))
        return Registry::global().create_model("mamba");
    return Registry::global().create_model(default_model);
}

}  // namespace mt::cli
