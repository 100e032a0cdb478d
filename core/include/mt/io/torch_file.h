// torch.save / torch.load files (zip of data.pkl + data/<key> storage records) as PyValue trees:
// the container of Megatron's `torch` checkpoints (model_optim_rng.pt, distrib_optim.pt).
#pragma once

#include <filesystem>
#include <memory>

#include "mt/api.h"
#include "mt/io/mapped_file.h"
#include "mt/io/py_value.h"

namespace mt::io {

// Loads a torch.save file. Tensors view the memory-mapped file without copying (read-only
// memory: clone() before writing into them) and keep the map alive; tensors sharing a storage
// record share one mt::Storage. Throws mt::Error naming the file and the defect.
MT_API PyValue load_torch_file(const std::filesystem::path& path);
// The same for an archive that is all of `file`, e.g. a window of a PyTorch distributed
// checkpoint's .distcp file holding one torch.save record (MappedFile's window constructor).
MT_API PyValue load_torch_file(std::shared_ptr<const MappedFile> file);

// Writes `value` as torch 2.x's torch.save(value, path) does: archive folder = the file's stem,
// records data.pkl, .format_version, .storage_alignment, byteorder, data/<key>..., version,
// .data/serialization_id; storages streamed from tensor memory into a temporary file renamed
// into place.
MT_API void save_torch_file(const std::filesystem::path& path, const PyValue& value);

}  // namespace mt::io
