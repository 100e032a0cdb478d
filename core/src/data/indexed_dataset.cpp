#include "mt/data/indexed_dataset.h"
#include "mt/io/durable.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "mt/error.h"

namespace fs = std::filesystem;

namespace mt::data {

namespace {

constexpr char kMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};
constexpr size_t kHeaderBytes = 9 + 8 + 1 + 8 + 8;
constexpr size_t kWriteBuffer = 1 << 20;

template <class T>
T load(const uint8_t* p) {  // the .idx arrays are unaligned: memcpy, never dereference
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

template <class T>
void append(std::string& out, const T& v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

bool valid_dtype_code(uint8_t code) {
    return code >= 1 && code <= 8;
}

// Largest and smallest token a dtype can hold (float dtypes hold any int32 exactly).
std::pair<int64_t, int64_t> token_range(IndexDType d) {
    switch (d) {
        case IndexDType::u8:
            return {0, 255};
        case IndexDType::i8:
            return {-128, 127};
        case IndexDType::i16:
            return {-32768, 32767};
        case IndexDType::u16:
            return {0, 65535};
        default:
            return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    }
}

// Stores `n` int32 tokens as `dtype` at `out` (little-endian host).
void convert_tokens(const int32_t* in, size_t n, IndexDType dtype, uint8_t* out) {
    switch (dtype) {
        case IndexDType::u8:
            for (size_t i = 0; i < n; ++i) out[i] = uint8_t(in[i]);
            break;
        case IndexDType::i8:
            for (size_t i = 0; i < n; ++i) out[i] = uint8_t(int8_t(in[i]));
            break;
        case IndexDType::u16:
            for (size_t i = 0; i < n; ++i) {
                uint16_t v = uint16_t(in[i]);
                std::memcpy(out + 2 * i, &v, 2);
            }
            break;
        case IndexDType::i16:
            for (size_t i = 0; i < n; ++i) {
                int16_t v = int16_t(in[i]);
                std::memcpy(out + 2 * i, &v, 2);
            }
            break;
        case IndexDType::i32:
            std::memcpy(out, in, 4 * n);
            break;
        case IndexDType::i64:
            for (size_t i = 0; i < n; ++i) {
                int64_t v = in[i];
                std::memcpy(out + 8 * i, &v, 8);
            }
            break;
        case IndexDType::f32:
            for (size_t i = 0; i < n; ++i) {
                float v = float(in[i]);
                std::memcpy(out + 4 * i, &v, 4);
            }
            break;
        case IndexDType::f64:
            for (size_t i = 0; i < n; ++i) {
                double v = in[i];
                std::memcpy(out + 8 * i, &v, 8);
            }
            break;
    }
}

int64_t token_at(const uint8_t* p, IndexDType dtype) {
    switch (dtype) {
        case IndexDType::u8:
            return *p;
        case IndexDType::i8:
            return int8_t(*p);
        case IndexDType::u16:
            return load<uint16_t>(p);
        case IndexDType::i16:
            return load<int16_t>(p);
        case IndexDType::i32:
            return load<int32_t>(p);
        case IndexDType::i64:
            return load<int64_t>(p);
        case IndexDType::f32:
            return int64_t(load<float>(p));
        case IndexDType::f64:
            return int64_t(load<double>(p));
    }
    return 0;
}

fs::path temp_name(const fs::path& target) {
    return fs::path(target.string() + ".tmp." + std::to_string(::getpid()));
}

// Where an output file goes: through a symlink to its target; a FIFO, device or socket there is
// an error (a dataset file is read back by offset, and renaming would replace the node).
fs::path output_target(const fs::path& path) {
    std::error_code ec;
    fs::path target = path;
    if (fs::is_symlink(fs::symlink_status(path, ec)))
        if (fs::path t = fs::weakly_canonical(path, ec); !ec) target = t;
    const fs::file_status st = fs::status(target, ec);
    MT_CHECK(!fs::exists(st) || fs::is_regular_file(st), path.string(),
             ": exists and is not a regular file (a dataset output must be one)");
    return target;
}

}  // namespace

int64_t index_dtype_size(IndexDType dtype) {
    switch (dtype) {
        case IndexDType::u8:
        case IndexDType::i8:
            return 1;
        case IndexDType::i16:
        case IndexDType::u16:
            return 2;
        case IndexDType::i32:
        case IndexDType::f32:
            return 4;
        case IndexDType::i64:
        case IndexDType::f64:
            return 8;
    }
    MT_FAIL("unknown index dtype code ", int(dtype));
}

const char* index_dtype_name(IndexDType dtype) {
    switch (dtype) {
        case IndexDType::u8:
            return "uint8";
        case IndexDType::i8:
            return "int8";
        case IndexDType::i16:
            return "int16";
        case IndexDType::i32:
            return "int32";
        case IndexDType::i64:
            return "int64";
        case IndexDType::f64:
            return "float64";
        case IndexDType::f32:
            return "float32";
        case IndexDType::u16:
            return "uint16";
    }
    return "?";
}

IndexDType optimal_index_dtype(int64_t vocab_size) {
    return vocab_size < 65500 ? IndexDType::u16 : IndexDType::i32;
}

fs::path bin_path(const std::string& prefix) {
    return prefix + ".bin";
}
fs::path idx_path(const std::string& prefix) {
    return prefix + ".idx";
}

// ---------------------------------------------------------------------------------------------
// Reader

IndexedDataset IndexedDataset::open(const std::string& prefix, bool multimodal) {
    IndexedDataset ds;
    ds.idx_ = io::MappedFile(idx_path(prefix));
    ds.bin_ = io::MappedFile(bin_path(prefix));
    ds.multimodal_ = multimodal;
    const std::string name = ds.idx_.path().string();
    const uint8_t* p = ds.idx_.data();
    const size_t size = ds.idx_.size();

    MT_CHECK(size >= kHeaderBytes, name, ": too short for an MMIDIDX header (", size, " bytes)");
    MT_CHECK(std::memcmp(p, kMagic, sizeof kMagic) == 0, name,
             ": not a Megatron MMIDIDX index (bad magic)");
    uint64_t version = load<uint64_t>(p + 9);
    MT_CHECK(version == 1, name, ": index version ", version, " (only version 1 exists)");
    uint8_t code = p[17];
    MT_CHECK(valid_dtype_code(code), name, ": unknown dtype code ", int(code));
    ds.dtype_ = IndexDType(code);
    uint64_t s = load<uint64_t>(p + 18), d = load<uint64_t>(p + 26);
    MT_CHECK(d >= 1, name, ": document index is empty (needs at least the leading 0)");
    // Guard the size arithmetic before trusting the counts.
    MT_CHECK(s <= size && d <= size, name, ": counts (", s, " sequences, ", d,
             " document entries) exceed the file size");
    ds.num_sequences_ = int64_t(s);
    ds.num_doc_entries_ = int64_t(d);
    ds.lengths_off_ = kHeaderBytes;
    ds.pointers_off_ = ds.lengths_off_ + 4 * s;
    ds.docs_off_ = ds.pointers_off_ + 8 * s;
    ds.modes_off_ = ds.docs_off_ + 8 * d;
    size_t expected = ds.modes_off_ + (multimodal ? s : 0);
    MT_CHECK(size >= expected, name, ": truncated: ", size, " bytes, the header promises ",
             expected);
    MT_CHECK(ds.document_index(0) == 0, name, ": document index does not start at 0");
    MT_CHECK(ds.document_index(ds.num_documents()) == ds.num_sequences_, name,
             ": last document index ", ds.document_index(ds.num_documents()),
             " != number of sequences ", ds.num_sequences_);

    // The last sequence must end inside the .bin; count tokens on the way.
    const int64_t item = index_dtype_size(ds.dtype_);
    int64_t total = 0;
    for (int64_t i = 0; i < ds.num_sequences_; ++i) {
        int32_t len = ds.sequence_length(i);
        MT_CHECK(len >= 0, name, ": sequence ", i, " has negative length ", len);
        total += len;
    }
    ds.num_tokens_ = total;
    if (ds.num_sequences_ > 0) {
        const int64_t last = ds.num_sequences_ - 1, ptr = ds.sequence_pointer(last);
        const int64_t bytes = int64_t(ds.sequence_length(last)) * item;
        MT_CHECK(ds.sequence_pointer(0) >= 0 && ptr >= 0, name, ": negative sequence pointer");
        // Compared without ptr + bytes, which a pointer near INT64_MAX would wrap.
        MT_CHECK(ptr <= int64_t(ds.bin_.size()) && bytes <= int64_t(ds.bin_.size()) - ptr,
                 ds.bin_.path().string(), ": truncated: ", ds.bin_.size(),
                 " bytes, the index needs ", ptr, " + ", bytes);
    }
    return ds;
}

int32_t IndexedDataset::sequence_length(int64_t i) const {
    MT_CHECK(i >= 0 && i < num_sequences_, "sequence ", i, " out of range [0, ", num_sequences_,
             ")");
    return load<int32_t>(idx_.data() + lengths_off_ + 4 * i);
}

int64_t IndexedDataset::sequence_pointer(int64_t i) const {
    MT_CHECK(i >= 0 && i < num_sequences_, "sequence ", i, " out of range [0, ", num_sequences_,
             ")");
    return load<int64_t>(idx_.data() + pointers_off_ + 8 * i);
}

int64_t IndexedDataset::document_index(int64_t k) const {
    MT_CHECK(k >= 0 && k < num_doc_entries_, "document entry ", k, " out of range [0, ",
             num_doc_entries_, ")");
    return load<int64_t>(idx_.data() + docs_off_ + 8 * k);
}

int8_t IndexedDataset::sequence_mode(int64_t i) const {
    MT_CHECK(multimodal_, idx_.path().string(), " was opened without multimodal modes");
    MT_CHECK(i >= 0 && i < num_sequences_, "sequence ", i, " out of range [0, ", num_sequences_,
             ")");
    return int8_t(idx_.data()[modes_off_ + i]);
}

const uint8_t* IndexedDataset::sequence_bytes(int64_t i) const {
    const int64_t ptr = sequence_pointer(i);
    const int64_t bytes = int64_t(sequence_length(i)) * index_dtype_size(dtype_);
    const int64_t size = int64_t(bin_.size());
    MT_CHECK(ptr >= 0 && ptr <= size && bytes <= size - ptr, bin_.path().string(), ": sequence ", i,
             " (", bytes, " bytes at ", ptr, ") lies outside the file of ", size, " bytes");
    return bin_.data() + ptr;
}

std::vector<int64_t> IndexedDataset::get(int64_t i, int64_t offset, int64_t length) const {
    int32_t n = sequence_length(i);
    if (length < 0) length = n - offset;
    MT_CHECK(offset >= 0 && length >= 0 && offset <= n && length <= n - offset, "tokens from ",
             offset, " (", length, " of them) out of range for sequence ", i, " of length ", n);
    const int64_t item = index_dtype_size(dtype_);
    const uint8_t* p = sequence_bytes(i) + offset * item;
    std::vector<int64_t> out(length);
    for (int64_t t = 0; t < length; ++t) out[t] = token_at(p + t * item, dtype_);
    return out;
}

// ---------------------------------------------------------------------------------------------
// Builder

IndexedDatasetBuilder::IndexedDatasetBuilder(const std::string& prefix, IndexDType dtype,
                                             bool multimodal)
    : prefix_(prefix),
      dtype_(dtype),
      multimodal_(multimodal),
      bin_out_(output_target(bin_path(prefix))),
      idx_out_(output_target(idx_path(prefix))),
      bin_tmp_(temp_name(bin_out_)),
      idx_tmp_(temp_name(idx_out_)) {
    MT_CHECK(valid_dtype_code(uint8_t(dtype)), "unknown index dtype code ", int(dtype));
    bin_ = std::fopen(bin_tmp_.c_str(), "wb");
    MT_CHECK(bin_, "cannot create ", bin_tmp_.string(), ": ", std::strerror(errno));
    buffer_.reserve(kWriteBuffer);
}

IndexedDatasetBuilder::~IndexedDatasetBuilder() {
    if (bin_) std::fclose(bin_);
    if (!finalized_) {
        std::error_code ec;
        fs::remove(bin_tmp_, ec);
        fs::remove(idx_tmp_, ec);
    }
}

void IndexedDatasetBuilder::write_raw(const void* data, size_t bytes) {
    if (buffer_.size() + bytes > kWriteBuffer) flush();
    if (bytes >= kWriteBuffer) {
        MT_CHECK(std::fwrite(data, 1, bytes, bin_) == bytes, "write error on ", bin_tmp_.string(),
                 ": ", std::strerror(errno));
        return;
    }
    const auto* b = static_cast<const uint8_t*>(data);
    buffer_.insert(buffer_.end(), b, b + bytes);
}

void IndexedDatasetBuilder::flush() {
    if (buffer_.empty()) return;
    MT_CHECK(std::fwrite(buffer_.data(), 1, buffer_.size(), bin_) == buffer_.size(),
             "write error on ", bin_tmp_.string(), ": ", std::strerror(errno));
    buffer_.clear();
}

void IndexedDatasetBuilder::write_tokens(std::span<const int32_t> tokens) {
    auto [lo, hi] = token_range(dtype_);
    for (int32_t t : tokens)
        MT_CHECK(t >= lo && t <= hi, "token id ", t, " does not fit the dataset dtype ",
                 index_dtype_name(dtype_), " of ", bin_path(prefix_).string());
    const size_t item = index_dtype_size(dtype_);
    size_t done = 0;
    uint8_t chunk[8192];
    while (done < tokens.size()) {
        size_t n = std::min(tokens.size() - done, sizeof chunk / item);
        convert_tokens(tokens.data() + done, n, dtype_, chunk);
        write_raw(chunk, n * item);
        done += n;
    }
}

void IndexedDatasetBuilder::add_item(std::span<const int32_t> tokens, int8_t mode) {
    MT_CHECK(!finalized_, "add_item() after finalize()");
    write_tokens(tokens);
    lengths_.push_back(static_cast<int32_t>(tokens.size()));
    if (multimodal_) modes_.push_back(mode);
}

void IndexedDatasetBuilder::add_document(std::span<const int32_t> tokens,
                                         std::span<const int32_t> lengths,
                                         std::span<const int8_t> modes) {
    MT_CHECK(!finalized_, "add_document() after finalize()");
    int64_t sum = 0;
    for (int32_t l : lengths) {
        MT_CHECK(l >= 0, "add_document(): negative sequence length ", l);
        sum += l;
    }
    MT_CHECK(sum == int64_t(tokens.size()), "add_document(): sequence lengths sum to ", sum,
             " but the document has ", tokens.size(), " tokens");
    MT_CHECK(!multimodal_ || modes.size() == lengths.size(),
             "add_document(): a multimodal dataset needs one mode per sequence");
    write_tokens(tokens);
    lengths_.insert(lengths_.end(), lengths.begin(), lengths.end());
    if (multimodal_) modes_.insert(modes_.end(), modes.begin(), modes.end());
    doc_indices_.push_back(num_sequences());
}

void IndexedDatasetBuilder::end_document() {
    MT_CHECK(!finalized_, "end_document() after finalize()");
    doc_indices_.push_back(num_sequences());
}

void IndexedDatasetBuilder::add_index(const std::string& prefix) {
    MT_CHECK(!finalized_, "add_index() after finalize()");
    IndexedDataset other = IndexedDataset::open(prefix, multimodal_);
    MT_CHECK(other.dtype() == dtype_, "cannot merge ", idx_path(prefix).string(), " of dtype ",
             index_dtype_name(other.dtype()), " into a dataset of dtype ",
             index_dtype_name(dtype_));
    const int64_t offset = num_sequences();
    for (int64_t i = 0; i < other.num_sequences(); ++i) {
        lengths_.push_back(other.sequence_length(i));
        if (multimodal_) modes_.push_back(other.sequence_mode(i));
    }
    for (int64_t k = 1; k <= other.num_documents(); ++k)
        doc_indices_.push_back(offset + other.document_index(k));
    // Megatron copies the whole .bin; its sequences are contiguous from byte 0.
    const auto bytes = other.num_tokens() * index_dtype_size(dtype_);
    MT_CHECK(bytes <= int64_t(other.bin_file().size()), other.bin_file().path().string(),
             ": shorter than its index says");
    flush();
    write_raw(other.bin_file().data(), other.bin_file().size());
}

void IndexedDatasetBuilder::finalize() {
    MT_CHECK(!finalized_, "finalize() called twice");
    flush();
    MT_CHECK(std::fclose(bin_) == 0, "write error on ", bin_tmp_.string(), ": ",
             std::strerror(errno));
    bin_ = nullptr;

    std::string idx;
    idx.reserve(kHeaderBytes + 12 * lengths_.size() + 8 * doc_indices_.size() + modes_.size());
    idx.append(kMagic, sizeof kMagic);
    append<uint64_t>(idx, 1);
    idx.push_back(char(dtype_));
    append<uint64_t>(idx, lengths_.size());
    append<uint64_t>(idx, doc_indices_.size());
    idx.append(reinterpret_cast<const char*>(lengths_.data()), 4 * lengths_.size());
    // Pointers are the running byte offsets of the sequences, as Megatron recomputes them.
    const int64_t item = index_dtype_size(dtype_);
    int64_t pointer = 0;
    for (int32_t len : lengths_) {
        append<int64_t>(idx, pointer);
        pointer += int64_t(len) * item;
    }
    idx.append(reinterpret_cast<const char*>(doc_indices_.data()), 8 * doc_indices_.size());
    if (multimodal_) idx.append(reinterpret_cast<const char*>(modes_.data()), modes_.size());

    std::FILE* f = std::fopen(idx_tmp_.c_str(), "wb");
    MT_CHECK(f, "cannot create ", idx_tmp_.string(), ": ", std::strerror(errno));
    bool ok = std::fwrite(idx.data(), 1, idx.size(), f) == idx.size();
    ok = (std::fclose(f) == 0) && ok;
    MT_CHECK(ok, "write error on ", idx_tmp_.string(), ": ", std::strerror(errno));

    // Both on disk before either name points at them; the old index goes first, so that no
    // moment pairs an old .idx with a new .bin (a missing .idx is a clear error, a mixed pair
    // would not be).
    io::sync_path(bin_tmp_);
    io::sync_path(idx_tmp_);
    fs::remove(idx_out_);
    io::rename_path(bin_tmp_, bin_out_);
    io::rename_path(idx_tmp_, idx_out_);
    finalized_ = true;
}

}  // namespace mt::data
