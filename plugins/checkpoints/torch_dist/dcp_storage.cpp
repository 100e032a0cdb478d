#include "dcp_storage.h"

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "mt/checkpoint.h"
#include "mt/error.h"
#include "mt/io/mapped_file.h"
#include "mt/io/torch_file.h"

namespace mt::plugins::torch_dist {

namespace {

// The torch.save archive at `where`; errors name the file, the byte range and `what`.
io::PyValue load_archive(const fs::path& dir, const DcpLocation& where, const std::string& what) {
    const fs::path file = dir / where.relative_path;
    try {
        return io::load_torch_file(
            std::make_shared<const io::MappedFile>(file, where.offset, where.length));
    } catch (const Error& e) {
        MT_FAIL("cannot read ", what, " from ", file.string(), " (bytes ", where.offset, "..",
                where.offset + where.length, "): ", e.what());
    }
}

// The box [offsets, offsets + sizes) of `t` as a view.
Tensor box(Tensor t, const Shape& offsets, const Shape& sizes) {
    for (size_t d = 0; d < offsets.size(); ++d)
        t = t.slice(int64_t(d), offsets[d], offsets[d] + sizes[d]);
    return t;
}

// Marks the elements of each chunk's box in a tensor of shape `size`: a chunk over elements
// another already holds is an mt::Error (with the element count also matching, the chunks then
// cover the tensor exactly, no element left unwritten).
class Coverage {
  public:
    explicit Coverage(const Shape& size) : size_(size), marked_(size_t(shape_numel(size))) {}
    // False when the box overlaps one marked before.
    bool mark(const Shape& offsets, const Shape& sizes) {
        const size_t dims = size_.size();
        if (dims == 0) return mark_run(0, 1);
        for (int64_t d : sizes)
            if (d == 0) return true;
        Shape at(dims, 0);  // index within the box, last dimension as runs
        while (true) {
            int64_t start = 0;
            for (size_t d = 0; d < dims; ++d) start = start * size_[d] + offsets[d] + at[d];
            if (!mark_run(start, sizes[dims - 1])) return false;
            size_t d = dims - 1;
            while (d-- > 0) {
                if (++at[d] < sizes[d]) break;
                at[d] = 0;
            }
            if (d == size_t(-1)) return true;
        }
    }

  private:
    bool mark_run(int64_t start, int64_t length) {
        for (int64_t i = start; i < start + length; ++i) {
            if (marked_[size_t(i)]) return false;
            marked_[size_t(i)] = true;
        }
        return true;
    }
    Shape size_;
    std::vector<bool> marked_;
};

// Chunk `c` of `entry`: a tensor of the chunk's shape and the entry's dtype, or an error naming
// the file and the chunk.
Tensor load_chunk(const fs::path& dir, const DcpEntry& entry, const DcpChunk& c) {
    const std::string what = "chunk " + shape_str(c.offsets) + " of " + entry.fqn;
    const io::PyValue v = load_archive(dir, c.where, what);
    const fs::path file = dir / c.where.relative_path;
    MT_CHECK(v.kind() == io::PyKind::tensor, file.string(), ": ", what, " holds a Python ",
             io::py_kind_name(v.kind()), ", not a tensor");
    const Tensor& t = v.as_tensor();
    MT_CHECK(t.shape() == c.sizes && t.dtype() == entry.dtype, file.string(), ": ", what, " is ",
             t.describe(), " but .metadata says ", dtype_name(entry.dtype), shape_str(c.sizes));
    return t;
}

}  // namespace

Tensor read_dcp_tensor(const fs::path& dir, const DcpEntry& entry) {
    MT_CHECK(!entry.bytes, entry.fqn, " is a byte object, not a tensor");
    Tensor full = Tensor::empty(entry.size, entry.dtype);
    int64_t covered = 0;
    Coverage coverage(entry.size);
    for (const DcpChunk& c : entry.chunks) {
        const std::string what = "chunk " + shape_str(c.offsets) + " of " + entry.fqn;
        MT_CHECK(coverage.mark(c.offsets, c.sizes), entry.fqn, ": the checkpoint's ", what,
                 " of shape ", shape_str(c.sizes), " overlaps another chunk");
        box(full, c.offsets, c.sizes).copy_from(load_chunk(dir, entry, c));
        covered += shape_numel(c.sizes);
    }
    MT_CHECK(covered == full.numel(), entry.fqn, ": the checkpoint's chunks cover ", covered,
             " of its ", full.numel(), " elements ", shape_str(entry.size));
    return full;
}

std::optional<std::vector<Tensor>> read_dcp_whole_chunks(const fs::path& dir,
                                                         const DcpEntry& entry) {
    MT_CHECK(!entry.bytes, entry.fqn, " is a byte object, not a tensor");
    if (entry.size.empty() || entry.size[0] <= 0) return std::nullopt;
    const int64_t rows = entry.size[0];
    // Whole rows only: one chunk per index of the first dimension, or one for the whole tensor.
    const bool whole = entry.chunks.size() == 1 && entry.chunks[0].sizes == entry.size;
    if (!whole && int64_t(entry.chunks.size()) != rows) return std::nullopt;
    std::vector<int64_t> chunk_of(size_t(rows), -1);
    for (size_t k = 0; k < entry.chunks.size() && !whole; ++k) {
        const DcpChunk& c = entry.chunks[k];
        if (c.offsets.size() != entry.size.size() || c.sizes.size() != entry.size.size() ||
            c.sizes[0] != 1 || c.offsets[0] < 0 || c.offsets[0] >= rows ||
            chunk_of[size_t(c.offsets[0])] != -1)
            return std::nullopt;
        for (size_t d = 1; d < entry.size.size(); ++d)
            if (c.offsets[d] != 0 || c.sizes[d] != entry.size[d]) return std::nullopt;
        chunk_of[size_t(c.offsets[0])] = int64_t(k);
    }
    std::vector<Tensor> out;
    auto load = [&](const DcpChunk& c) { return load_chunk(dir, entry, c); };
    if (whole) {
        out.push_back(load(entry.chunks[0]));
    } else {
        for (int64_t i = 0; i < rows; ++i)
            out.push_back(load(entry.chunks[size_t(chunk_of[size_t(i)])]));
    }
    return out;
}

io::PyValue read_dcp_object(const fs::path& dir, const DcpEntry& entry) {
    MT_CHECK(entry.bytes && entry.chunks.size() == 1, entry.fqn, " is not a byte object");
    return load_archive(dir, entry.chunks[0].where, "object " + entry.fqn);
}

DistcpWriter::DistcpWriter(const fs::path& dir, std::string name)
    : path_(dir / name), name_(std::move(name)) {
    file_ = std::fopen(path_.c_str(), "wb");
    MT_CHECK(file_ != nullptr, "cannot create ", path_.string(), ": ", std::strerror(errno));
    std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
}

DistcpWriter::~DistcpWriter() {
    if (file_) std::fclose(file_);
}

DcpLocation DistcpWriter::add_tensor(const Tensor& tensor) {
    // DCP saves a chunk as a tensor with a storage of its own, exactly its size: a stand-in of
    // that shape is pickled and the chunk's bytes written as its storage.
    const Tensor c = tensor.contiguous();
    io::TorchArchiveWriter archive(file_, path_.string(),
                                   io::PyValue::tensor(tensor_placeholder(c.shape(), c.dtype())));
    archive.write_storage(c.raw_data(), size_t(c.nbytes()));
    return finish_archive(archive);
}

DcpLocation DistcpWriter::add_object(const io::PyValue& value) {
    io::TorchArchiveWriter archive(file_, path_.string(), value);
    for (const io::PickledStorage& s : archive.storages())
        archive.write_storage(s.storage->data, size_t(s.bytes));
    return finish_archive(archive);
}

// torch.save into a stream (an archive folder named "archive"), written straight into the
// .distcp file at its end.
DcpLocation DistcpWriter::finish_archive(io::TorchArchiveWriter& archive) {
    DcpLocation loc{name_, size_, archive.finish()};
    size_ += loc.length;
    return loc;
}

void DistcpWriter::close() {
    MT_CHECK(file_ != nullptr, path_.string(), ": writer already closed");
    const int rc = std::fclose(file_);
    file_ = nullptr;
    MT_CHECK(rc == 0, "cannot write ", path_.string(), ": ", std::strerror(errno));
}

}  // namespace mt::plugins::torch_dist
