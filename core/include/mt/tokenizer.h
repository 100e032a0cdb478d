// Tokenizer interface: text <-> token ids, with the special ids Megatron-LM exposes.
// Implementations are plugins registered under Megatron's --tokenizer-type names
// (GPT2BPETokenizer, BertWordPieceLowerCase, BertWordPieceCase, NullTokenizer, ...).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mt/api.h"

namespace mt {

// What a tokenizer is built from: Megatron's tokenizer flags.
struct TokenizerOptions {
    std::string vocab_file;             // --vocab-file
    std::string merge_file;             // --merge-file
    std::string tokenizer_model;        // --tokenizer-model
    std::optional<int64_t> vocab_size;  // --vocab-size (NullTokenizer, TikTokenizer)
    int64_t vocab_extra_ids = 0;        // --vocab-extra-ids
    // TikTokenizer: --tiktoken-pattern (v1 or v2), --tiktoken-num-special-tokens (Megatron's
    // default, 1000, when not given) and --tiktoken-special-tokens.
    std::string tiktoken_pattern;
    std::optional<int64_t> tiktoken_num_special_tokens;
    std::optional<std::vector<std::string>> tiktoken_special_tokens;
    // Whose classes build the tokenizer: core_v0.13's megatron/training/tokenizer, or
    // core_v0.19's megatron/core/tokenizers, which encode the SentencePiece types otherwise
    // (--tokenizer-classes; implied by core_v0.19's own flags and checkpoint args).
    enum class Classes { core_v0_13, core_v0_19 };
    Classes classes = Classes::core_v0_13;
    // core_v0.19: --tokenizer-sentencepiece-legacy, its negated
    // --no-tokenizer-sentencepiece-ignore-extra-whitespaces and --tokenizer-special-tokens.
    bool sentencepiece_legacy = false;
    bool sentencepiece_ignore_extra_whitespaces = true;
    std::optional<std::vector<std::string>> special_tokens;
    // core_v0.19's transformers-backed types (GPT2BPETokenizer, BertWordPiece*): the negated
    // --tokenizer-hf-no-include-special-tokens (tokenize adds BERT's [CLS] ... [SEP]; decode
    // keeps special tokens) and --trust-remote-code (only named in the dataset identity: these
    // types never run a folder's code).
    bool hf_include_special_tokens = true;
    bool trust_remote_code = false;
    // core_v0.19's NullTokenizer: --null-tokenizer-eod-id (default --vocab-size - 1) and
    // --null-tokenizer-pad-id (-1: none).
    std::optional<int64_t> null_eod_id;
    int64_t null_pad_id = -1;
    // core_v0.19's --tokenizer-metadata (mt/tokenizer_metadata.h): the file, the class its
    // model_type builds (the dataset identity's "class": DefaultTokenizerText unless it names
    // gpt, mamba, bert or t5), and its chat template, which comes before --chat-template's.
    std::string metadata_path;
    std::string core_class =
        "megatron.core.tokenizers.text.models.default_tokenizer."
        "DefaultTokenizerText";
    std::optional<std::string> metadata_chat_template;
};

// MegatronTokenizer.unique_identifiers: the tokenizer's part of a dataset cache key (so index
// caches are Megatron's). GPT2BPETokenizer: class "_GPT2BPETokenizer", paths {vocab_file,
// merge_file}, no options; _NullTokenizer: paths {nullopt} (JSON null), options
// {{"vocab_size", "<n>"}}. core_v0.19's classes keep one path, a string (single_path).
struct TokenizerIdentity {
    std::string class_name;
    std::vector<std::optional<std::string>> paths;
    std::vector<std::pair<std::string, std::string>> options;  // values already str()-ed
    bool single_path = false;
};

// core_v0.19's identity (its text tokenizer class, options.core_class): one tokenizer path, a
// string or JSON null, and the keyword arguments build_tokenizer passed it, str()-ed, in its
// order.
MT_API TokenizerIdentity
core_v0_19_identity(const TokenizerOptions& options, std::optional<std::string> path,
                    std::vector<std::pair<std::string, std::string>> kwargs);
// The keyword arguments core_v0.19's build_tokenizer passes transformers' tokenizers, with
// `additional` as additional_special_tokens: MegatronHFTokenizer's (GPT2BPETokenizer,
// BertWordPiece*), or HuggingFaceTokenizer's (`hugging_face`: chat_template first,
// additional_special_tokens after the files).
MT_API std::vector<std::pair<std::string, std::string>> transformers_kwargs(
    const TokenizerOptions& options, const std::vector<std::string>& additional, bool hugging_face);

// Special token ids; an absent one is std::nullopt (Megatron raises NotImplementedError).
struct SpecialIds {
    std::optional<int32_t> eod, cls, sep, mask, pad, bos, eos;
};

// A byte-level BPE tokenizer as data (tiktoken's kind), for writing it in another format
// (megatron-convert --saver hf's tokenizer.json): special tokens hold ids 0..n-1, rank r's bytes
// id n + r, pieces merge by rank, and text is first cut by `split_pattern` (tiktoken's regex).
struct ByteLevelBpeModel {
    std::vector<std::string> special_tokens;
    std::vector<std::string> ranks;
    std::string split_pattern;
};

class MT_API Tokenizer {
  public:
    virtual ~Tokenizer() = default;

    // Megatron's tokenize(): ids of `text` (with the special tokens the tokenizer itself adds,
    // e.g. a Hugging Face tokenizer's BOS; Megatron's own tokenizers add none). Thread-safe.
    std::vector<int32_t> encode(std::string_view text) const {
        std::vector<int32_t> ids;
        encode_append(text, ids);
        return ids;
    }
    // Appends the ids of `text` to `out` (lets callers reuse one buffer). Thread-safe.
    virtual void encode_append(std::string_view text, std::vector<int32_t>& out) const = 0;
    // Megatron's detokenize().
    virtual std::string decode(std::span<const int32_t> ids) const = 0;
    // Size Megatron reports (before padding to --make-vocab-size-divisible-by).
    virtual int64_t vocab_size() const = 0;
    virtual const SpecialIds& special_ids() const = 0;
    // The registered name, e.g. "GPT2BPETokenizer".
    virtual std::string_view name() const = 0;

    // What identifies this tokenizer in Megatron's dataset caches; the default is an mt::Error
    // "not supported yet" (a tokenizer that cannot name itself cannot feed training data).
    virtual TokenizerIdentity dataset_identity() const;
    // Megatron's inv_vocab: the text of every id (BERT's masking tells word starts from "##"
    // pieces by it); the default is an mt::Error "not supported yet".
    virtual std::vector<std::string> vocabulary() const;
    // core_v0.19's tokens_to_ids of one token (transformers' convert_tokens_to_ids: a special
    // token's id, else the vocabulary's, else the unknown token's); the default is an mt::Error
    // "not supported yet".
    virtual int32_t token_to_id(std::string_view token) const;
    // core_v0.19's ids_to_text(ids, remove_special_tokens=True): the text of the ids but the
    // special tokens' (convert_tokens_to_string: no clean-up); the default is an mt::Error.
    virtual std::string decode_without_special_tokens(std::span<const int32_t> ids) const;
    // Megatron's additional special tokens (core_v0.19's --tokenizer-special-tokens, BERT's
    // sentinels) with their ids, as the tokenizer finds them in text; empty for most kinds.
    virtual std::vector<std::pair<std::string, int32_t>> additional_special_tokens() const {
        return {};
    }
    // The whole model of a byte-level BPE tokenizer; nullopt for other kinds.
    virtual std::optional<ByteLevelBpeModel> byte_level_bpe() const { return std::nullopt; }

    // The id of a special token, or an mt::Error naming the tokenizer and the token.
    int32_t eod() const { return require(special_ids().eod, "eod"); }

  protected:
    int32_t require(const std::optional<int32_t>& id, const char* what) const;
};

// Megatron's additional_special_tokens_ids: the ids of the T5 sentinels <extra_id_0>,
// <extra_id_1>, ... (--vocab-extra-ids of them) in order; empty for a tokenizer without them.
MT_API std::vector<int32_t> sentinel_ids(const Tokenizer& tokenizer);

}  // namespace mt
