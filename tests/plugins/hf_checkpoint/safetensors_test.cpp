// The safetensors reader: F32 (a zero-copy view of the map), F16 and BF16 (converted to f32,
// subnormals and signs included), and clear errors naming the file for a truncated file, a bad
// header, a byte range outside the data, a wrong length and an unknown dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "safetensors.h"
#include "test_support.h"

namespace mt::plugins::hf {
namespace {

using mt::test::error_of;
using mt::test::TempDir;

// A safetensors file: little-endian header length, the JSON header, then `data`.
std::string file_bytes(const std::string& header, const std::string& data) {
    std::string out(8, '\0');
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out[size_t(i)] = char((n >> (8 * i)) & 0xff);
    return out + header + data;
}

template <class T>
std::string raw(std::initializer_list<T> values) {
    std::string out;
    for (T v : values) out.append(reinterpret_cast<const char*>(&v), sizeof(T));
    return out;
}

TEST(Safetensors, ReadsF32F16AndBf16) {
    TempDir dir;
    const std::string header = R"({"__metadata__":{"format":"pt"},)"
                               R"("a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
                               R"("h":{"dtype":"F16","shape":[5],"data_offsets":[16,26]},)"
                               R"("b":{"dtype":"BF16","shape":[3],"data_offsets":[26,32]}})";
    // Header padded to 8 bytes, as safetensors writes it, so the F32 data is aligned.
    std::string padded = header + std::string((8 - header.size() % 8) % 8, ' ');
    const std::string data = raw<float>({1.5f, -2.0f, 3.25f, 0.0f}) +
                             raw<uint16_t>({0x3C00, 0xC000, 0x3555, 0x0001, 0x7C00}) +
                             raw<uint16_t>({0x3F80, 0xC0A0, 0x3EAB});
    mt::test::write_file(dir / "t.safetensors", file_bytes(padded, data));

    SafetensorsFile file(dir / "t.safetensors");
    ASSERT_EQ(file.entries().size(), 3u);
    const Tensor a = file.read("a");
    EXPECT_EQ(a.shape(), (Shape{2, 2}));
    EXPECT_EQ(a.data<float>()[2], 3.25f);
    EXPECT_EQ(file.read("a").raw_data(), a.raw_data()) << "F32 views the map, not a copy";

    const Tensor h = file.read("h");
    const float* hp = h.data<float>();
    EXPECT_EQ(hp[0], 1.0f);
    EXPECT_EQ(hp[1], -2.0f);
    EXPECT_FLOAT_EQ(hp[2], 0.333251953125f);
    EXPECT_EQ(hp[3], 5.9604644775390625e-08f) << "the smallest subnormal half";
    EXPECT_TRUE(std::isinf(hp[4]));

    const Tensor b = file.read("b");
    EXPECT_EQ(b.data<float>()[0], 1.0f);
    EXPECT_EQ(b.data<float>()[1], -5.0f);
    EXPECT_EQ(b.data<float>()[2], 0.333984375f);

    EXPECT_NE(error_of([&] { file.read("missing"); }).find("no tensor 'missing'"),
              std::string::npos);
}

void expect_error(const std::string& bytes, const std::string& part) {
    TempDir dir;
    mt::test::write_file(dir / "bad.safetensors", bytes);
    const std::string error = error_of([&] { SafetensorsFile f(dir / "bad.safetensors"); });
    EXPECT_NE(error.find("bad.safetensors"), std::string::npos) << error;
    EXPECT_NE(error.find(part), std::string::npos) << error;
}

TEST(Safetensors, RejectsBrokenFilesNamingThem) {
    const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    expect_error("abc", "truncated");
    expect_error(file_bytes(ok, raw<float>({1, 2})).substr(0, 20), "truncated");
    expect_error(file_bytes("{\"a\": [1,", ""), "bad safetensors header");
    expect_error(file_bytes(R"({"a":{"dtype":"F32","shape":[2]}})", raw<float>({1, 2})),
                 "needs dtype, shape and data_offsets");
    expect_error(file_bytes(ok, raw<float>({1})), "outside the data section");
    expect_error(
        file_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", raw<float>({1, 2})),
        "data_offsets [begin, end]");
    expect_error(
        file_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", raw<float>({1, 2})),
        "its shape needs 12");
    expect_error(file_bytes(R"({"a":{"dtype":"I8","shape":[2],"data_offsets":[0,2]}})", "xy"),
                 "dtype I8");
}

}  // namespace
}  // namespace mt::plugins::hf
