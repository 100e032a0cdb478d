// The data files of a PyTorch Distributed Checkpoint: each chunk or object is a self-contained
// torch.save archive at a byte range of a .distcp file. Reads whole tensors back out of their
// chunks, and writes one rank's chunks into one .distcp file.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "dcp_metadata.h"
#include "mt/io/py_value.h"
#include "mt/io/torch_file.h"
#include "mt/tensor.h"

namespace mt::plugins::torch_dist {

// The tensor of `entry` in the iteration directory `dir`, read box by box: a box that one chunk
// holds exactly is a view of the file (no copy), any other is assembled from the chunks that
// meet it. A chunk that is missing, truncated, corrupt, mis-shaped or overlapping another is an
// mt::Error naming the .distcp file, the key and the reason.
class DcpTensorReader {
  public:
    DcpTensorReader(fs::path dir, DcpEntry entry);
    const DcpEntry& entry() const { return entry_; }
    // The box [offsets, offsets + sizes) of the global tensor, of shape `sizes`.
    Tensor read(const Shape& offsets, const Shape& sizes) const;
    // The whole tensor.
    Tensor read_all() const { return read(Shape(entry_.size.size(), 0), entry_.size); }

  private:
    fs::path dir_;
    DcpEntry entry_;
    std::vector<size_t> by_offset_;  // the chunks sorted by their first offset
    int64_t longest_first_ = 0;      // the largest extent of a chunk along dimension 0
};

// The value a byte entry holds (Megatron-core's ShardedObjects: torch.save of a one-item list).
io::PyValue read_dcp_object(const fs::path& dir, const DcpEntry& entry);

// Appends archives to <dir>/<name>, each written straight into the file (no scratch copies); the
// caller records the returned locations in the metadata, and the iteration directory is synced
// before it is renamed into place.
class DistcpWriter {
  public:
    DistcpWriter(const fs::path& dir, std::string name);
    ~DistcpWriter();
    DistcpWriter(const DistcpWriter&) = delete;
    DistcpWriter& operator=(const DistcpWriter&) = delete;

    // torch.save(tensor) as of a copy with its own minimal storage, as DCP stores a chunk (the
    // bytes are written from `tensor`, not copied first).
    DcpLocation add_tensor(const Tensor& tensor);
    // torch.save(value).
    DcpLocation add_object(const io::PyValue& value);
    void close();

  private:
    DcpLocation finish_archive(io::TorchArchiveWriter& archive);

    fs::path path_;
    std::string name_;
    std::FILE* file_ = nullptr;
    uint64_t size_ = 0;
};

}  // namespace mt::plugins::torch_dist
