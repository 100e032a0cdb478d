#include "task_text.h"

#include <simdjson.h>

#include <fstream>
#include <limits>

#include "mt/error.h"
#include "python_text.h"

namespace mt::eval {

void for_each_text_line(const std::filesystem::path& path,
                        const std::function<void(std::string_view line, int64_t number)>& fn) {
    MT_CHECK(std::filesystem::is_regular_file(path), path.string(), ": no such file");
    std::ifstream in(path, std::ios::binary);
    MT_CHECK(in.good(), path.string(), ": cannot open the file");
    std::string chunk;
    int64_t number = 0;
    // getline splits at "\n"; a "\r" inside a chunk ends a line too, and one that closes the
    // chunk is either half of "\r\n" or the file's last terminator: no empty line follows it.
    while (std::getline(in, chunk, '\n')) {
        std::string_view rest = chunk;
        while (true) {
            const size_t cr = rest.find('\r');
            const std::string_view line = rest.substr(0, cr);
            ++number;
            MT_CHECK(simdjson::validate_utf8(line.data(), line.size()), path.string(), ":", number,
                     ": not UTF-8 text");
            fn(line, number);
            if (cr == std::string_view::npos || cr + 1 == rest.size()) break;
            rest.remove_prefix(cr + 1);
        }
    }
    MT_CHECK(!in.bad(), path.string(), ": cannot read the file");
}

std::string python_replace(std::string_view text, std::string_view old, std::string_view new_) {
    MT_CHECK(!old.empty(), "python_replace: empty pattern");
    std::string out;
    out.reserve(text.size());
    size_t begin = 0;
    for (size_t at; (at = text.find(old, begin)) != std::string_view::npos;
         begin = at + old.size()) {
        out.append(text.substr(begin, at - begin));
        out.append(new_);
    }
    out.append(text.substr(begin));
    return out;
}

std::string clean_text(std::string_view text) {
    // "\n" is whitespace, so the collapse below also turns each newline into a space.
    std::string collapsed;
    collapsed.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        size_t n = python_space_at(text, i);
        if (n == 0) {
            collapsed.push_back(text[i++]);
            continue;
        }
        while (n != 0) {
            i += n;
            n = python_space_at(text, i);
        }
        collapsed.push_back(' ');
    }
    for (int pass = 0; pass < 3; ++pass) collapsed = python_replace(collapsed, " . ", ". ");
    return collapsed;
}

std::optional<int64_t> python_int(std::string_view text) {
    std::string_view s = python_strip(text);
    bool negative = false;
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
        negative = s[0] == '-';
        s.remove_prefix(1);
    }
    if (s.empty()) return std::nullopt;
    // Accumulated as a negative number so that the int64 minimum fits.
    int64_t value = 0;
    bool after_digit = false;
    for (char c : s) {
        if (c == '_') {
            if (!after_digit) return std::nullopt;
            after_digit = false;
            continue;
        }
        if (c < '0' || c > '9') return std::nullopt;
        const int digit = c - '0';
        if (value < (std::numeric_limits<int64_t>::min() + digit) / 10) return std::nullopt;
        value = value * 10 - digit;
        after_digit = true;
    }
    if (!after_digit) return std::nullopt;  // empty, or a trailing underscore
    if (negative) return value;
    if (value == std::numeric_limits<int64_t>::min()) return std::nullopt;
    return -value;
}

}  // namespace mt::eval
