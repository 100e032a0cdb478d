// Typed reads of a config.json object (or one nested in it), each error naming the file and the
// key; and the readers more than one family shares.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <string>

#include "hf_config.h"
#include "mt/error.h"

namespace mt::plugins::hf {

class ConfigJson {
  public:
    // `where`: the file (and the object within it) errors name.
    ConfigJson(simdjson::dom::object object, std::string where)
        : object_(object), where_(std::move(where)) {}

    bool has(const char* key) const {
        simdjson::dom::element e;
        return !object_[key].get(e) && !e.is_null();
    }
    int64_t integer(const char* key) const {
        int64_t v = 0;
        MT_CHECK(!object_[key].get_int64().get(v), where_, ": '", key, "' must be an integer");
        return v;
    }
    int64_t integer(const char* key, int64_t fallback) const {
        return has(key) ? integer(key) : fallback;
    }
    double real(const char* key, double fallback) const {
        if (!has(key)) return fallback;
        double v = 0;
        MT_CHECK(!object_[key].get_double().get(v), where_, ": '", key, "' must be a number");
        return v;
    }
    bool boolean(const char* key, bool fallback) const {
        if (!has(key)) return fallback;
        bool v = false;
        MT_CHECK(!object_[key].get_bool().get(v), where_, ": '", key, "' must be true or false");
        return v;
    }
    std::string text(const char* key, const std::string& fallback) const {
        if (!has(key)) return fallback;
        std::string_view v;
        MT_CHECK(!object_[key].get_string().get(v), where_, ": '", key, "' must be a string");
        return std::string(v);
    }
    simdjson::dom::object object() const { return object_; }
    const std::string& where() const { return where_; }

  private:
    simdjson::dom::object object_;
    std::string where_;
};

// Llama's and Nemotron-H's attention heads: grouped-query, head_dim when given (after
// hidden_size is read).
void read_attention_heads(const ConfigJson& j, HfConfig& c);

}  // namespace mt::plugins::hf
