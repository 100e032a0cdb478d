// TensorBoard event files: CRC-32C, TFRecord framing, and scalar events byte-identical to
// torch.utils.tensorboard.SummaryWriter's (tests/fixtures/tensorboard/make_fixtures.py).
#include <gtest/gtest.h>

#include <cstring>

#include "mt/io/tensorboard_writer.h"
#include "test_support.h"

namespace {

using mt::io::TensorBoardWriter;

TEST(TensorBoard, Crc32cKnownAnswers) {
    EXPECT_EQ(mt::io::crc32c("123456789", 9), 0xE3069283u);
    EXPECT_EQ(mt::io::crc32c("", 0), 0u);
    std::string zeros(32, '\0');
    EXPECT_EQ(mt::io::crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);  // RFC 3720 B.4
}

TEST(TensorBoard, ScalarsMatchSummaryWriterBytes) {
    std::string expected =
        mt::test::read_file(mt::test::fixtures_dir() / "tensorboard" / "scalars.bin");
    std::string ours;
    ours += TensorBoardWriter::frame(
        TensorBoardWriter::scalar_event("lm loss", 10.8125f, 1, 1700000000.25));
    ours += TensorBoardWriter::frame(
        TensorBoardWriter::scalar_event("learning-rate", 3e-4f, 2, 1700000001.5));
    ours += TensorBoardWriter::frame(
        TensorBoardWriter::scalar_event("grad-norm", 1.2345678f, 300, 1700000002.75));
    ours += TensorBoardWriter::frame(
        TensorBoardWriter::scalar_event("throughput", 0.0f, 0, 1700000003.0));
    EXPECT_EQ(ours.size(), expected.size());
    EXPECT_TRUE(ours == expected) << "event bytes differ from SummaryWriter's";
}

TEST(TensorBoard, WritesAFileWithVersionRecord) {
    mt::test::TempDir dir;
    std::filesystem::path path;
    {
        TensorBoardWriter w(dir / "tb");
        w.add_scalar("lm loss", 2.5f, 10);
        path = w.path();
    }
    EXPECT_EQ(path.filename().string().rfind("events.out.tfevents.", 0), 0u);
    std::string bytes = mt::test::read_file(path);
    uint64_t length;
    std::memcpy(&length, bytes.data(), 8);
    std::string first = bytes.substr(12, length);
    EXPECT_NE(first.find("brain.Event:2"), std::string::npos);
    EXPECT_EQ(TensorBoardWriter::frame(first), bytes.substr(0, 16 + length));
    EXPECT_NE(bytes.find("lm loss"), std::string::npos);
}

}  // namespace
