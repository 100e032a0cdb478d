// Reads a Python pickle (protocols 0-5 binary opcodes) into a PyValue tree, interpreting the
// handful of globals torch checkpoints rely on (tensors, OrderedDict, bytes, sets).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "mt/api.h"
#include "mt/io/py_value.h"

namespace mt::io {

// Turns a persistent id (the value BINPERSID pops) into a value, e.g. a torch storage record.
using PersistentLoad = std::function<PyValue(const PyValue& pid)>;

// Offered each key and value a dict receives while the pickle is read: true takes the pair (the
// dict does not hold it, and its memory goes once the filter lets it go), so that a caller can
// read a pickle too large to hold whole item by item. The pair is checked as the result is (depth,
// no cycle) before it is offered; an mt::Error thrown here fails the read.
using ItemFilter = std::function<bool(const PyValue& key, const PyValue& value)>;

// Unpickles `data`; `context` prefixes every error ("model_optim_rng.pt: data.pkl"), which also
// names the byte offset and the opcode. Without `persistent_load`, a persistent id is an error.
// Interpreted: torch._utils._rebuild_tensor(_v2) / _rebuild_parameter(_with_state) over storage
// values -> tensor; collections.OrderedDict -> ordered dict; _codecs.encode and bytes() -> bytes;
// set / frozenset -> set. Every other REDUCE/NEWOBJ/BUILD stays a generic PyObject.
MT_API PyValue read_pickle(std::string_view data, const std::string& context,
                           const PersistentLoad& persistent_load = {},
                           const ItemFilter& take_item = {});

}  // namespace mt::io
