// megatron-generate's request bodies: Megatron's PUT /api, POST /completions,
// /v1/chat/completions, /tokenize and /detokenize, parsed and validated as the server does before
// anything runs.
#include "api_request.h"
#include "chat_request.h"
#include "completion_request.h"
#include "fuzz_support.h"
#include "tokenizer_endpoints.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view body = mt::fuzz::as_text(data, size);
    mt::generate_tool::parse_api_request(body);
    mt::generate_tool::parse_completion_request(body, 50257);
    mt::generate_tool::parse_chat_request(body);
    mt::generate_tool::parse_tokenize_request(body);
    mt::generate_tool::parse_detokenize_request(body, 50257);
    return 0;
}
