#include "dcp_storage.h"

#include <algorithm>
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

DcpTensorReader::DcpTensorReader(fs::path dir, DcpEntry entry)
    : dir_(std::move(dir)), entry_(std::move(entry)) {
    MT_CHECK(!entry_.bytes, entry_.fqn, " is a byte object, not a tensor");
    const size_t dims = entry_.size.size();
    int64_t covered = 0;
    for (size_t k = 0; k < entry_.chunks.size(); ++k) {
        const DcpChunk& c = entry_.chunks[k];
        MT_CHECK(c.offsets.size() == dims && c.sizes.size() == dims, entry_.fqn, ": chunk ",
                 shape_str(c.offsets), " of shape ", shape_str(c.sizes), " is not ", dims,
                 "-dimensional like the tensor ", shape_str(entry_.size));
        for (size_t d = 0; d < dims; ++d)
            MT_CHECK(
                c.offsets[d] >= 0 && c.sizes[d] >= 0 && c.sizes[d] <= entry_.size[d] - c.offsets[d],
                entry_.fqn, ": chunk ", shape_str(c.offsets), " of shape ", shape_str(c.sizes),
                " lies outside the tensor ", shape_str(entry_.size));
        if (dims > 0) longest_first_ = std::max(longest_first_, c.sizes[0]);
        by_offset_.push_back(k);
        covered += shape_numel(c.sizes);
    }
    if (dims > 0)
        std::sort(by_offset_.begin(), by_offset_.end(), [&](size_t a, size_t b) {
            return entry_.chunks[a].offsets[0] < entry_.chunks[b].offsets[0];
        });
    // The chunks tile the tensor: none overlaps another (those that start along dimension 0
    // before one ends are compared with it), and their elements add up to the tensor's.
    for (size_t i = 0; i < by_offset_.size() && dims > 0; ++i) {
        const DcpChunk& a = entry_.chunks[by_offset_[i]];
        for (size_t j = i + 1; j < by_offset_.size(); ++j) {
            const DcpChunk& b = entry_.chunks[by_offset_[j]];
            if (b.offsets[0] >= a.offsets[0] + a.sizes[0]) break;
            bool overlap = shape_numel(a.sizes) > 0 && shape_numel(b.sizes) > 0;
            for (size_t d = 0; d < dims && overlap; ++d)
                overlap = a.offsets[d] < b.offsets[d] + b.sizes[d] &&
                          b.offsets[d] < a.offsets[d] + a.sizes[d];
            MT_CHECK(!overlap, entry_.fqn, ": the checkpoint's chunk ", shape_str(b.offsets),
                     " of shape ", shape_str(b.sizes), " overlaps another chunk (",
                     shape_str(a.offsets), " of shape ", shape_str(a.sizes), ")");
        }
    }
    MT_CHECK(covered == shape_numel(entry_.size), entry_.fqn, ": the checkpoint's chunks cover ",
             covered, " of its ", shape_numel(entry_.size), " elements ", shape_str(entry_.size));
}

Tensor DcpTensorReader::read(const Shape& offsets, const Shape& sizes) const {
    const size_t dims = entry_.size.size();
    MT_CHECK(offsets.size() == dims && sizes.size() == dims, entry_.fqn, ": a ", sizes.size(),
             "-dimensional box of a ", dims, "-dimensional tensor");
    // The chunks that may meet the box: those starting along dimension 0 before its end and
    // less than the longest chunk before its start.
    auto first = by_offset_.begin(), last = by_offset_.end();
    if (dims > 0) {
        auto starts_before = [&](size_t k, int64_t at) { return entry_.chunks[k].offsets[0] < at; };
        first = std::lower_bound(by_offset_.begin(), by_offset_.end(),
                                 offsets[0] - longest_first_ + 1, starts_before);
        last = std::lower_bound(first, by_offset_.end(), offsets[0] + sizes[0], starts_before);
    }
    Tensor out;
    int64_t covered = 0;
    for (auto it = first; it != last; ++it) {
        const DcpChunk& c = entry_.chunks[*it];
        Shape lo(dims), extent(dims);
        bool meets = true;
        for (size_t d = 0; d < dims && meets; ++d) {
            lo[d] = std::max(offsets[d], c.offsets[d]);
            extent[d] = std::min(offsets[d] + sizes[d], c.offsets[d] + c.sizes[d]) - lo[d];
            meets = extent[d] > 0;
        }
        if (!meets) continue;
        if (!out.defined() && c.offsets == offsets && c.sizes == sizes)
            return load_chunk(dir_, entry_, c);  // the box is this chunk: a view of the file
        if (!out.defined()) out = Tensor::empty(sizes, entry_.dtype);
        Shape in_chunk(dims), in_box(dims);
        for (size_t d = 0; d < dims; ++d) {
            in_chunk[d] = lo[d] - c.offsets[d];
            in_box[d] = lo[d] - offsets[d];
        }
        box(out, in_box, extent).copy_from(box(load_chunk(dir_, entry_, c), in_chunk, extent));
        covered += shape_numel(extent);
    }
    // The chunks tile the tensor (checked when opened): they cover every box.
    MT_CHECK(covered == shape_numel(sizes), entry_.fqn, ": the checkpoint's chunks cover ", covered,
             " of the ", shape_numel(sizes), " elements of its box ", shape_str(offsets), " + ",
             shape_str(sizes), " (tensor ", shape_str(entry_.size), ")");
    return out.defined() ? out : Tensor::empty(sizes, entry_.dtype);
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
