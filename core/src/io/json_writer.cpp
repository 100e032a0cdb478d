// JsonWriter: separators tracked per open container; strings escaped as json.dumps does with
// ensure_ascii (code points above U+FFFF as surrogate pairs); doubles in their shortest
// round-trip form with Python's spellings of the exponent and of non-finite values.
#include "mt/io/json_writer.h"

#include <cstdio>

#include "mt/data/dataset_description.h"
#include "mt/error.h"
#include "mt/text/utf8.h"

namespace mt::io {

namespace {

void append_u(std::string& out, uint32_t unit) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", unit);
    out += buf;
}

// The code point at p (advancing p), or U+FFFD for a byte that starts no valid sequence.
uint32_t next_code_point(const unsigned char*& p, const unsigned char* end) {
    const unsigned char c = *p;
    const int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || end - p < len) {
        ++p;
        return 0xFFFD;
    }
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (int i = 1; i < len; ++i) {
        if ((p[i] & 0xC0) != 0x80) {
            ++p;
            return 0xFFFD;
        }
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        ++p;
        return 0xFFFD;
    }
    p += len;
    return cp;
}

}  // namespace

std::string json_quote(std::string_view utf8, bool ensure_ascii) {
    std::string out = "\"";
    const auto* p = reinterpret_cast<const unsigned char*>(utf8.data());
    const auto* end = p + utf8.size();
    while (p < end) {
        const uint32_t cp = next_code_point(p, end);
        switch (cp) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            default:
                if (cp >= 0x20 && cp < 0x7F) {
                    out += char(cp);
                } else if (cp >= 0x7F && !ensure_ascii) {
                    text::append_utf8(out, cp);
                } else if (cp < 0x10000) {
                    append_u(out, cp);
                } else {
                    append_u(out, 0xD800 + ((cp - 0x10000) >> 10));
                    append_u(out, 0xDC00 + ((cp - 0x10000) & 0x3FF));
                }
        }
    }
    return out + "\"";
}

void JsonWriter::separate() {
    if (after_key_) {
        after_key_ = false;
        return;
    }
    if (first_.empty()) return;
    if (!first_.back()) out_ += ", ";
    first_.back() = false;
}

JsonWriter& JsonWriter::begin_object() {
    separate();
    out_ += '{';
    first_.push_back(true);
    return *this;
}
JsonWriter& JsonWriter::end_object() {
    MT_CHECK(!first_.empty() && !after_key_, "JsonWriter: end_object without an open object");
    first_.pop_back();
    out_ += '}';
    return *this;
}
JsonWriter& JsonWriter::begin_array() {
    separate();
    out_ += '[';
    first_.push_back(true);
    return *this;
}
JsonWriter& JsonWriter::end_array() {
    MT_CHECK(!first_.empty() && !after_key_, "JsonWriter: end_array without an open array");
    first_.pop_back();
    out_ += ']';
    return *this;
}
JsonWriter& JsonWriter::key(std::string_view name) {
    separate();
    out_ += json_quote(name) + ": ";
    after_key_ = true;
    return *this;
}
JsonWriter& JsonWriter::value(std::string_view utf8) {
    separate();
    out_ += json_quote(utf8);
    return *this;
}
JsonWriter& JsonWriter::value(double v) {
    separate();
    out_ += data::python_float_repr(v);  // json.dumps: NaN, Infinity as JavaScript spells them
    return *this;
}
JsonWriter& JsonWriter::value(int64_t v) {
    separate();
    out_ += std::to_string(v);
    return *this;
}
JsonWriter& JsonWriter::value(bool v) {
    separate();
    out_ += v ? "true" : "false";
    return *this;
}
JsonWriter& JsonWriter::null() {
    separate();
    out_ += "null";
    return *this;
}

}  // namespace mt::io
