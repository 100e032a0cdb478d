// The data files of a PyTorch Distributed Checkpoint: each chunk or object is a self-contained
// torch.save archive at a byte range of a .distcp file. Reads whole tensors back out of their
// chunks, and writes one rank's chunks into one .distcp file.
#pragma once

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "dcp_metadata.h"
#include "mt/io/py_value.h"
#include "mt/io/torch_file.h"
#include "mt/tensor.h"

namespace mt::plugins::torch_dist {

// The global tensor of `entry`, assembled from its chunks in the iteration directory `dir`. A
// chunk that is missing, truncated, corrupt or mis-shaped is an mt::Error naming the .distcp
// file, the key and the reason.
Tensor read_dcp_tensor(const fs::path& dir, const DcpEntry& entry);

// The chunks of `entry` as views of the files (no copy) when they are whole: one chunk for the
// whole tensor (returned alone), or one chunk per index of the first dimension (a one-rank
// save's chunk per layer of a stacked key), returned in index order, each [1, ...]. nullopt
// when the chunks split the tensor otherwise (read_dcp_tensor assembles those). Chunks are
// checked as read_dcp_tensor checks them.
std::optional<std::vector<Tensor>> read_dcp_whole_chunks(const fs::path& dir,
                                                         const DcpEntry& entry);

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
