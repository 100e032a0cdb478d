// The ZIP layer alone: CRC-32, alignment, streaming, ZIP64 end records beyond 65535 entries, and
// the temporary-file discipline of the writer.
#include <gtest/gtest.h>

#include "mt/error.h"
#include "mt/io/crc32.h"
#include "mt/io/zip_reader.h"
#include "mt/io/zip_writer.h"
#include "test_support.h"

namespace mt::io {
namespace {

TEST(Crc32, KnownValues) {
    EXPECT_EQ(crc32_update(0, "123456789", 9), 0xCBF43926u);
    EXPECT_EQ(crc32_update(0, "", 0), 0u);
    // Continuing over pieces equals one pass.
    EXPECT_EQ(crc32_update(crc32_update(0, "12345", 5), "6789", 4), 0xCBF43926u);
}

TEST(Zip, StreamsAlignedEntriesAndReadsThemBack) {
    test::TempDir dir;
    ZipWriter w(dir / "a.zip");
    w.add("a/first", "hello");
    w.begin_entry("a/second", 10);
    w.write("01234", 5);
    w.write("56789", 5);
    w.end_entry();
    w.add("a/empty", "");
    EXPECT_FALSE(std::filesystem::exists(dir / "a.zip"));  // only the temporary file so far
    w.close();

    ZipReader r(dir / "a.zip");
    ASSERT_EQ(r.entries().size(), 3u);
    EXPECT_EQ(r.payload(r.at("a/first")), "hello");
    EXPECT_EQ(r.payload(r.at("a/second")), "0123456789");
    EXPECT_EQ(r.payload(r.at("a/empty")), "");
    for (const ZipEntry& e : r.entries()) {
        EXPECT_EQ(e.offset % 64, 0u) << e.name;
        r.verify_crc(e);
    }
    EXPECT_EQ(r.find("a/missing"), nullptr);
    EXPECT_NE(test::error_of([&] { r.at("a/missing"); }).find("a.zip: no record a/missing"),
              std::string::npos);
}

TEST(Zip, MoreThan65535EntriesUseZip64Counts) {
    test::TempDir dir;
    const int n = 65536 + 5;
    {
        ZipWriter w(dir / "many.zip");
        for (int i = 0; i < n; ++i) w.add("m/" + std::to_string(i), std::to_string(i * 7));
        w.close();
    }
    ZipReader r(dir / "many.zip");
    ASSERT_EQ(r.entries().size(), static_cast<size_t>(n));
    EXPECT_EQ(r.payload(r.at("m/65540")), std::to_string(65540 * 7));
}

TEST(Zip, WriterErrorsLeaveNoFile) {
    test::TempDir dir;
    {
        ZipWriter w(dir / "bad.zip");
        w.begin_entry("x/y", 4);
        w.write("ab", 2);
        EXPECT_NE(
            test::error_of([&] { w.end_entry(); }).find("declared 4 bytes but 2 were written"),
            std::string::npos);
        EXPECT_NE(test::error_of([&] { w.write("abc", 3); }).find("more were written"),
                  std::string::npos);
    }
    EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(Zip, CorruptDirectoryIsAnError) {
    test::TempDir dir;
    {
        ZipWriter w(dir / "c.zip");
        w.add("c/x", "payload");
        w.close();
    }
    std::string bytes = test::read_file(dir / "c.zip");
    const size_t central = bytes.find("PK\x01\x02");
    bytes[central + 42] = 0x7f;  // local header offset inside the file, at no header
    test::write_file(dir / "c.zip", bytes);
    EXPECT_NE(test::error_of([&] {
                  ZipReader r(dir / "c.zip");
              }).find("c.zip: entry c/x: no local header at byte 127"),
              std::string::npos);
    bytes[central + 45] = 0x7f;  // past the end of the file
    test::write_file(dir / "c.zip", bytes);
    EXPECT_NE(test::error_of([&] {
                  ZipReader r(dir / "c.zip");
              }).find("c.zip: truncated zip: local header at byte"),
              std::string::npos);
}

}  // namespace
}  // namespace mt::io
