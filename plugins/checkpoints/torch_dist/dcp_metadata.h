// The `.metadata` file of a PyTorch Distributed Checkpoint (torch.distributed.checkpoint) as
// Megatron-core's torch_dist strategy writes it: every tensor's global shape and stored chunks,
// every byte object, and where each one's bytes lie (.distcp file, offset, length).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "mt/dtype.h"
#include "mt/tensor.h"

namespace mt::plugins::torch_dist {

namespace fs = std::filesystem;

// Bytes [offset, offset + length) of one .distcp file of the iteration directory.
struct DcpLocation {
    std::string relative_path;  // "__0_0.distcp"
    uint64_t offset = 0, length = 0;
};

// One stored piece of a tensor: the box [offsets, offsets + sizes) of the global tensor, kept as
// a self-contained torch.save archive of a tensor of shape `sizes`.
struct DcpChunk {
    Shape offsets, sizes;
    DcpLocation where;
};

// A tensor (TensorStorageMetadata) or a pickled object (BytesStorageMetadata).
struct DcpEntry {
    std::string fqn;  // the sharded key, e.g. "decoder.layers.mlp.linear_fc1.weight"
    bool bytes = false;
    DType dtype = DType::f32;      // tensors only
    Shape size;                    // tensors only: the global shape
    std::vector<DcpChunk> chunks;  // tensors: the stored boxes; bytes: one, offsets empty
    // A tensor megatron-core stored flattened (the distributed optimizer's ranges: global shape
    // [chunks per dimension..., elements per chunk], see torch_dist_flattened.h): the original
    // global shape, its mcore_data 'nd_reformulated_orig_global_shape'. Empty otherwise.
    Shape flattened_from;
};

struct DcpMetadata {
    std::vector<DcpEntry> entries;  // the checkpoint's order
    const DcpEntry* find(std::string_view fqn) const;
};

// A rank's entries as bytes to send to the rank that writes `.metadata`, and back.
std::string encode_entries(const std::vector<DcpEntry>& entries);
std::vector<DcpEntry> decode_entries(std::string_view bytes);

// Adds another rank's entries: a key already present gains their chunks (its dtype and global
// shape must agree; mt::Error naming the key otherwise), a new key is appended.
void merge_entries(DcpMetadata& into, std::vector<DcpEntry> entries);

// Reads `file` (a raw pickle of torch.distributed.checkpoint.metadata.Metadata); any defect is
// an mt::Error naming the file and what is wrong. Dataclass fields other than those read here
// (planner_data, storage_meta, mcore_data, ...) are ignored, as field sets grow across torch
// releases.
DcpMetadata read_dcp_metadata(const fs::path& file);

// Writes `metadata` as the pickle torch's FileSystemWriter does (the same classes, loadable by
// pickle.load in PyTorch 2.x), with Megatron-core's per-tensor `mcore_data` (empty dicts).
void write_dcp_metadata(const fs::path& file, const DcpMetadata& metadata);

}  // namespace mt::plugins::torch_dist
