// Python json.dumps(indent=4) / float repr, and MD5, for Megatron's dataset cache keys.
#include "mt/data/dataset_description.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "mt/error.h"

namespace mt::data {

std::string python_float_repr(double value) {
    if (std::isnan(value)) return "NaN";  // what json.dumps prints
    if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
    if (value == 0.0) return std::signbit(value) ? "-0.0" : "0.0";
    // Shortest round-trip digits in scientific form: [-]d[.ddd]e[+-]xx.
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
    std::string sci(buf, res.ptr);
    bool negative = sci[0] == '-';
    if (negative) sci.erase(0, 1);
    size_t e = sci.find('e');
    int exponent = std::stoi(sci.substr(e + 1));
    std::string digits;
    for (size_t i = 0; i < e; ++i) {
        if (sci[i] != '.') digits += sci[i];
    }
    std::string out = negative ? "-" : "";
    int decpt = exponent + 1;  // position of the decimal point relative to the digits
    if (decpt <= -4 || decpt > 16) {
        out += digits[0];
        if (digits.size() > 1) out += "." + digits.substr(1);
        char exp[16];
        std::snprintf(exp, sizeof(exp), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        return out + exp;
    }
    if (decpt <= 0) return out + "0." + std::string(-decpt, '0') + digits;
    if (static_cast<size_t>(decpt) >= digits.size()) {
        return out + digits + std::string(decpt - digits.size(), '0') + ".0";
    }
    return out + digits.substr(0, decpt) + "." + digits.substr(decpt);
}

// ---- JSON ----

JsonValue JsonValue::boolean(bool v) {
    JsonValue j;
    j.kind_ = Kind::boolean;
    j.bool_ = v;
    return j;
}
JsonValue JsonValue::integer(int64_t v) {
    JsonValue j;
    j.kind_ = Kind::integer;
    j.int_ = v;
    return j;
}
JsonValue JsonValue::real(double v) {
    JsonValue j;
    j.kind_ = Kind::real;
    j.real_ = v;
    return j;
}
JsonValue JsonValue::string(std::string v) {
    JsonValue j;
    j.kind_ = Kind::string;
    j.string_ = std::move(v);
    return j;
}
JsonValue JsonValue::array(std::vector<JsonValue> items) {
    JsonValue j;
    j.kind_ = Kind::array;
    j.items_ = std::move(items);
    return j;
}
JsonValue JsonValue::object() {
    JsonValue j;
    j.kind_ = Kind::object;
    return j;
}

JsonValue& JsonValue::set(const std::string& key, JsonValue value) {
    MT_CHECK(kind_ == Kind::object, "JsonValue::set('", key, "') on a non-object");
    keys_.push_back(key);
    items_.push_back(std::move(value));
    return *this;
}

JsonValue& JsonValue::push(JsonValue value) {
    MT_CHECK(kind_ == Kind::array, "JsonValue::push on a non-array");
    items_.push_back(std::move(value));
    return *this;
}

namespace {

void append_u16(std::string& out, uint32_t unit) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "\\u%04x", unit);
    out += buf;
}

// Python's json encoder with ensure_ascii=True: non-ASCII as \uXXXX (surrogate pairs above
// U+FFFF), the usual short escapes, other control characters as \u00XX.
void dump_string(std::string& out, const std::string& s) {
    out += '"';
    for (size_t i = 0; i < s.size();) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            switch (c) {
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
                    if (c < 0x20) {
                        append_u16(out, c);
                    } else {
                        out += static_cast<char>(c);
                    }
            }
            ++i;
            continue;
        }
        int len = (c >= 0xf0) ? 4 : (c >= 0xe0) ? 3 : 2;
        MT_CHECK(i + len <= s.size(), "invalid UTF-8 in dataset description string");
        uint32_t cp = c & (0xff >> (len + 1));
        for (int k = 1; k < len; ++k)
            cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
        if (cp >= 0x10000) {
            cp -= 0x10000;
            append_u16(out, 0xd800 | (cp >> 10));
            append_u16(out, 0xdc00 | (cp & 0x3ff));
        } else {
            append_u16(out, cp);
        }
        i += len;
    }
    out += '"';
}

}  // namespace

void JsonValue::dump(std::string& out, int depth) const {
    auto newline = [&](int d) {
        out += '\n';
        out.append(static_cast<size_t>(d) * 4, ' ');
    };
    switch (kind_) {
        case Kind::null:
            out += "null";
            return;
        case Kind::boolean:
            out += bool_ ? "true" : "false";
            return;
        case Kind::integer:
            out += std::to_string(int_);
            return;
        case Kind::real:
            out += python_float_repr(real_);
            return;
        case Kind::string:
            dump_string(out, string_);
            return;
        case Kind::array:
        case Kind::object: {
            bool is_object = kind_ == Kind::object;
            if (items_.empty()) {
                out += is_object ? "{}" : "[]";
                return;
            }
            out += is_object ? '{' : '[';
            for (size_t i = 0; i < items_.size(); ++i) {
                if (i) out += ',';
                newline(depth + 1);
                if (is_object) {
                    dump_string(out, keys_[i]);
                    out += ": ";
                }
                items_[i].dump(out, depth + 1);
            }
            newline(depth);
            out += is_object ? '}' : ']';
            return;
        }
    }
}

std::string JsonValue::dumps() const {
    std::string out;
    dump(out, 0);
    return out;
}

// ---- MD5 (RFC 1321) ----

namespace {

constexpr uint32_t kMd5Shift[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                    5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                                    4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                    6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};

// K[i] = floor(|sin(i + 1)| * 2^32).
constexpr uint32_t kMd5K[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};

uint32_t rotl(uint32_t x, uint32_t c) {
    return (x << c) | (x >> (32 - c));
}

}  // namespace

std::string md5_hex(const std::string& data) {
    uint32_t h[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
    std::string msg = data;
    uint64_t bit_len = static_cast<uint64_t>(data.size()) * 8;
    msg += static_cast<char>(0x80);
    while (msg.size() % 64 != 56) msg += '\0';
    for (int i = 0; i < 8; ++i) msg += static_cast<char>((bit_len >> (8 * i)) & 0xff);
    for (size_t chunk = 0; chunk < msg.size(); chunk += 64) {
        uint32_t m[16];
        for (int i = 0; i < 16; ++i) {
            const auto* p = reinterpret_cast<const unsigned char*>(msg.data() + chunk + 4 * i);
            m[i] = p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
        }
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
        for (uint32_t i = 0; i < 64; ++i) {
            uint32_t f, g;
            if (i < 16) {
                f = (b & c) | (~b & d);
                g = i;
            } else if (i < 32) {
                f = (d & b) | (~d & c);
                g = (5 * i + 1) % 16;
            } else if (i < 48) {
                f = b ^ c ^ d;
                g = (3 * i + 5) % 16;
            } else {
                f = c ^ (b | ~d);
                g = (7 * i) % 16;
            }
            f = f + a + kMd5K[i] + m[g];
            a = d;
            d = c;
            c = b;
            b = b + rotl(f, kMd5Shift[i]);
        }
        h[0] += a;
        h[1] += b;
        h[2] += c;
        h[3] += d;
    }
    std::string hex;
    char buf[3];
    for (uint32_t word : h) {
        for (int i = 0; i < 4; ++i) {
            std::snprintf(buf, sizeof(buf), "%02x", (word >> (8 * i)) & 0xff);
            hex += buf;
        }
    }
    return hex;
}

JsonValue tokenizer_json(const TokenizerIdentity& t) {
    JsonValue j = JsonValue::object();
    j.set("class", JsonValue::string(t.class_name));
    const auto path = [](const std::optional<std::string>& p) {
        return p ? JsonValue::string(*p) : JsonValue();
    };
    if (t.single_path) {
        MT_CHECK(t.paths.size() == 1, "a tokenizer identity of one path holds ", t.paths.size());
        j.set("tokenizer_path", path(t.paths[0]));
    } else {
        JsonValue paths = JsonValue::array();
        for (const auto& p : t.paths) paths.push(path(p));
        j.set("tokenizer_path", std::move(paths));
    }
    for (const auto& [key, value] : t.options) j.set(key, JsonValue::string(value));
    return j;
}

JsonValue split_matrix_json(const std::optional<SplitMatrix>& matrix) {
    if (!matrix) return JsonValue();
    JsonValue j = JsonValue::array();
    for (const auto& bookend : *matrix) {
        if (!bookend) {
            j.push(JsonValue());
            continue;
        }
        JsonValue start = bookend->start_is_int
                              ? JsonValue::integer(static_cast<int64_t>(bookend->start))
                              : JsonValue::real(bookend->start);
        j.push(JsonValue::array({start, JsonValue::real(bookend->end)}));
    }
    return j;
}

JsonValue dataset_identifiers(const DatasetIdentity& d) {
    JsonValue j = JsonValue::object();
    j.set("class", JsonValue::string(d.class_name));
    j.set("dataset_path", d.dataset_path ? JsonValue::string(*d.dataset_path) : JsonValue());
    j.set("num_samples", d.num_samples ? JsonValue::integer(*d.num_samples) : JsonValue());
    j.set("index_split", JsonValue::string(split_name(d.split)));
    j.set("random_seed", JsonValue::integer(d.random_seed));
    j.set("sequence_length", JsonValue::integer(d.sequence_length));
    j.set("split", d.split_text ? JsonValue::string(*d.split_text) : JsonValue());
    j.set("split_matrix", split_matrix_json(d.split_matrix));
    j.set("tokenizer", tokenizer_json(d.tokenizer));
    return j;
}

}  // namespace mt::data
