#include "decoder.h"

#include <utility>

#include "mt/text/byte_level.h"
#include "mt/text/replace_all.h"
#include "mt/text/utf8.h"
#include "pre_tokenizer.h"

namespace mt::plugins::hf_tokenizer {

namespace {

using text::append_replacing_invalid;
using text::decode_utf8;
using text::kByteLevel;

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// The characters of a UTF-8 string as (offset, length) pairs.
std::vector<std::pair<size_t, size_t>> chars_of(const std::string& s) {
    std::vector<std::pair<size_t, size_t>> chars;
    const auto* p = reinterpret_cast<const uint8_t*>(s.data());
    for (size_t i = 0; i < s.size();) {
        uint32_t cp = 0;
        size_t len = decode_utf8(p + i, p + s.size(), cp);
        if (len == 0) len = 1;
        chars.emplace_back(i, len);
        i += len;
    }
    return chars;
}

// ByteLevel: every token's characters back to bytes (a token with any other character keeps
// its own UTF-8 bytes), all joined, then read as UTF-8 with U+FFFD for bad sequences.
std::vector<std::string> byte_level(const std::vector<std::string>& tokens) {
    std::string bytes;
    for (const std::string& t : tokens) {
        std::string mapped;
        bool all_bytes = true;
        const auto* p = reinterpret_cast<const uint8_t*>(t.data());
        for (size_t i = 0; i < t.size() && all_bytes;) {
            uint32_t cp = 0;
            const size_t len = decode_utf8(p + i, p + t.size(), cp);
            const int b = len ? kByteLevel.byte_of(cp) : -1;
            if (b < 0) all_bytes = false;
            mapped.push_back(char(b));
            i += len ? len : 1;
        }
        bytes += all_bytes ? mapped : t;
    }
    std::string text;
    append_replacing_invalid(text, bytes);
    return {std::move(text)};
}

// "<0xAB>" -> the byte, or -1.
int fallback_byte(const std::string& t) {
    if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
    auto digit = [](char c) {
        return c >= '0' && c <= '9'   ? c - '0'
               : c >= 'A' && c <= 'F' ? c - 'A' + 10
               : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                      : -1;
    };
    const int hi = digit(t[3]), lo = digit(t[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// ByteFallback: runs of byte tokens become their UTF-8 text, or one U+FFFD per byte when the
// run is not valid UTF-8.
std::vector<std::string> byte_fallback(std::vector<std::string> tokens) {
    std::vector<std::string> out;
    std::string run;
    size_t run_tokens = 0;
    auto flush = [&] {
        if (run_tokens == 0) return;
        std::string checked;
        append_replacing_invalid(checked, run);
        if (checked == run) {
            out.push_back(std::move(run));
        } else {
            for (size_t i = 0; i < run_tokens; ++i) out.emplace_back(kReplacementChar);
        }
        run.clear();
        run_tokens = 0;
    };
    for (std::string& t : tokens) {
        if (int b = fallback_byte(t); b >= 0) {
            run.push_back(char(b));
            ++run_tokens;
        } else {
            flush();
            out.push_back(std::move(t));
        }
    }
    flush();
    return out;
}

}  // namespace

std::string decode_tokens(const std::optional<std::vector<DecoderStep>>& steps,
                          std::vector<std::string> tokens) {
    std::string text;
    if (!steps) {
        for (size_t i = 0; i < tokens.size(); ++i) text += (i ? " " : "") + tokens[i];
        return text;
    }
    for (const DecoderStep& step : *steps) {
        switch (step.kind) {
            case DecoderStep::kByteLevel:
                tokens = byte_level(tokens);
                break;
            case DecoderStep::kMetaspace:
                // The first token loses every replacement character, the others turn them into
                // spaces (tokenizers' Metaspace::decode_chain).
                for (size_t i = 0; i < tokens.size(); ++i) {
                    const bool drop = i == 0 && step.prepend_scheme != PrependScheme::kNever;
                    text::replace_all(tokens[i], step.content, drop ? "" : " ");
                }
                break;
            case DecoderStep::kReplace:
                for (std::string& t : tokens) text::replace_all(t, step.pattern, step.content);
                break;
            case DecoderStep::kByteFallback:
                tokens = byte_fallback(std::move(tokens));
                break;
            case DecoderStep::kFuse: {
                std::string fused;
                for (const std::string& t : tokens) fused += t;
                tokens.assign(1, std::move(fused));
                break;
            }
            case DecoderStep::kStrip:
                for (std::string& t : tokens) {
                    const auto chars = chars_of(t);
                    auto is_content = [&](size_t i) {
                        return t.compare(chars[i].first, chars[i].second, step.content) == 0;
                    };
                    size_t first = 0, last = chars.size();
                    while (first < step.start && first < last && is_content(first)) ++first;
                    for (size_t k = 0; k < step.stop && last > first && is_content(last - 1); ++k)
                        --last;
                    const size_t from = first < chars.size() ? chars[first].first : t.size();
                    const size_t to = last < chars.size() ? chars[last].first : t.size();
                    t = t.substr(from, to - from);
                }
                break;
        }
    }
    for (const std::string& t : tokens) text += t;
    return text;
}

}  // namespace mt::plugins::hf_tokenizer
