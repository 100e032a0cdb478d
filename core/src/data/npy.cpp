// NPY v1.0 write/read, following numpy/lib/format.py (_write_array_header, _wrap_header).
#include "mt/data/npy.h"
#include "mt/io/durable.h"

#include <cstdio>
#include <cstring>
#include <string_view>

#include <unistd.h>

#include "mt/error.h"
#include "mt/io/mapped_file.h"

namespace mt::data {

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kArrayAlign = 64;
// numpy leaves room for the first axis to grow to this many digits when it writes a header.
constexpr size_t kGrowthAxisMaxDigits = 21;

std::string shape_repr(const std::vector<int64_t>& shape) {
    std::string s = "(";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    if (shape.size() == 1) s += ",";
    return s + ")";
}

NpyType parse_descr(std::string_view descr, const std::filesystem::path& path) {
    for (NpyType t : {NpyType::i16, NpyType::i32, NpyType::i64, NpyType::u32}) {
        if (descr == npy_type_descr(t)) return t;
    }
    MT_FAIL(path.string(), ": unsupported NPY descr '", std::string(descr),
            "' (expected <i2, <i4, <i8 or <u4)");
}

// The quoted value after 'key': in a numpy header dict, or the raw text up to the next ',' / ')'.
std::string_view header_value(std::string_view header, std::string_view key,
                              const std::filesystem::path& path) {
    std::string quoted = "'" + std::string(key) + "':";
    size_t at = header.find(quoted);
    MT_CHECK(at != std::string_view::npos, path.string(), ": NPY header lacks '", key,
             "': ", std::string(header));
    size_t begin = at + quoted.size();
    while (begin < header.size() && header[begin] == ' ') ++begin;
    size_t end = begin;
    if (header[begin] == '\'') {
        end = header.find('\'', begin + 1);
        return header.substr(begin + 1, end - begin - 1);
    }
    if (header[begin] == '(') {
        end = header.find(')', begin);
        return header.substr(begin, end - begin + 1);
    }
    end = header.find_first_of(",}", begin);
    return header.substr(begin, end - begin);
}

}  // namespace

int64_t npy_type_size(NpyType type) {
    switch (type) {
        case NpyType::i16:
            return 2;
        case NpyType::i32:
            return 4;
        case NpyType::i64:
            return 8;
        case NpyType::u32:
            return 4;
    }
    return 0;
}

const char* npy_type_descr(NpyType type) {
    switch (type) {
        case NpyType::i16:
            return "<i2";
        case NpyType::i32:
            return "<i4";
        case NpyType::i64:
            return "<i8";
        case NpyType::u32:
            return "<u4";
    }
    return "";
}

std::string npy_header(NpyType type, const std::vector<int64_t>& shape) {
    std::string dict = "{'descr': '" + std::string(npy_type_descr(type)) +
                       "', 'fortran_order': False, 'shape': " + shape_repr(shape) + ", }";
    if (!shape.empty()) {
        size_t digits = std::to_string(shape[0]).size();
        if (digits < kGrowthAxisMaxDigits) dict.append(kGrowthAxisMaxDigits - digits, ' ');
    }
    size_t hlen = dict.size() + 1;  // + the final newline
    size_t pad = kArrayAlign - ((kMagic.size() + 2 + 2 + hlen) % kArrayAlign);
    size_t total = hlen + pad;
    MT_CHECK(total <= 0xffff, "NPY header too long for v1.0: ", total, " bytes");
    std::string out(kMagic);
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(total & 0xff);
    out += static_cast<char>(total >> 8);
    out += dict;
    out.append(pad, ' ');
    out += '\n';
    return out;
}

NpyArray NpyArray::zeros(NpyType type, std::vector<int64_t> shape) {
    NpyArray a;
    a.type_ = type;
    a.numel_ = 1;
    for (int64_t d : shape) {
        MT_CHECK(d >= 0, "NpyArray::zeros: negative dimension ", d);
        a.numel_ *= d;
    }
    a.shape_ = std::move(shape);
    auto buffer = std::make_shared<std::vector<uint8_t>>(
        static_cast<size_t>(a.numel_ * npy_type_size(type)), 0);
    a.mutable_data_ = buffer->data();
    a.data_ = buffer->data();
    a.storage_ = std::move(buffer);
    return a;
}

NpyArray NpyArray::load(const std::filesystem::path& path) {
    auto file = std::make_shared<io::MappedFile>(path);
    std::string_view bytes = file->bytes();
    MT_CHECK(bytes.size() >= 10 && bytes.substr(0, 6) == kMagic, path.string(),
             ": not an NPY file (bad magic)");
    auto u8 = [&](size_t i) { return static_cast<uint8_t>(bytes[i]); };
    size_t major = u8(6), header_len = 0, header_start = 0;
    if (major == 1) {
        header_len = u8(8) | (size_t(u8(9)) << 8);
        header_start = 10;
    } else if (major == 2) {
        MT_CHECK(bytes.size() >= 12, path.string(), ": truncated NPY header");
        header_len = u8(8) | (size_t(u8(9)) << 8) | (size_t(u8(10)) << 16) | (size_t(u8(11)) << 24);
        header_start = 12;
    } else {
        MT_FAIL(path.string(), ": unsupported NPY version ", major);
    }
    MT_CHECK(header_start + header_len <= bytes.size(), path.string(), ": truncated NPY header");
    std::string_view header = bytes.substr(header_start, header_len);
    NpyArray a;
    a.type_ = parse_descr(header_value(header, "descr", path), path);
    MT_CHECK(header_value(header, "fortran_order", path) == "False", path.string(),
             ": Fortran-ordered NPY arrays are not supported");
    std::string_view shape = header_value(header, "shape", path);
    a.numel_ = 1;
    for (size_t i = 1; i < shape.size();) {
        while (i < shape.size() && (shape[i] == ' ' || shape[i] == ',')) ++i;
        if (i >= shape.size() || shape[i] == ')') break;
        int64_t d = 0;
        while (i < shape.size() && shape[i] >= '0' && shape[i] <= '9')
            d = d * 10 + (shape[i++] - '0');
        MT_CHECK(i < shape.size() && (shape[i] == ',' || shape[i] == ')' || shape[i] == ' '),
                 path.string(), ": bad NPY shape ", std::string(shape));
        a.shape_.push_back(d);
        a.numel_ *= d;
    }
    size_t data_start = header_start + header_len;
    MT_CHECK(bytes.size() - data_start == static_cast<size_t>(a.numel_ * npy_type_size(a.type_)),
             path.string(), ": NPY data is ", bytes.size() - data_start, " bytes, shape ",
             std::string(shape), " needs ", a.numel_ * npy_type_size(a.type_));
    a.data_ = file->data() + data_start;
    a.storage_ = std::move(file);
    return a;
}

void NpyArray::save(const std::filesystem::path& path) const {
    std::filesystem::path tmp = path;
    tmp += ".tmp" + std::to_string(::getpid());
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    MT_CHECK(f != nullptr, "cannot write ", tmp.string(), ": ", std::strerror(errno));
    std::string header = npy_header(type_, shape_);
    bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
    if (ok && nbytes() > 0)
        ok = std::fwrite(data_, 1, nbytes(), f) == static_cast<size_t>(nbytes());
    ok = (std::fclose(f) == 0) && ok;
    if (!ok) {
        std::filesystem::remove(tmp);
        MT_FAIL("failed writing ", tmp.string());
    }
    io::rename_path(tmp, path);
}

int64_t NpyArray::at(int64_t i) const {
    switch (type_) {
        case NpyType::i16:
            return data<int16_t>()[i];
        case NpyType::i32:
            return data<int32_t>()[i];
        case NpyType::i64:
            return data<int64_t>()[i];
        case NpyType::u32:
            return data<uint32_t>()[i];
    }
    return 0;
}

}  // namespace mt::data
