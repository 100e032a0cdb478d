#include "bpe_files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "mt/error.h"
#include "mt/log.h"
#include "mt/text/utf8.h"
#include "unicode_classes.h"

namespace mt::plugins::gpt2bpe {

using text::append_utf8;
using text::decode_utf8;

namespace {

std::string read_whole_file(const std::string& path, const char* what) {
    MT_CHECK(!path.empty(), "GPT2BPETokenizer needs a ", what);
    std::FILE* f = std::fopen(path.c_str(), "rb");
    MT_CHECK(f != nullptr, "cannot open ", what, " '", path, "': ", std::strerror(errno));
    std::string data;
    char buf[1 << 16];
    size_t got;
    while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) data.append(buf, got);
    const bool failed = std::ferror(f) != 0;
    std::fclose(f);
    MT_CHECK(!failed, "cannot read ", what, " '", path, "'");
    return data;
}

// 1-based line and column of a byte offset, for messages.
std::string position(std::string_view text, size_t offset, const std::string& path) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < offset && i < text.size(); ++i) {
        if (text[i] == '\n') {
            ++line;
            column = 1;
        } else {
            ++column;
        }
    }
    return str(path, ":", line, ":", column);
}

// A strict reader for the one shape vocab.json has: an object of string keys and integers.
class VocabParser {
  public:
    VocabParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

    std::vector<VocabEntry> parse() {
        std::vector<VocabEntry> entries;
        skip_space();
        expect('{', "'{' opening the vocab object");
        skip_space();
        if (peek() == '}') {
            ++pos_;
        } else {
            for (;;) {
                skip_space();
                const size_t key_at = pos_;
                std::string token = parse_string();
                skip_space();
                expect(':', "':' after a key");
                skip_space();
                const int32_t id = parse_id(token, key_at);
                entries.push_back({std::move(token), id});
                skip_space();
                if (peek() == ',') {
                    ++pos_;
                    continue;
                }
                expect('}', "',' or '}' after a value");
                break;
            }
        }
        skip_space();
        if (pos_ != text_.size()) fail(pos_, "unexpected data after the vocab object");
        return entries;
    }

  private:
    [[noreturn]] void fail(size_t at, const std::string& what) const {
        MT_FAIL(position(text_, at, path_), ": invalid vocab file: ", what);
    }
    int peek() const { return pos_ < text_.size() ? uint8_t(text_[pos_]) : -1; }
    void expect(char c, const char* what) {
        if (peek() != c) fail(pos_, str("expected ", what));
        ++pos_;
    }
    void skip_space() {
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                       text_[pos_] == '\n' || text_[pos_] == '\r'))
            ++pos_;
    }

    uint32_t parse_hex4() {
        if (pos_ + 4 > text_.size()) fail(pos_, "truncated \\u escape");
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i) {
            const char c = text_[pos_ + i];
            v <<= 4;
            if (c >= '0' && c <= '9')
                v |= uint32_t(c - '0');
            else if (c >= 'a' && c <= 'f')
                v |= uint32_t(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                v |= uint32_t(c - 'A' + 10);
            else
                fail(pos_ + i, "bad hex digit in a \\u escape");
        }
        pos_ += 4;
        return v;
    }

    std::string parse_string() {
        expect('"', "a string key");
        std::string out;
        const auto* bytes = reinterpret_cast<const uint8_t*>(text_.data());
        for (;;) {
            if (pos_ >= text_.size()) fail(pos_, "unterminated string");
            const uint8_t c = bytes[pos_];
            if (c == '"') {
                ++pos_;
                return out;
            }
            if (c < 0x20) fail(pos_, "control character in a string");
            if (c == '\\') {
                if (++pos_ >= text_.size()) fail(pos_, "unterminated string");
                const char e = text_[pos_++];
                switch (e) {
                    case '"':
                        out += '"';
                        break;
                    case '\\':
                        out += '\\';
                        break;
                    case '/':
                        out += '/';
                        break;
                    case 'b':
                        out += '\b';
                        break;
                    case 'f':
                        out += '\f';
                        break;
                    case 'n':
                        out += '\n';
                        break;
                    case 'r':
                        out += '\r';
                        break;
                    case 't':
                        out += '\t';
                        break;
                    case 'u': {
                        uint32_t cp = parse_hex4();
                        // A surrogate pair is one character; a lone surrogate stays as it is,
                        // as in Python (such a token can never come out of BPE).
                        if (cp >= 0xD800 && cp <= 0xDBFF && text_.substr(pos_, 2) == "\\u") {
                            const size_t save = pos_;
                            pos_ += 2;
                            const uint32_t low = parse_hex4();
                            if (low >= 0xDC00 && low <= 0xDFFF)
                                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                            else
                                pos_ = save;
                        }
                        append_utf8(out, cp);
                        break;
                    }
                    default:
                        fail(pos_ - 1, str("unknown escape '\\", e, "'"));
                }
                continue;
            }
            uint32_t cp = 0;
            const size_t len = decode_utf8(bytes + pos_, bytes + text_.size(), cp);
            if (len == 0) fail(pos_, "invalid UTF-8");
            out.append(text_.data() + pos_, len);
            pos_ += len;
        }
    }

    int32_t parse_id(const std::string& token, size_t key_at) {
        const size_t start = pos_;
        const bool negative = peek() == '-';
        if (negative) ++pos_;
        if (peek() < '0' || peek() > '9')
            fail(start, str("the value of \"", token, "\" is not an integer"));
        const size_t digits = pos_;
        int64_t value = 0;
        while (peek() >= '0' && peek() <= '9') {
            value = value * 10 + (text_[pos_++] - '0');
            if (value > std::numeric_limits<int32_t>::max())
                fail(start, str("the id of \"", token, "\" does not fit in 32 bits"));
        }
        if (peek() == '.' || peek() == 'e' || peek() == 'E')
            fail(start, str("the id of \"", token, "\" is not an integer"));
        if (text_[digits] == '0' && pos_ - digits > 1) fail(start, "leading zeros in a number");
        if (negative && value != 0) fail(key_at, str("the id of \"", token, "\" is negative"));
        return int32_t(value);
    }

    std::string_view text_;
    const std::string& path_;
    size_t pos_ = 0;
};

// Python's str.split() separators: Unicode White_Space plus U+001C..U+001F.
bool python_space(uint32_t cp) {
    return (cp >= 0x1C && cp <= 0x1F) || UnicodeClasses::get().of(cp) == kSpace;
}

}  // namespace

std::vector<VocabEntry> parse_vocab_json(std::string_view text, const std::string& path) {
    return VocabParser(text, path).parse();
}

std::vector<VocabEntry> read_vocab_json(const std::string& path) {
    return parse_vocab_json(read_whole_file(path, "vocab file (--vocab-file)"), path);
}

std::vector<MergeRule> parse_merges_txt(std::string_view raw, const std::string& path) {
    // Universal newlines: "\r\n" and a lone "\r" both end a line.
    std::string text;
    text.reserve(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '\r') {
            text += '\n';
            if (i + 1 < raw.size() && raw[i + 1] == '\n') ++i;
        } else {
            text += raw[i];
        }
    }
    const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
    const uint8_t* end = bytes + text.size();

    std::vector<MergeRule> merges;
    size_t line_no = 1;
    size_t line_start = 0;
    for (;;) {
        const size_t nl = text.find('\n', line_start);
        const size_t line_end = nl == std::string::npos ? text.size() : nl;
        // Tokens of this line, split at Python whitespace.
        std::vector<std::string_view> tokens;
        size_t i = line_start;
        size_t token_start = std::string::npos;
        while (i < line_end) {
            uint32_t cp = 0;
            const size_t len = decode_utf8(bytes + i, end, cp);
            if (len == 0) MT_FAIL(position(text, i, path), ": invalid merges file: invalid UTF-8");
            const bool space = python_space(cp);
            if (space && token_start != std::string::npos) {
                tokens.push_back(std::string_view(text).substr(token_start, i - token_start));
                token_start = std::string::npos;
            } else if (!space && token_start == std::string::npos) {
                token_start = i;
            }
            i += len;
        }
        if (token_start != std::string::npos)
            tokens.push_back(std::string_view(text).substr(token_start, line_end - token_start));

        if (nl == std::string::npos) {
            if (line_no > 1 && !tokens.empty())
                log::warn(path, ":", line_no,
                          ": merges file does not end with a newline: its last line is ",
                          "ignored, as Megatron-LM ignores it");
            break;
        }
        if (line_no == 1 && (tokens.empty() || tokens[0].substr(0, 1) != "#"))
            log::warn(path, ":1: merges file has no '#version' header line; its first line is ",
                      "ignored, as Megatron-LM ignores it");
        if (line_no > 1 && !tokens.empty()) {
            MT_CHECK(tokens.size() == 2, path, ":", line_no,
                     ": invalid merges file: expected two tokens separated by a space, found ",
                     tokens.size());
            merges.push_back({std::string(tokens[0]), std::string(tokens[1])});
        }
        line_start = nl + 1;
        ++line_no;
    }
    return merges;
}

std::vector<MergeRule> read_merges_txt(const std::string& path) {
    return parse_merges_txt(read_whole_file(path, "merges file (--merge-file)"), path);
}

}  // namespace mt::plugins::gpt2bpe
