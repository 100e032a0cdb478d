// core_v0.19's --tokenizer-metadata FILE: the JSON MegatronTokenizer.write_metadata writes
// beside a tokenizer ({"library", "class_name", "class_path", "model_type", "chat_template"}),
// which build_tokenizer hands MegatronTokenizer.from_pretrained in place of {"library": <the
// --tokenizer-type's>}. Its library must be the one --tokenizer-type loads with (megatron for
// GPT2BPETokenizer and BertWordPiece*, sentencepiece, tiktoken, huggingface); its model_type
// picks the text tokenizer class (all alike but in name: the dataset identity's "class"); its
// chat_template comes before --chat-template's. A tokenizer_class of its own is refused.
#pragma once

#include <string>

#include "mt/api.h"
#include "mt/tokenizer.h"

namespace mt {

// Reads `path` into options (metadata_path, core_class, metadata_chat_template) for
// `tokenizer_type`; mt::Error naming the file and key for what Megatron would reject or what is
// not supported. The null types ignore the file, as build_tokenizer does.
MT_API void read_tokenizer_metadata(const std::string& path, const std::string& tokenizer_type,
                                    TokenizerOptions& options);

}  // namespace mt
