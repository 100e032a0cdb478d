// Text as Megatron's finetuning task readers (tasks/data_utils.py, tasks/race, tasks/glue) see
// it: the lines Python's text-mode file iteration yields, clean_text, str.replace and int().
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace mt::eval {

// Calls `fn(line, number)` for each line of a UTF-8 text file as `for line in open(path)`
// yields it in Python (universal newlines: "\n", "\r\n" and a lone "\r" each end a line; the
// terminator is not passed; a last line without one counts; numbers start at 1).
// mt::Error names the file (and line) when it is missing, unreadable or not UTF-8; errors `fn`
// throws pass through.
void for_each_text_line(const std::filesystem::path& path,
                        const std::function<void(std::string_view line, int64_t number)>& fn);

// Python's str.replace(old, new): every non-overlapping occurrence, left to right (`old` must
// not be empty).
std::string python_replace(std::string_view text, std::string_view old, std::string_view new_);

// Megatron's clean_text: newlines to spaces, each run of whitespace (Python's \s, Unicode spaces
// included) to one space, then ' . ' -> '. ' three times over.
std::string clean_text(std::string_view text);

// Python's int(text) for base 10 in ASCII: surrounding whitespace, an optional sign, digits with
// single underscores between them. nullopt where Python raises ValueError, and also for digits
// outside ASCII (which Python accepts) and values beyond int64.
std::optional<int64_t> python_int(std::string_view text);

}  // namespace mt::eval
