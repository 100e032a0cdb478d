#include "safetensors.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>

#include "mt/error.h"
#include "mt/io/atomic_file.h"
#include "mt/io/json_writer.h"

namespace mt::plugins::hf {

namespace {

int64_t element_size(const std::string& dtype) {
    if (dtype == "F32") return 4;
    if (dtype == "F16" || dtype == "BF16") return 2;
    if (dtype == "U8") return 1;  // MXFP4 blocks and scales
    return 0;
}

std::string dtype_code(DType dtype, const std::string& name) {
    switch (dtype) {
        case DType::f32:
            return "F32";
        case DType::f16:
            return "F16";
        case DType::bf16:
            return "BF16";
        default:
            MT_FAIL("safetensors: tensor '", name, "' is ", dtype_name(dtype),
                    ": supported are f32, f16 and bf16");
    }
}

// The header, padded with spaces so the data starts 8-byte aligned (as safetensors pads it);
// `tensors` sorted by name.
std::string header_of(const std::vector<TensorToWrite>& tensors) {
    std::string h = R"({"__metadata__":{"format":"pt"})";
    uint64_t offset = 0;
    for (const TensorToWrite& t : tensors) {
        h += "," + io::json_quote(t.name) + R"(:{"dtype":")" + dtype_code(t.dtype, t.name) +
             R"(","shape":[)";
        for (size_t d = 0; d < t.shape.size(); ++d)
            h += (d ? "," : "") + std::to_string(t.shape[d]);
        const uint64_t end = offset + t.nbytes();
        h += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
        offset = end;
    }
    h += "}";
    h.append((8 - h.size() % 8) % 8, ' ');
    return h;
}

}  // namespace

uint64_t TensorToWrite::nbytes() const {
    return uint64_t(shape_numel(shape) * dtype_size(dtype));
}

TensorToWrite to_write(NamedTensor tensor) {
    return {tensor.first, tensor.second.shape(), tensor.second.dtype(),
            [t = std::move(tensor.second)] { return t; }};
}

void write_safetensors(const std::filesystem::path& path, std::vector<TensorToWrite> tensors) {
    std::sort(tensors.begin(), tensors.end(),
              [](const TensorToWrite& a, const TensorToWrite& b) { return a.name < b.name; });
    for (size_t i = 1; i < tensors.size(); ++i)
        MT_CHECK(tensors[i].name != tensors[i - 1].name, path.string(), ": two tensors named '",
                 tensors[i].name, "'");
    const std::string header = header_of(tensors);
    io::AtomicFile file(path);
    std::ofstream& out = file.stream();
    char length[8];
    for (int i = 0; i < 8; ++i) length[i] = char((uint64_t(header.size()) >> (8 * i)) & 0xff);
    out.write(length, 8);
    out.write(header.data(), std::streamsize(header.size()));
    for (const TensorToWrite& t : tensors) {
        const Tensor made = t.make().contiguous();
        MT_CHECK(made.shape() == t.shape && made.dtype() == t.dtype, path.string(), ": tensor '",
                 t.name, "' was announced as ", dtype_name(t.dtype), " ", shape_str(t.shape),
                 " but made as ", made.describe());
        out.write(static_cast<const char*>(made.raw_data()), std::streamsize(made.nbytes()));
    }
    file.commit();
}

void write_safetensors(const std::filesystem::path& path, const std::vector<NamedTensor>& tensors) {
    std::vector<TensorToWrite> written;
    for (const NamedTensor& t : tensors) written.push_back(to_write(t));
    write_safetensors(path, std::move(written));
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path)
    : file_(std::make_shared<io::MappedFile>(path)) {
    const std::string where = path.string();
    MT_CHECK(file_->size() >= 8, where, ": truncated safetensors file (", file_->size(),
             " bytes, no header length)");
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | file_->data()[i];
    MT_CHECK(header_len <= file_->size() - 8, where, ": truncated safetensors file (header of ",
             header_len, " bytes, file of ", file_->size(), ")");
    data_begin_ = 8 + header_len;
    const uint64_t data_size = file_->size() - data_begin_;

    simdjson::dom::parser parser;
    simdjson::dom::object header;
    const simdjson::padded_string text(reinterpret_cast<const char*>(file_->data()) + 8,
                                       header_len);
    auto error = parser.parse(text).get_object().get(header);
    MT_CHECK(!error, where, ": bad safetensors header: ", simdjson::error_message(error));
    for (auto field : header) {
        if (field.key == "__metadata__") continue;
        SafetensorsEntry e;
        e.name = std::string(field.key);
        std::string_view dtype;
        simdjson::dom::array shape, offsets;
        MT_CHECK(!field.value["dtype"].get_string().get(dtype) &&
                     !field.value["shape"].get_array().get(shape) &&
                     !field.value["data_offsets"].get_array().get(offsets),
                 where, ": bad safetensors header: entry '", e.name,
                 "' needs dtype, shape and data_offsets");
        e.dtype = std::string(dtype);
        MT_CHECK(element_size(e.dtype) > 0, where, ": tensor '", e.name, "' has dtype ", e.dtype,
                 ": supported are F32, F16, BF16 and U8");
        int64_t numel = 1;
        for (auto d : shape) {
            int64_t n = 0;
            MT_CHECK(!d.get_int64().get(n) && n >= 0, where, ": bad safetensors header: '", e.name,
                     "' has a bad shape");
            e.shape.push_back(n);
            numel *= n;
        }
        std::vector<uint64_t> range;
        for (auto o : offsets) {
            uint64_t v = 0;
            MT_CHECK(!o.get_uint64().get(v), where, ": bad safetensors header: '", e.name,
                     "' has bad data_offsets");
            range.push_back(v);
        }
        MT_CHECK(range.size() == 2 && range[0] <= range[1], where, ": bad safetensors header: '",
                 e.name, "' needs data_offsets [begin, end]");
        e.begin = range[0];
        e.end = range[1];
        MT_CHECK(e.end <= data_size, where, ": tensor '", e.name, "' at bytes [", e.begin, ", ",
                 e.end, ") lies outside the data section of ", data_size, " bytes");
        MT_CHECK(e.end - e.begin == uint64_t(numel * element_size(e.dtype)), where, ": tensor '",
                 e.name, "' spans ", e.end - e.begin, " bytes but its shape needs ",
                 numel * element_size(e.dtype));
        entries_.push_back(std::move(e));
    }
}

const SafetensorsEntry* SafetensorsFile::find(std::string_view name) const {
    for (const auto& e : entries_)
        if (e.name == name) return &e;
    return nullptr;
}

DType SafetensorsEntry::type() const {
    return dtype == "F32"   ? DType::f32
           : dtype == "F16" ? DType::f16
           : dtype == "U8"  ? DType::u8
                            : DType::bf16;
}

Tensor SafetensorsFile::read(std::string_view name, DType as) const {
    const SafetensorsEntry* e = find(name);
    MT_CHECK(e, path().string(), ": no tensor '", name, "'");
    const uint8_t* bytes = file_->data() + data_begin_ + e->begin;
    const DType type = e->type();
    Tensor t;
    if (reinterpret_cast<uintptr_t>(bytes) % size_t(dtype_size(type)) == 0) {
        // The map is read-only; CheckpointState's tensors are read, never written.
        t = Tensor::from_blob(const_cast<uint8_t*>(bytes), e->shape, type, file_);
    } else {  // unaligned in the file
        t = Tensor::empty(e->shape, type);
        std::memcpy(t.raw_data(), bytes, size_t(t.nbytes()));
    }
    // Converted by the CPU backend's threaded conversion, straight from the map.
    return type == as ? t : cast_float(t, as);
}

}  // namespace mt::plugins::hf
