// AtomicFile: output appears whole or not at all; a symlink is written through (the link kept,
// its target replaced) and a FIFO is fed in place rather than replaced by a regular file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "mt/io/atomic_file.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using mt::io::AtomicFile;

void write(const fs::path& path, const std::string& text) {
    AtomicFile f(path);
    f.stream() << text;
    f.commit();
}

TEST(AtomicFile, AppearsWholeOrNotAtAll) {
    mt::test::TempDir dir;
    {
        AtomicFile f(dir / "out.json");
        f.stream() << "half";
    }  // no commit: nothing
    EXPECT_FALSE(fs::exists(dir / "out.json"));
    EXPECT_FALSE(fs::exists(dir / "out.json.tmp"));
    write(dir / "out.json", "whole");
    EXPECT_EQ(mt::test::read_file(dir / "out.json"), "whole");
    EXPECT_FALSE(fs::exists(dir / "out.json.tmp"));
}

TEST(AtomicFile, WritesThroughSymlinks) {
    mt::test::TempDir dir;
    fs::create_directories(dir / "real");
    mt::test::write_file(dir / "real" / "target.txt", "old");
    fs::create_symlink(dir / "real" / "target.txt", dir / "link.txt");
    write(dir / "link.txt", "new");
    EXPECT_TRUE(fs::is_symlink(dir / "link.txt")) << "the link stays a link";
    EXPECT_EQ(mt::test::read_file(dir / "real" / "target.txt"), "new");
}

TEST(AtomicFile, FeedsAFifoInPlace) {
    mt::test::TempDir dir;
    const fs::path fifo = dir / "pipe";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    std::string got;
    std::thread reader([&] {
        std::ifstream in(fifo, std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        got = ss.str();
    });
    write(fifo, "through the pipe");
    reader.join();
    EXPECT_EQ(got, "through the pipe");
    EXPECT_TRUE(fs::is_fifo(fifo)) << "not replaced by a regular file";
    EXPECT_FALSE(fs::exists(dir / "pipe.tmp"));
}

}  // namespace
