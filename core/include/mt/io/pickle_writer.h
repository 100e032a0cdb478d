// Pickles a PyValue with protocol 2 exactly as Python's pickler does for torch.save (same opcodes,
// batching and memo), emitting each tensor's storage as a persistent id to be written beside it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/io/py_value.h"

namespace mt::io {

// A storage the pickle refers to by key: its record `data/<key>` holds `bytes` bytes at `data`.
struct PickledStorage {
    std::string key;  // "0", "1", ... in order of first encounter
    std::shared_ptr<Storage> storage;
    int64_t bytes = 0;
};

struct Pickled {
    std::string data;
    std::vector<PickledStorage> storages;
};

// Tensors become torch._utils._rebuild_tensor_v2 (parameters wrapped in _rebuild_parameter) over
// storages shared by identity; bytes use _codecs.encode, sets builtins.set, as protocol 2 does.
// Throws for tensors off the CPU and for one storage viewed with two dtypes.
MT_API Pickled write_pickle(const PyValue& value);

}  // namespace mt::io
