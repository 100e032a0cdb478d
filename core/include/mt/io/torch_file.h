// torch.save / torch.load files (zip of data.pkl + data/<key> storage records) as PyValue trees:
// the container of Megatron's `torch` checkpoints (model_optim_rng.pt, distrib_optim.pt).
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/io/mapped_file.h"
#include "mt/io/pickle_writer.h"
#include "mt/io/py_value.h"

namespace mt::io {

// Loads a torch.save file. Tensors view the memory-mapped file without copying (read-only
// memory: clone() before writing into them) and keep the map alive; tensors sharing a storage
// record share one mt::Storage. Throws mt::Error naming the file and the defect.
MT_API PyValue load_torch_file(const std::filesystem::path& path);
// The same for an archive that is all of `file`, e.g. a window of a PyTorch distributed
// checkpoint's .distcp file holding one torch.save record (MappedFile's window constructor).
MT_API PyValue load_torch_file(std::shared_ptr<const MappedFile> file);

// The same file's pickle alone: every storage a placeholder (no data: its tensors must not be
// read), nothing but data.pkl read or checked; for what a file says besides its tensors.
MT_API PyValue load_torch_structure(const std::filesystem::path& path);

// Writes `value` as torch 2.x's torch.save(value, path) does: archive folder = the file's stem,
// records data.pkl, .format_version, .storage_alignment, byteorder, data/<key>..., version,
// .data/serialization_id; storages streamed from tensor memory into a temporary file renamed
// into place.
MT_API void save_torch_file(const std::filesystem::path& path, const PyValue& value);

class ZipWriter;

// save_torch_file with each storage's bytes given when the archive reaches its record, so a
// caller can make tensors one at a time (a streaming save): the constructor writes data.pkl and
// the small records (the pickle needs only each storage's size, dtype and identity), then
// write_storage() is called once per storages() entry, in order, and finish() writes the rest.
// Without finish() (an exception unwinding) a file target is left untouched.
class MT_API TorchArchiveWriter {
  public:
    // torch.save(value, path): a temporary file renamed into place (synced) by finish().
    TorchArchiveWriter(const std::filesystem::path& path, const PyValue& value);
    // torch.save(value, stream) appended to `file` at its position (the archive folder is then
    // "archive", as torch names it for a stream); `name` names it in errors.
    TorchArchiveWriter(std::FILE* file, const std::string& name, const PyValue& value);
    ~TorchArchiveWriter();
    TorchArchiveWriter(const TorchArchiveWriter&) = delete;
    TorchArchiveWriter& operator=(const TorchArchiveWriter&) = delete;

    // The storages the pickle refers to, in record order.
    const std::vector<PickledStorage>& storages() const { return storages_; }
    size_t next_storage() const { return next_; }
    // The next storage's bytes: exactly storages()[next_storage()].bytes, in one or more calls
    // (the record ends when they are all written).
    void write_storage(const void* data, size_t bytes);
    // The closing records; returns the archive's size in bytes.
    uint64_t finish();

  private:
    void begin(const PyValue& value);

    std::unique_ptr<ZipWriter> zip_;
    std::string prefix_;
    std::vector<PickledStorage> storages_;
    size_t next_ = 0;
    uint64_t written_ = 0;  // of the current storage
};

}  // namespace mt::io
