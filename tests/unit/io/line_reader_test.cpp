// LineReader over plain and zstd-compressed files: terminators, a last line without one, and
// the line-length bound that stops a zstd bomb (a few bytes inflating to one endless line).
#include <zstd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mt/io/line_reader.h"
#include "test_support.h"

namespace {

using mt::test::TempDir;

std::string zstd_compressed(const std::string& text) {
    std::string out(ZSTD_compressBound(text.size()), '\0');
    const size_t n = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 19);
    EXPECT_FALSE(ZSTD_isError(n));
    out.resize(n);
    return out;
}

std::vector<std::string> lines_of(const std::filesystem::path& path, int64_t max_line) {
    mt::io::LineReader reader(path, max_line);
    std::vector<std::string> out;
    std::string_view line;
    while (reader.next(line)) out.emplace_back(line);
    return out;
}

TEST(LineReader, PlainAndZstdLinesWithAndWithoutTerminators) {
    TempDir dir;
    const std::string text = "{\"text\": \"a\"}\r\n\nsecond\nlast without newline";
    const std::vector<std::string> want = {"{\"text\": \"a\"}", "", "second",
                                           "last without newline"};
    mt::test::write_file(dir / "in.jsonl", text);
    mt::test::write_file(dir / "in.jsonl.zst", zstd_compressed(text));
    EXPECT_EQ(lines_of(dir / "in.jsonl", 100), want);
    EXPECT_EQ(lines_of(dir / "in.jsonl.zst", 100), want);
}

TEST(LineReader, ALineLongerThanTheBoundIsRefusedNamingIt) {
    TempDir dir;
    // 8 MiB without a newline compress to a few hundred bytes.
    const std::string text = "ok\n" + std::string(8 << 20, 'x') + "\n";
    const std::string bomb = zstd_compressed(text);
    EXPECT_LT(bomb.size(), 4096u);
    mt::test::write_file(dir / "bomb.jsonl.zst", bomb);
    mt::test::write_file(dir / "long.jsonl", text);
    for (const char* name : {"bomb.jsonl.zst", "long.jsonl"}) {
        const std::string msg = mt::test::error_of([&] { lines_of(dir / name, 1 << 20); });
        EXPECT_NE(msg.find(name), std::string::npos) << msg;
        EXPECT_NE(msg.find("line 2 is longer than 1048576 bytes"), std::string::npos) << msg;
        EXPECT_EQ(lines_of(dir / name, 16 << 20).size(), 2u);  // within a larger bound
    }
}

}  // namespace
