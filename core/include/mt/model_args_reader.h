// Typed reads of a model family's arguments (ModelArgs: flag name -> text), each error naming
// the flag as the user typed it.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

#include "mt/error.h"
#include "mt/model.h"

namespace mt {

class ModelArgsReader {
  public:
    explicit ModelArgsReader(const ModelArgs& args) : args_(args) {}

    bool has(const char* name) const { return args_.find(name) != args_.end(); }
    const std::string& text(const char* name) const {
        auto it = args_.find(name);
        MT_CHECK(it != args_.end(), "--", name, " is required");
        return it->second;
    }
    int64_t integer(const char* name) const {
        const std::string& t = text(name);
        char* end = nullptr;
        long long v = std::strtoll(t.c_str(), &end, 10);
        MT_CHECK(!t.empty() && *end == '\0', "--", name, " ", t, ": not an integer");
        return v;
    }
    int64_t integer(const char* name, int64_t fallback) const {
        return has(name) ? integer(name) : fallback;
    }
    double real(const char* name, double fallback) const {
        if (!has(name)) return fallback;
        const std::string& t = text(name);
        char* end = nullptr;
        double v = std::strtod(t.c_str(), &end);
        MT_CHECK(!t.empty() && *end == '\0', "--", name, " ", t, ": not a number");
        return v;
    }
    bool flag(const char* name) const {
        if (!has(name)) return false;
        const std::string& t = text(name);
        MT_CHECK(t.empty() || t == "true" || t == "false", "--", name, " takes no value, got ", t);
        return t != "false";
    }
    // One of `choices` (argparse's choices=) for `name`, `fallback` when absent, or an error
    // listing them.
    template <class Enum, size_t N>
    Enum choice(const char* name, const char* fallback,
                const std::pair<const char*, Enum> (&choices)[N]) const {
        const std::string v = has(name) ? text(name) : fallback;
        std::string names;
        for (const auto& [option, e] : choices) {
            if (v == option) return e;
            names += std::string(names.empty() ? "" : ", ") + option;
        }
        MT_FAIL("--", name, " ", v.substr(0, 100), ": supported are ", names);
    }

  private:
    const ModelArgs& args_;
};

}  // namespace mt
