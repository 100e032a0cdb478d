// What a Hugging Face tokenizer folder describes (tokenizer.json plus tokenizer_config.json and
// special_tokens_map.json), read into plain structs; components we do not run are rejected here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mt/text/regex_splitter.h"

namespace mt::plugins::hf_tokenizer {

struct AddedToken {
    int32_t id = 0;
    std::string content;
    bool lstrip = false;
    bool rstrip = false;
    bool normalized = false;  // matched in the normalized text instead of the original
    bool special = false;
};

// normalizers: Prepend (content before non-empty text), Replace (every `pattern` by `content`)
// and the Unicode normal forms NFC, NFD, NFKC, NFKD.
struct NormalizerStep {
    enum Kind { kPrepend, kReplace, kNfc, kNfd, kNfkc, kNfkd } kind;
    std::string pattern;
    std::string content;
};

enum class PrependScheme { kAlways, kFirst, kNever };

// What Split keeps of the matches and the text between them (tokenizers' SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct PreTokenizerStep {
    // kSplit: Split(pattern, behavior, invert);
    // kByteLevel: ByteLevel, splitting with GPT-2's regex (Isolated) when use_regex;
    // kMetaspace: spaces -> replacement, split before each when `split`.
    enum Kind { kMetaspace, kByteLevel, kSplit } kind;
    std::string replacement;  // Metaspace
    PrependScheme prepend_scheme = PrependScheme::kAlways;
    bool split = true;              // Metaspace
    bool add_prefix_space = false;  // ByteLevel
    bool use_regex = true;          // ByteLevel
    // Split: a {"Regex": ...} pattern, or else the {"String": ...} one (empty: no matches).
    std::optional<text::RegexSplitter> regex;
    std::string literal;
    SplitBehavior behavior = SplitBehavior::kIsolated;
    bool invert = false;
};

struct DecoderStep {
    enum Kind { kByteLevel, kMetaspace, kReplace, kByteFallback, kFuse, kStrip } kind;
    std::string pattern = {};  // Replace
    std::string content = {};  // Replace; Strip (one character); Metaspace replacement
    PrependScheme prepend_scheme = PrependScheme::kAlways;  // Metaspace
    size_t start = 0, stop = 0;                             // Strip
};

struct BpeSpec {
    std::vector<std::pair<std::string, int32_t>> vocab;
    std::vector<std::pair<std::string, std::string>> merges;
    std::optional<std::string> unk_token;
    bool fuse_unk = false;
    bool byte_fallback = false;
    bool ignore_merges = false;
};

struct TokenizerSpec {
    std::string source;  // the tokenizer.json path, for messages
    BpeSpec model;
    std::vector<AddedToken> added_tokens;
    std::vector<NormalizerStep> normalizer;
    std::vector<PreTokenizerStep> pre_tokenizer;
    std::optional<std::vector<DecoderStep>> decoder;  // none: tokens joined by spaces
    // The post-processor's single-sequence template: ids around the text's.
    std::vector<int32_t> prefix_ids, suffix_ids;
    // The special tokens transformers names ("bos_token", "eos_token", "unk_token", "sep_token",
    // "pad_token", "cls_token", "mask_token") -> their text.
    std::map<std::string, std::string> named_tokens;
};

// The id of a token: an added token's, else the model vocab's.
std::optional<int32_t> token_id(const TokenizerSpec& spec, const std::string& content);
// The text of a named special token ("bos_token", ...), if the folder names it.
std::optional<std::string> named_token(const TokenizerSpec& spec, const std::string& name);
// transformers' add_special_tokens: `content` becomes a special added token (found in the raw
// text), with its vocab id or the next id after the vocabulary and the added tokens.
void add_special_token(TokenizerSpec& spec, const std::string& content);

// `path` is a model folder holding tokenizer.json (and maybe tokenizer_config.json,
// special_tokens_map.json) or the tokenizer.json file itself. Applies what transformers'
// AutoTokenizer does on top of tokenizer.json: the class's own pipeline for the classes that
// rebuild it, special tokens named in the config, add_bos_token / add_eos_token.
TokenizerSpec read_tokenizer_spec(const std::string& path);

}  // namespace mt::plugins::hf_tokenizer
