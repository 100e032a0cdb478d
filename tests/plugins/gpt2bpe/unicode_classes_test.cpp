// The generated class table against ICU: wherever ICU's (older) Unicode data assigns a code
// point, its general category / White_Space must give the same class as Python regex did.
#include "unicode_classes.h"

#include <gtest/gtest.h>
#include <unicode/uchar.h>

namespace mt::plugins::gpt2bpe {
namespace {

CharClass icu_class(UChar32 cp) {
    if (u_hasBinaryProperty(cp, UCHAR_WHITE_SPACE)) return kSpace;
    switch (u_charType(cp)) {
        case U_UPPERCASE_LETTER:
        case U_LOWERCASE_LETTER:
        case U_TITLECASE_LETTER:
        case U_MODIFIER_LETTER:
        case U_OTHER_LETTER:
            return kLetter;
        case U_DECIMAL_DIGIT_NUMBER:
        case U_LETTER_NUMBER:
        case U_OTHER_NUMBER:
            return kNumber;
        default:
            return kOther;
    }
}

TEST(Gpt2UnicodeClasses, AgreeWithIcuWhereIcuKnowsTheCodePoint) {
    const UnicodeClasses& classes = UnicodeClasses::get();
    size_t newer = 0, differ = 0;
    for (UChar32 cp = 0; cp <= 0x10FFFF; ++cp) {
        const CharClass ours = classes.of(uint32_t(cp));
        if (u_charType(cp) == U_UNASSIGNED) {
            // Assigned after ICU's Unicode version: only the table knows these.
            if (ours != kOther) ++newer;
            continue;
        }
        if (ours != icu_class(cp) && differ++ < 10)
            ADD_FAILURE() << "U+" << std::hex << cp << ": table " << int(ours) << ", ICU "
                          << int(icu_class(cp));
    }
    EXPECT_EQ(differ, 0u);
    UVersionInfo v;
    u_getUnicodeVersion(v);
    std::printf("ICU Unicode %d.%d; %zu code points are letters/numbers only in the newer table\n",
                v[0], v[1], newer);
}

TEST(Gpt2UnicodeClasses, SpacesAreRegexsNotStrIsspace) {
    const UnicodeClasses& c = UnicodeClasses::get();
    for (uint32_t cp : {0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0x20u, 0x85u, 0xA0u, 0x1680u, 0x2000u,
                        0x200Au, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u})
        EXPECT_EQ(c.of(cp), kSpace) << std::hex << cp;
    for (uint32_t cp : {0x1Cu, 0x1Du, 0x1Eu, 0x1Fu, 0x180Eu, 0x200Bu, 0xFEFFu, 0x00u})
        EXPECT_EQ(c.of(cp), kOther) << std::hex << cp;
    EXPECT_EQ(c.of('A'), kLetter);
    EXPECT_EQ(c.of(0x4E2D), kLetter);
    EXPECT_EQ(c.of(0x323B0), kLetter);  // CJK Extension J (Unicode 17)
    EXPECT_EQ(c.of(0x00BD), kNumber);
    EXPECT_EQ(c.of(0x0301), kOther);
    EXPECT_EQ(c.of(0x10FFFF), kOther);
}

}  // namespace
}  // namespace mt::plugins::gpt2bpe
