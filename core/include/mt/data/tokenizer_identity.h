// The tokenizer's part of Megatron's dataset cache key (MegatronTokenizer.unique_identifiers)
// for a --tokenizer-type and its files, so our index caches are Megatron's.
#pragma once

#include <string>

#include "mt/api.h"
#include "mt/data/gpt_dataset.h"
#include "mt/tokenizer.h"

namespace mt::data {

// GPT2BPETokenizer -> _GPT2BPETokenizer [vocab, merges]; BertWordPiece{LowerCase,Case} ->
// _BertWordPieceTokenizer [vocab] lower_case, vocab_extra_ids; NullTokenizer -> _NullTokenizer
// [null] vocab_size. Other types: an mt::Error (their identity is not known yet).
MT_API TokenizerIdentity tokenizer_identity(const std::string& tokenizer_type,
                                            const TokenizerOptions& options);

}  // namespace mt::data
