// Python float repr, json.dumps(indent=4) and MD5 used for Megatron's cache file names, and the
// NPY v1.0 writer/reader.
#include <gtest/gtest.h>

#include "mt/data/dataset_description.h"
#include "mt/data/npy.h"
#include "test_support.h"

namespace {

using namespace mt::data;

TEST(DatasetDescription, PythonFloatRepr) {
    EXPECT_EQ(python_float_repr(0.949), "0.949");
    EXPECT_EQ(python_float_repr(0.949 + 0.05), "0.999");
    EXPECT_EQ(python_float_repr(1.0), "1.0");
    EXPECT_EQ(python_float_repr(0.0), "0.0");
    EXPECT_EQ(python_float_repr(0.1 + 0.2), "0.30000000000000004");
    EXPECT_EQ(python_float_repr(1e-05), "1e-05");
    EXPECT_EQ(python_float_repr(0.0001), "0.0001");
    EXPECT_EQ(python_float_repr(1e16), "1e+16");
    EXPECT_EQ(python_float_repr(1e15), "1000000000000000.0");
    EXPECT_EQ(python_float_repr(123456789012345678.0), "1.2345678901234568e+17");
    EXPECT_EQ(python_float_repr(-2.5), "-2.5");
    EXPECT_EQ(python_float_repr(5e-324), "5e-324");
    EXPECT_EQ(python_float_repr(30.0), "30.0");
}

TEST(DatasetDescription, Md5KnownVectors) {
    EXPECT_EQ(md5_hex(""), "d41d8cd98f00b204e9800998ecf8427e");
    EXPECT_EQ(md5_hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
    EXPECT_EQ(md5_hex(std::string(1000, 'a')), "cabe45dcc9ae5b66ba86600cca6b8ba8");
}

TEST(DatasetDescription, JsonDumpsIndent4) {
    JsonValue j = JsonValue::object();
    j.set("class", JsonValue::string("GPTDataset"));
    j.set("num_samples", JsonValue());
    j.set("empty", JsonValue::array());
    j.set("m", JsonValue::array(
                   {JsonValue::array({JsonValue::integer(0), JsonValue::real(0.5)}), JsonValue()}));
    j.set("s", JsonValue::string("\xc3\xa9\"\n\x01\xf0\x9f\x98\x80"));
    j.set("o", JsonValue::object());
    // Python: json.dumps({"class": "GPTDataset", "num_samples": None, "empty": [],
    //   "m": [[0, 0.5], None], "s": "é\"\n\x01😀", "o": {}}, indent=4)
    EXPECT_EQ(j.dumps(),
              "{\n    \"class\": \"GPTDataset\",\n    \"num_samples\": null,\n    \"empty\": [],\n"
              "    \"m\": [\n        [\n            0,\n            0.5\n        ],\n        null\n"
              "    ],\n    \"s\": \"\\u00e9\\\"\\n\\u0001\\ud83d\\ude00\",\n    \"o\": {}\n}");
}

TEST(Npy, HeaderMatchesNumpySave) {
    // numpy.save header for int32 shape (949,): 128 bytes, growth padding included.
    std::string h = npy_header(NpyType::i32, {949});
    EXPECT_EQ(h.size(), 128u);
    EXPECT_EQ(h.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    EXPECT_EQ(h.substr(10, 59), "{'descr': '<i4', 'fortran_order': False, 'shape': (949,), }");
    EXPECT_EQ(h.back(), '\n');
    std::string h2 = npy_header(NpyType::u32, {61081, 2});
    EXPECT_NE(h2.find("'shape': (61081, 2), }"), std::string::npos);
    EXPECT_EQ(h2.size() % 64, 0u);
}

TEST(Npy, SaveLoadRoundTrip) {
    mt::test::TempDir dir;
    NpyArray a = NpyArray::zeros(NpyType::i64, {3, 2});
    for (int i = 0; i < 6; ++i) a.data<int64_t>()[i] = (i - 2) * 1000000000000LL;
    a.save(dir / "a.npy");
    NpyArray b = NpyArray::load(dir / "a.npy");
    EXPECT_EQ(b.type(), NpyType::i64);
    EXPECT_EQ(b.shape(), (std::vector<int64_t>{3, 2}));
    for (int i = 0; i < 6; ++i) EXPECT_EQ(b.at(i), a.at(i));
    mt::test::write_file(dir / "bad.npy", "not an npy file");
    EXPECT_NE(mt::test::error_of([&] { NpyArray::load(dir / "bad.npy"); }).find("bad.npy"),
              std::string::npos);
}

}  // namespace
