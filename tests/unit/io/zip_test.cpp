// The ZIP layer alone: CRC-32, alignment, streaming, ZIP64 end records beyond 65535 entries, and
// the temporary-file discipline of the writer.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

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

// The folded (PCLMUL) path against the bit-by-bit definition: every length 0..600 at every
// alignment 0..15, pieces of any split, and a few megabytes.
TEST(Crc32, FoldedPathEqualsTheDefinition) {
    auto bitwise = [](uint32_t crc, const uint8_t* p, size_t n) {
        uint32_t c = ~crc;
        for (size_t i = 0; i < n; ++i) {
            c ^= p[i];
            for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        }
        return ~c;
    };
    std::vector<uint8_t> data(4 << 20);
    uint64_t x = 88172645463325252ull;
    for (uint8_t& b : data) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        b = uint8_t(x);
    }
    for (size_t align = 0; align < 16; ++align)
        for (size_t n = 0; n <= 600; ++n)
            ASSERT_EQ(crc32_update(0, data.data() + align, n), bitwise(0, data.data() + align, n))
                << "length " << n << " at offset " << align;
    const uint32_t whole = bitwise(0, data.data(), data.size());
    EXPECT_EQ(crc32_update(0, data.data(), data.size()), whole);
    for (size_t cut : {size_t(1), size_t(63), size_t(64), size_t(1000), size_t(3 << 20)})
        EXPECT_EQ(
            crc32_update(crc32_update(0, data.data(), cut), data.data() + cut, data.size() - cut),
            whole)
            << "split at " << cut;
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
