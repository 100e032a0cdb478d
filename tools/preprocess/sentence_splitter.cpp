#include "sentence_splitter.h"

#include <unicode/brkiter.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/utf8.h>

#include <map>

#include "mt/error.h"

namespace mt::preprocess {

namespace {
constexpr int64_t kChunkChars = 1000000;  // preprocess_data.py's max_len

bool is_space(UChar32 c) {
    return u_isUWhiteSpace(c);
}

// Byte length of the first `chars` code points of `s` (or all of it).
size_t prefix_bytes(std::string_view s, int64_t chars) {
    size_t i = 0;
    for (int64_t n = 0; n < chars && i < s.size(); ++n) {
        UChar32 c;
        int32_t pos = static_cast<int32_t>(i);
        U8_NEXT(s.data(), pos, static_cast<int32_t>(s.size()), c);
        i = static_cast<size_t>(pos);
    }
    return i;
}
}  // namespace

std::string icu_locale_for(const std::string& lang) {
    static const std::map<std::string, std::string> punkt = {
        {"czech", "cs"},    {"danish", "da"},     {"dutch", "nl"},     {"english", "en"},
        {"estonian", "et"}, {"finnish", "fi"},    {"french", "fr"},    {"german", "de"},
        {"greek", "el"},    {"italian", "it"},    {"malayalam", "ml"}, {"norwegian", "nb"},
        {"polish", "pl"},   {"portuguese", "pt"}, {"russian", "ru"},   {"slovene", "sl"},
        {"spanish", "es"},  {"swedish", "sv"},    {"turkish", "tr"}};
    auto it = punkt.find(lang);
    return it == punkt.end() ? lang : it->second;
}

SentenceSplitter::SentenceSplitter(const std::string& lang, bool keep_newlines)
    : keep_newlines_(keep_newlines) {
    UErrorCode status = U_ZERO_ERROR;
    icu::Locale locale(icu_locale_for(lang).c_str());
    MT_CHECK(!locale.isBogus(), "--lang ", lang, ": not a language ICU knows");
    // CLDR's abbreviation suppressions ("Mr.", "e.g.") stand in for punkt's learned ones.
    if (locale.getKeywordValue<std::string>("ss", status).empty())
        locale.setKeywordValue("ss", "standard", status);
    MT_CHECK(U_SUCCESS(status), "--lang ", lang, ": ", u_errorName(status));
    iterator_.reset(icu::BreakIterator::createSentenceInstance(locale, status));
    MT_CHECK(U_SUCCESS(status) && iterator_, "--lang ", lang,
             ": cannot create an ICU sentence break iterator: ", u_errorName(status));
}

SentenceSplitter::~SentenceSplitter() = default;

void SentenceSplitter::split(std::string_view text, std::vector<std::string>& out) {
    while (!text.empty()) {
        size_t n = prefix_bytes(text, kChunkChars);
        split_chunk(text.substr(0, n), out);
        text.remove_prefix(n);
    }
}

void SentenceSplitter::split_chunk(std::string_view chunk, std::vector<std::string>& out) {
    icu::UnicodeString u = icu::UnicodeString::fromUTF8(
        icu::StringPiece(chunk.data(), static_cast<int32_t>(chunk.size())));
    iterator_->setText(u);
    int32_t start = iterator_->first();
    for (int32_t end = iterator_->next(); end != icu::BreakIterator::DONE;
         start = end, end = iterator_->next()) {
        int32_t b = start, e = end;
        while (b < e && is_space(u.char32At(b))) b = u.moveIndex32(b, 1);
        if (!keep_newlines_)
            while (e > b && is_space(u.char32At(u.moveIndex32(e, -1)))) e = u.moveIndex32(e, -1);
        if (b == e) continue;
        std::string sentence;
        u.tempSubStringBetween(b, e).toUTF8String(sentence);
        out.push_back(std::move(sentence));
    }
}

}  // namespace mt::preprocess
