// Python's str.replace(from, to) (and Rust's): every non-overlapping occurrence, left to right.
#pragma once

#include <string>
#include <string_view>

#include "mt/api.h"

namespace mt::text {

MT_API void replace_all(std::string& s, std::string_view from, std::string_view to);

}  // namespace mt::text
