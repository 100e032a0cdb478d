// Python's str semantics over UTF-8 for the Jinja engine: lengths, indices and slices count code
// points, whitespace and case are Unicode's (ICU), floats print as repr() does.
#include <unicode/uchar.h>
#include <unicode/ustring.h>

#include <algorithm>
#include <cmath>

#include "jinja_object.h"
#include "mt/data/dataset_description.h"
#include "mt/text/utf8.h"

namespace mt::text::jinja {

namespace {

bool is_ascii(std::string_view s) {
    for (char c : s)
        if (static_cast<unsigned char>(c) >= 0x80) return false;
    return true;
}

// The byte offset where each code point starts, and s.size() at the end. Bytes that are not
// UTF-8 (not from JSON, which is checked) count one each.
std::vector<size_t> starts(std::string_view s) {
    std::vector<size_t> out;
    const auto* begin = reinterpret_cast<const uint8_t*>(s.data());
    const auto* end = begin + s.size();
    for (const uint8_t* p = begin; p < end;) {
        out.push_back(size_t(p - begin));
        uint32_t cp = 0;
        const size_t len = decode_utf8(p, end, cp);
        p += len ? len : 1;
    }
    out.push_back(s.size());
    return out;
}

// Calls f(cp, byte offset, byte length) for each code point.
template <class F>
void for_each_cp(std::string_view s, F f) {
    const auto* begin = reinterpret_cast<const uint8_t*>(s.data());
    const auto* end = begin + s.size();
    for (const uint8_t* p = begin; p < end;) {
        uint32_t cp = 0;
        size_t len = decode_utf8(p, end, cp);
        if (!len) cp = 0xFFFD, len = 1;
        f(cp, size_t(p - begin), len);
        p += len;
    }
}

std::u16string to_utf16(std::string_view s) {
    std::u16string out;
    for_each_cp(s, [&](uint32_t cp, size_t, size_t) {
        if (cp >= 0x10000) {
            out += char16_t(0xD800 + ((cp - 0x10000) >> 10));
            out += char16_t(0xDC00 + ((cp - 0x10000) & 0x3FF));
        } else {
            out += char16_t(cp);
        }
    });
    return out;
}

std::string from_utf16(const std::u16string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        uint32_t cp = s[i];
        if (cp >= 0xD800 && cp < 0xDC00 && i + 1 < s.size() && s[i + 1] >= 0xDC00 &&
            s[i + 1] < 0xE000)
            cp = 0x10000 + ((cp - 0xD800) << 10) + (s[++i] - 0xDC00);
        append_utf8(out, cp);
    }
    return out;
}

// Full case mapping of the root locale (what Python's str.upper/lower do: "ß" -> "SS").
std::string map_case(std::string_view s, bool upper) {
    if (is_ascii(s)) {
        std::string out(s);
        for (char& c : out)
            c = upper ? (c >= 'a' && c <= 'z' ? char(c - 32) : c)
                      : (c >= 'A' && c <= 'Z' ? char(c + 32) : c);
        return out;
    }
    const std::u16string in = to_utf16(s);
    std::u16string out(in.size() * 3 + 8, u'\0');
    UErrorCode status = U_ZERO_ERROR;
    const auto fn = upper ? u_strToUpper : u_strToLower;
    const int32_t n =
        fn(reinterpret_cast<UChar*>(out.data()), int32_t(out.size()),
           reinterpret_cast<const UChar*>(in.data()), int32_t(in.size()), "", &status);
    if (U_FAILURE(status)) fail("case mapping failed");
    out.resize(size_t(n));
    return from_utf16(out);
}

std::string cp_string(uint32_t cp) {
    std::string out;
    append_utf8(out, cp);
    return out;
}

}  // namespace

bool is_python_space(uint32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

size_t code_points(std::string_view s) {
    if (is_ascii(s)) return s.size();
    return starts(s).size() - 1;
}

size_t code_point_offset(std::string_view s, size_t byte) {
    return code_points(s.substr(0, byte));
}

std::string repr_float(double d) {
    if (std::isnan(d)) return "nan";  // Python's repr; json.dumps's spelling is NaN, Infinity
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    return data::python_float_repr(d);
}

std::string python_strip(std::string_view s, const Value* chars, bool left, bool right) {
    std::vector<uint32_t> set;
    const bool whitespace = !chars || chars->is_none();
    if (!whitespace) {
        if (!chars->is_string()) fail("strip arg must be None or str, not " + chars->type_name());
        for_each_cp(chars->as_string(), [&](uint32_t cp, size_t, size_t) { set.push_back(cp); });
    }
    const auto strip = [&](uint32_t cp) {
        return whitespace ? is_python_space(cp)
                          : std::find(set.begin(), set.end(), cp) != set.end();
    };
    size_t begin = s.size(), end = 0;  // the first and past the last kept code point
    for_each_cp(s, [&](uint32_t cp, size_t at, size_t len) {
        if (strip(cp)) return;
        begin = std::min(begin, at);
        end = at + len;
    });
    if (!left) begin = 0;
    if (!right) end = s.size();
    return begin < end ? std::string(s.substr(begin, end - begin)) : "";
}

std::string python_upper(std::string_view s) {
    return map_case(s, true);
}

std::string python_lower(std::string_view s) {
    return map_case(s, false);
}

std::string python_capitalize(std::string_view s) {
    if (s.empty()) return "";
    std::string first;
    size_t rest = 0;
    for_each_cp(s, [&](uint32_t cp, size_t at, size_t len) {
        if (at == 0) first = cp_string(uint32_t(u_totitle(UChar32(cp)))), rest = len;
    });
    return first + python_lower(s.substr(rest));
}

std::string python_title(std::string_view s) {
    std::string out;
    bool previous_cased = false;
    for_each_cp(s, [&](uint32_t cp, size_t, size_t) {
        const UChar32 c = UChar32(cp);
        out += cp_string(uint32_t(previous_cased ? u_tolower(c) : u_totitle(c)));
        previous_cased = u_hasBinaryProperty(c, UCHAR_CASED);
    });
    return out;
}

std::vector<std::string> python_splitlines(std::string_view s, bool keepends) {
    std::vector<std::string> lines;
    size_t line_start = 0;
    size_t skip_lf_at = std::string_view::npos;  // where a \n after \r continues its line break
    for_each_cp(s, [&](uint32_t cp, size_t at, size_t len) {
        if (skip_lf_at == at && cp == '\n') {
            lines.back() += keepends ? "\n" : "";
            line_start = at + len;
            return;
        }
        skip_lf_at = std::string_view::npos;
        const bool boundary = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C ||
                              (cp >= 0x1C && cp <= 0x1E) || cp == 0x85 || cp == 0x2028 ||
                              cp == 0x2029;
        if (!boundary) return;
        lines.emplace_back(s.substr(line_start, (keepends ? at + len : at) - line_start));
        line_start = at + len;
        if (cp == '\r') skip_lf_at = at + len;
    });
    if (line_start < s.size()) lines.emplace_back(s.substr(line_start));
    return lines;
}

std::vector<std::string> python_split(std::string_view s, const Value* sep, int64_t maxsplit,
                                      bool from_right) {
    std::vector<std::string> parts;
    if (maxsplit < 0) maxsplit = INT64_MAX;
    if (!sep || sep->is_none()) {                      // runs of whitespace, no empty parts
        std::vector<std::pair<size_t, size_t>> words;  // byte ranges
        size_t word_start = std::string_view::npos;
        for_each_cp(s, [&](uint32_t cp, size_t at, size_t) {
            if (is_python_space(cp)) {
                if (word_start != std::string_view::npos)
                    words.emplace_back(word_start, at), word_start = std::string_view::npos;
            } else if (word_start == std::string_view::npos) {
                word_start = at;
            }
        });
        if (word_start != std::string_view::npos) words.emplace_back(word_start, s.size());
        // After maxsplit splits the rest is one part, its inner whitespace kept.
        const size_t n = words.size();
        for (size_t k = 0; k < n; ++k) {
            const auto& [b, e] = from_right ? words[n - 1 - k] : words[k];
            if (int64_t(k) < maxsplit)
                parts.emplace_back(s.substr(b, e - b));
            else
                parts.emplace_back(from_right ? s.substr(0, e) : s.substr(b));
            if (int64_t(k) >= maxsplit) break;
        }
        if (from_right) std::reverse(parts.begin(), parts.end());
        return parts;
    }
    if (!sep->is_string()) fail("must be str or None, not " + sep->type_name());
    const std::string& d = sep->as_string();
    if (d.empty()) fail("empty separator");
    if (!from_right) {
        size_t at = 0;
        for (int64_t i = 0; i < maxsplit; ++i) {
            const size_t found = s.find(d, at);
            if (found == std::string_view::npos) break;
            parts.emplace_back(s.substr(at, found - at));
            at = found + d.size();
        }
        parts.emplace_back(s.substr(at));
        return parts;
    }
    size_t end = s.size();
    for (int64_t i = 0; i < maxsplit && end >= d.size(); ++i) {
        const size_t found = s.rfind(d, end - d.size());
        if (found == std::string_view::npos) break;
        parts.emplace_back(s.substr(found + d.size(), end - found - d.size()));
        end = found;
    }
    parts.emplace_back(s.substr(0, end));
    std::reverse(parts.begin(), parts.end());
    return parts;
}

std::string python_replace(std::string_view s, std::string_view old, std::string_view with,
                           int64_t count) {
    if (count < 0) count = INT64_MAX;
    std::string out;
    if (old.empty()) {  // Python inserts `with` around every character
        int64_t done = 0;
        for_each_cp(s, [&](uint32_t, size_t at, size_t len) {
            if (done++ < count) out += with;
            check_length(out.size() + len);
            out += s.substr(at, len);
        });
        if (done < count) out += with;
        check_length(out.size());
        return out;
    }
    size_t at = 0;
    for (int64_t i = 0; i < count; ++i) {
        const size_t found = s.find(old, at);
        if (found == std::string_view::npos) break;
        out.append(s.substr(at, found - at)).append(with);
        check_length(out.size());
        at = found + old.size();
    }
    out += s.substr(at);
    check_length(out.size());
    return out;
}

Value python_slice(const Value& value, std::optional<int64_t> start, std::optional<int64_t> stop,
                   int64_t step) {
    const bool text = value.is_string();
    const std::string& s = value.as_string();
    const bool ascii = text && is_ascii(s);
    std::vector<size_t> at;
    if (text && !ascii) at = starts(s);
    const int64_t n =
        text ? (ascii ? int64_t(s.size()) : int64_t(at.size()) - 1) : int64_t(value.items().size());
    // slice.indices(n)
    const auto clamp = [&](std::optional<int64_t> v, int64_t fallback) {
        if (!v) return fallback;
        int64_t i = *v < 0 ? *v + n : *v;
        if (step > 0) return std::clamp<int64_t>(i, 0, n);
        return std::clamp<int64_t>(i, -1, n - 1);
    };
    const int64_t first = clamp(start, step > 0 ? 0 : n - 1);
    const int64_t last = clamp(stop, step > 0 ? n : -1);
    if (text && ascii && step == 1)
        return Value::string(first < last ? s.substr(first, last - first) : "");
    if (text && step == 1)
        return Value::string(first < last ? s.substr(at[first], at[last] - at[first]) : "");
    std::string out;
    std::vector<Value> items;
    for (int64_t i = first; step > 0 ? i < last : i > last; i += step) {
        if (text)
            out += ascii ? s.substr(size_t(i), 1) : s.substr(at[i], at[i + 1] - at[i]);
        else
            items.push_back(value.items()[size_t(i)]);
    }
    if (text) return Value::string(std::move(out));
    return value.kind() == Value::Kind::tuple ? Value::tuple(std::move(items))
                                              : Value::list(std::move(items));
}

std::optional<Value> python_index(const Value& value, int64_t index) {
    if (value.is_string()) {
        const std::string& s = value.as_string();
        if (is_ascii(s)) {
            const int64_t n = int64_t(s.size());
            if (index < 0) index += n;
            if (index < 0 || index >= n) return std::nullopt;
            return Value::string(s.substr(size_t(index), 1));
        }
        const std::vector<size_t> at = starts(s);
        const int64_t n = int64_t(at.size()) - 1;
        if (index < 0) index += n;
        if (index < 0 || index >= n) return std::nullopt;
        return Value::string(s.substr(at[index], at[index + 1] - at[index]));
    }
    const auto& items = value.items();
    const int64_t n = int64_t(items.size());
    if (index < 0) index += n;
    if (index < 0 || index >= n) return std::nullopt;
    return items[size_t(index)];
}

bool python_less(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_int() && b.is_int()) return a.as_int() < b.as_int();
        return a.as_real() < b.as_real();
    }
    if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
    if (a.is_sequence() && a.kind() == b.kind()) {
        const auto &x = a.items(), &y = b.items();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i)
            if (!(x[i] == y[i])) return python_less(x[i], y[i]);
        return x.size() < y.size();
    }
    fail("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() +
         "'");
}

}  // namespace mt::text::jinja
