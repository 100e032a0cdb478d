// JsonWriter: builds JSON text the way Python's json.dumps writes it (", " and ": " separators,
// non-ASCII escaped as \uXXXX, floats as repr), for the tools' JSON outputs: the generation
// server's responses, --genfile lines and megatron-eval's --output-json.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mt/api.h"

namespace mt::io {

class MT_API JsonWriter {
  public:
    JsonWriter& begin_object();
    JsonWriter& end_object();
    JsonWriter& begin_array();
    JsonWriter& end_array();
    // The next member's name (inside an object).
    JsonWriter& key(std::string_view name);
    JsonWriter& value(std::string_view utf8);
    JsonWriter& value(const char* utf8) { return value(std::string_view(utf8)); }
    JsonWriter& value(double v);
    JsonWriter& value(int64_t v);
    JsonWriter& value(int v) { return value(int64_t(v)); }
    JsonWriter& value(bool v);
    JsonWriter& null();

    const std::string& str() const { return out_; }

  private:
    void separate();  // ", " between the items of the innermost container

    std::string out_;
    std::vector<bool> first_;  // per open container: no item written yet
    bool after_key_ = false;
};

// `utf8` as a JSON string literal, quotes included (invalid UTF-8 bytes become U+FFFD); without
// ensure_ascii, characters past ASCII stay as they are (json.dumps(ensure_ascii=False)).
MT_API std::string json_quote(std::string_view utf8, bool ensure_ascii = true);

}  // namespace mt::io
