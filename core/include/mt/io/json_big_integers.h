// transformers writes tokenizer_config.json's model_max_length as
// 1000000000000000019884624838656, which Python reads and simdjson refuses (BIGINT_ERROR).
#pragma once

#include <cstddef>

#include "mt/api.h"

namespace mt::io {

// Turns each integer of more than 19 digits outside JSON strings into 0 (padded with spaces, so
// offsets stay), in place: for files whose readers use no number that long.
MT_API void zero_big_json_integers(char* text, size_t size);

}  // namespace mt::io
