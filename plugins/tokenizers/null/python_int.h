// Python's int(str) for base 10, as Megatron's NullTokenizer applies it to each piece of the
// text: surrounding whitespace, a sign, Unicode decimal digits and single underscores between
// digits are accepted; anything else is rejected.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace mt::plugins::null {

enum class IntParse { kOk, kInvalid, kOutOfRange };

struct ParsedInt {
    IntParse status = IntParse::kInvalid;
    int32_t value = 0;
};

// Parses `piece` (UTF-8) as int() would; values outside int32 are kOutOfRange.
ParsedInt parse_python_int(std::string_view piece);

}  // namespace mt::plugins::null
