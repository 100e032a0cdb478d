// tokenizer.json's decoder: token strings -> text, step by step as tokenizers' decode_chain
// (ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip), then joined.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tokenizer_spec.h"

namespace mt::plugins::hf_tokenizer {

// `steps` is nullopt when the file has no decoder: tokens are then joined with spaces.
std::string decode_tokens(const std::optional<std::vector<DecoderStep>>& steps,
                          std::vector<std::string> tokens);

}  // namespace mt::plugins::hf_tokenizer
