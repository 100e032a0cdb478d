// Python's repr() of a list of str (as str(list) writes it) and of a bool: how Megatron's
// unique_identifiers record options (the dataset caches' names hash that text).
#pragma once

#include <string>
#include <vector>

#include "mt/api.h"

namespace mt::text {

// "['<unk>', '<s>', \"it's\"]": each item quoted and escaped as CPython's unicode_repr does.
MT_API std::string python_repr(const std::vector<std::string>& items);
// "True" / "False".
inline std::string python_bool(bool value) {
    return value ? "True" : "False";
}

}  // namespace mt::text
