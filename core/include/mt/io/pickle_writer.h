// Pickles a PyValue with protocol 2 exactly as Python's pickler does for torch.save (same opcodes,
// batching and memo), emitting each tensor's storage as a persistent id to be written beside it.
#pragma once

#include <memory>
#include <ostream>
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

// A pickle written a part at a time into `out` (protocol 2, as write_pickle writes), for a value
// too large to build as one PyValue: the caller lays out the enclosing objects and dicts with
// the opcodes below and saves each part, which is written and let go at once (its objects are
// not referred to later; the classes and shared strings keep their memo entries). No tensors.
class MT_API PickleStream {
  public:
    explicit PickleStream(std::ostream& out);  // writes the PROTO opcode
    ~PickleStream();
    PickleStream(const PickleStream&) = delete;
    PickleStream& operator=(const PickleStream&) = delete;

    // module.name.__new__(module.name), as a dataclass instance starts (its state follows,
    // then build()).
    void new_object(const std::string& module, const std::string& name);
    void build();       // BUILD: the value on top is the state of the object below it
    void empty_dict();  // EMPTY_DICT
    void mark();        // MARK, before a batch of items
    void set_items();   // SETITEMS: the keys and values since the mark go into the dict below
    void save(const PyValue& value);
    void finish();  // STOP; mt::Error when the stream failed

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace mt::io
