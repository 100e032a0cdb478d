// Progress: the rendered line (rate, MB/s, ETA by items or bytes), log lines, and silence
// when disabled.
#include <gtest/gtest.h>

#include "mt/progress.h"

namespace {

TEST(Progress, RendersRateAndEta) {
    mt::Progress p("tokenizing", 100, "docs", /*enabled=*/false);
    p.update(25, 5 * 1048576);
    EXPECT_EQ(p.render(5.0),
              "tokenizing: 25/100 (25.0%) docs, 5.0 docs/s, 1.00 MB/s, elapsed 0:05, ETA 0:15");
}

TEST(Progress, UnknownTotalHasNoEta) {
    mt::Progress p("reading", -1, "lines", false);
    p.update(7200);
    EXPECT_EQ(p.render(3600.0), "reading: 7200 lines, 2.0 lines/s, elapsed 1:00:00");
}

TEST(Progress, EtaByBytesWhenTheirTotalIsKnown) {
    mt::Progress p("preprocess", -1, "docs", false, /*total_bytes=*/40 * 1048576);
    p.add(10, 4 * 1048576);
    p.add(10, 6 * 1048576);
    EXPECT_EQ(p.render(10.0),
              "preprocess: 20 (25.0%) docs, 2.0 docs/s, 1.00 MB/s, elapsed 0:10, ETA 0:30");
}

TEST(Progress, PrintLineAlwaysWrites) {
    testing::internal::CaptureStderr();
    {
        mt::Progress p("quiet", 10, "items", false);
        p.print_line("Processed 5 documents");
        p.finish();
    }
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "Processed 5 documents\n");
}

TEST(Progress, DisabledWritesNothing) {
    testing::internal::CaptureStderr();
    {
        mt::Progress p("quiet", 10, "items", false);
        p.update(5);
        p.finish();
    }
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

}  // namespace
