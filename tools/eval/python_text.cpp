#include "python_text.h"

namespace mt::eval {

namespace {

// The characters outside ASCII that str.isspace() accepts: U+0085, U+00A0, U+1680,
// U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000, as UTF-8.
size_t multibyte_space(unsigned char b0, unsigned char b1, unsigned char b2, size_t avail) {
    if (avail >= 2 && b0 == 0xC2 && (b1 == 0x85 || b1 == 0xA0)) return 2;
    if (avail < 3) return 0;
    if (b0 == 0xE1 && b1 == 0x9A && b2 == 0x80) return 3;
    if (b0 == 0xE2 && b1 == 0x80 &&
        ((b2 >= 0x80 && b2 <= 0x8A) || b2 == 0xA8 || b2 == 0xA9 || b2 == 0xAF))
        return 3;
    if (b0 == 0xE2 && b1 == 0x81 && b2 == 0x9F) return 3;
    if (b0 == 0xE3 && b1 == 0x80 && b2 == 0x80) return 3;
    return 0;
}

bool ascii_space(unsigned char c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
}

}  // namespace

size_t python_space_at(std::string_view s, size_t i) {
    const auto byte = [&](size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0; };
    if (i >= s.size()) return 0;
    if (byte(i) < 0x80) return ascii_space(byte(i)) ? 1 : 0;
    return multibyte_space(byte(i), byte(i + 1), byte(i + 2), s.size() - i);
}

size_t python_space_before(std::string_view s, size_t end) {
    if (end == 0) return 0;
    const auto c = static_cast<unsigned char>(s[end - 1]);
    if (c < 0x80) return ascii_space(c) ? 1 : 0;
    // In valid UTF-8 a lead byte two or three back starts the character that ends here.
    for (size_t n : {size_t(2), size_t(3)})
        if (end >= n && python_space_at(s, end - n) == n) return n;
    return 0;
}

std::string_view python_strip(std::string_view s) {
    size_t begin = 0, end = s.size();
    while (size_t n = python_space_at(s, begin)) begin += n;
    while (end > begin)
        if (size_t n = python_space_before(s, end))
            end -= n;
        else
            break;
    return s.substr(begin, end - begin);
}

std::vector<std::string_view> python_split(std::string_view s) {
    std::vector<std::string_view> words;
    size_t i = 0;
    while (i < s.size()) {
        while (size_t n = python_space_at(s, i)) i += n;
        if (i >= s.size()) break;
        const size_t start = i;
        while (i < s.size() && python_space_at(s, i) == 0) ++i;
        words.push_back(s.substr(start, i - start));
    }
    return words;
}

}  // namespace mt::eval
