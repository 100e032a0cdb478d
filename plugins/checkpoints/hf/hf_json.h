// JSON text as transformers writes its files (json.dumps(indent=2, sort_keys=True)): objects
// with sorted keys, two-space indent, Python's float repr.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mt::plugins::hf::json {

// An object's members by key (a std::map: sorted), each value already JSON text; nested
// containers are rendered for their depth (0: the top level) by object() and strings().
using Members = std::map<std::string, std::string>;

std::string object(const Members& members, int depth);
std::string strings(const std::vector<std::string>& items, int depth);  // an array of strings

std::string integer(int64_t v);
std::string real(double v);  // Python's repr: 1e-05, 500000.0
std::string boolean(bool v);
std::string text(const std::string& v);

}  // namespace mt::plugins::hf::json
