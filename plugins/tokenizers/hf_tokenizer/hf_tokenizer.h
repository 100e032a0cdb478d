// HuggingFaceTokenizer: Megatron-LM's _HuggingFaceTokenizer (transformers' AutoTokenizer on a
// tokenizer.json folder) for BPE tokenizers such as Llama-2, Mistral, GPT-2 and Llama-3, native and
// thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bpe_model.h"
#include "mt/text/added_token_splitter.h"
#include "mt/text/word_cache.h"
#include "mt/tokenizer.h"
#include "pre_tokenizer.h"
#include "tokenizer_spec.h"

namespace mt::plugins::hf_tokenizer {

class HfTokenizer final : public Tokenizer {
  public:
    // From --tokenizer-model: a model folder or its tokenizer.json.
    explicit HfTokenizer(const TokenizerOptions& options);
    explicit HfTokenizer(const TokenizerSpec& spec);

    // Megatron's tokenize() is tokenizer(text).input_ids: with the post-processor's special
    // tokens (Llama's BOS). Throws mt::Error (leaving `out` as it was) on invalid UTF-8.
    void encode_append(std::string_view text, std::vector<int32_t>& out) const override;
    // tokenizer.decode(ids): special tokens kept, through the file's decoder. An id that is
    // neither in the vocab nor an added token is an mt::Error (tokenizers would drop it).
    std::string decode(std::span<const int32_t> ids) const override;
    // len(tokenizer): the vocab and the added tokens, each text counted once.
    int64_t vocab_size() const override { return vocab_size_; }
    // eod is eos_token_id and bos is bos_token_id; the others are absent, as in Megatron.
    const SpecialIds& special_ids() const override { return special_ids_; }
    std::string_view name() const override { return "HuggingFaceTokenizer"; }
    // Megatron's build_tokenizer: _HuggingFaceTokenizer(args.tokenizer_model), no options.
    TokenizerIdentity dataset_identity() const override;
    // tokenizers' token_to_id: an added token's id, else the vocabulary's; nullopt for neither.
    std::optional<int32_t> token_id(std::string_view token) const;

  private:
    void encode_plain(std::string_view segment, bool at_start, text::WordCache& cache,
                      std::vector<int32_t>& out) const;
    void encode_piece(std::string_view piece, text::WordCache& cache,
                      std::vector<int32_t>& out) const;
    void encode_cached(std::string_view piece, text::WordCache& cache,
                       std::vector<int32_t>& out) const;

    std::vector<NormalizerStep> normalizer_;
    PreTokenizer pre_tokenizer_;
    BpeModel model_;
    text::AddedTokenSplitter raw_tokens_;         // added tokens matched in the original text
    text::AddedTokenSplitter normalized_tokens_;  // and those matched after normalization
    std::optional<std::vector<DecoderStep>> decoder_;
    std::vector<int32_t> prefix_ids_, suffix_ids_;
    std::unordered_map<int32_t, std::string> added_content_;  // id -> added token text
    // When BpeModel::cuts_before_runs_of allows it, pieces are cut before every run of this
    // marker ("▁"), so that SentencePiece-style tokenizers, whose pre-tokenizer leaves the
    // whole text as one piece, run BPE (and the word cache) on words.
    std::string cut_marker_;
    int64_t vocab_size_ = 0;
    SpecialIds special_ids_;
    uint64_t serial_;                        // keys this tokenizer's per-thread word caches
    std::optional<std::string> model_path_;  // --tokenizer-model (none when built from a spec)
};

}  // namespace mt::plugins::hf_tokenizer
