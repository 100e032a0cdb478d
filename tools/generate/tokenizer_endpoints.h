// The tokenizer endpoints vLLM serves and lm-evaluation-harness's remote tokenizer uses
// (`tokenizer_backend=remote`, detected by `local-completions` on its own): GET /tokenizer_info,
// POST /tokenize and POST /detokenize, over the model's own tokenizer, so a client needs no copy
// of it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "mt/tokenizer.h"

namespace mt::generate_tool {

struct TokenizeRequest {
    std::string prompt;
    bool add_special_tokens = true;  // false: without the ids the tokenizer adds by itself
};

// {"prompt": "...", "add_special_tokens": bool}, or the message for a malformed body.
std::variant<TokenizeRequest, std::string> parse_tokenize_request(std::string_view body);
// {"tokens": [ids]} with ids below vocab_size, or the message.
std::variant<std::vector<int32_t>, std::string> parse_detokenize_request(std::string_view body,
                                                                         int64_t vocab_size);

// {"count", "max_model_len", "tokens"}
std::string tokenize_response(const Tokenizer& tokenizer, const TokenizeRequest& request,
                              int64_t max_model_len);
// {"prompt": text}
std::string detokenize_response(const Tokenizer& tokenizer, const std::vector<int32_t>& ids);
// {"tokenizer_class", "eos_token", "bos_token" (when it has one), "model_max_length"}: the
// special tokens as text, which clients encode back through /tokenize.
std::string tokenizer_info_response(const Tokenizer& tokenizer, int64_t eod,
                                    int64_t model_max_length);

}  // namespace mt::generate_tool
