// A byte-level BPE tokenizer (a TikTokenizer's model) as the tokenizer.json transformers'
// converters make of it (TikTokenConverter's merges, MistralConverter's layout): the special
// tokens as added tokens and vocabulary entries at their ids, the ranks as GPT-2 byte
// characters at theirs, every split of a token into two tokens as a merge (in rank order, then
// by the parts' ranks), the split regex before ByteLevel. A special token whose text is also a
// rank's is an mt::Error "not supported yet".
#pragma once

#include <string>

#include "mt/tokenizer.h"

namespace mt::plugins::hf {

std::string byte_level_bpe_tokenizer_json(const ByteLevelBpeModel& model);

}  // namespace mt::plugins::hf
