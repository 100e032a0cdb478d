// Python str semantics on UTF-8 text, as Megatron's task code applies them: whitespace is what
// str.isspace() and the regex class \s accept (Unicode spaces included), for strip() and split().
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace mt::eval {

// Byte length of the whitespace character starting at s[i], or 0 when s[i] starts none.
size_t python_space_at(std::string_view s, size_t i);
// Byte length of the whitespace character ending just before s[end], or 0 when none does.
size_t python_space_before(std::string_view s, size_t end);

// str.strip() with no argument.
std::string_view python_strip(std::string_view s);
// str.split() with no argument: runs of whitespace separate, none at the ends.
std::vector<std::string_view> python_split(std::string_view s);

}  // namespace mt::eval
