// MT_CHECK / MT_FAIL: the message is the user's, the source location is kept apart.
#include <gtest/gtest.h>

#include "mt/error.h"
#include "mt/log.h"

namespace {

TEST(Error, CheckFormatsTheMessage) {
    try {
        int expected = 3, found = 4;
        MT_CHECK(expected == found, "file.idx: expected ", expected, " entries, found ", found);
        FAIL() << "MT_CHECK did not throw";
    } catch (const mt::Error& e) {
        EXPECT_STREQ(e.what(), "file.idx: expected 3 entries, found 4");
        EXPECT_NE(e.where().find("error_test.cpp:"), std::string::npos);
    }
}

TEST(Error, CheckPassesSilently) {
    EXPECT_NO_THROW(MT_CHECK(1 + 1 == 2, "math"));
}

TEST(Error, FailAlwaysThrows) {
    EXPECT_THROW(MT_FAIL("no"), mt::Error);
}

TEST(Log, LevelFilters) {
    auto old = mt::log::level();
    mt::log::set_level(mt::log::Level::warn);
    testing::internal::CaptureStderr();
    mt::log::info("hidden");
    mt::log::warn("shown ", 1);
    std::string err = testing::internal::GetCapturedStderr();
    mt::log::set_level(old);
    EXPECT_EQ(err, "warning: shown 1\n");
}

}  // namespace
