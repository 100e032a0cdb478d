// Reading --valid-data for the zero-shot tasks: a WikiText file as UTF-8 text, a LAMBADA file
// as the "text" of each JSON line; errors name the file (and the line) at fault.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace mt::eval {

// The whole file, checked to be UTF-8 (Megatron decodes it with .decode('utf-8')).
std::string read_utf8_file(const std::filesystem::path& path);

// json.loads(line)['text'] of every line (Python's readlines: a last line without a newline
// counts, an empty line is an error).
std::vector<std::string> read_lambada_texts(const std::filesystem::path& path);

}  // namespace mt::eval
