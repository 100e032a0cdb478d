// mt::Error is the one exception type of megatron.cpp; MT_CHECK throws it with a message that
// names the offending file, line or field. Tools catch it in main and print "error: <what>".
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

#include "mt/api.h"

namespace mt {

class MT_API Error : public std::runtime_error {
  public:
    // `where` is the source location that threw, kept apart from the user-facing message.
    Error(const std::string& message, std::string where = {})
        : std::runtime_error(message), where_(std::move(where)) {}
    const std::string& where() const noexcept { return where_; }

  private:
    std::string where_;
};

// Concatenates anything streamable: mt::str("expected ", n, " got ", m).
template <class... Args>
std::string str(const Args&... args) {
    std::ostringstream os;
    (os << ... << args);
    return os.str();
}

namespace detail {
[[noreturn]] MT_API void throw_error(const char* file, int line, const std::string& message);
}  // namespace detail

}  // namespace mt

// MT_CHECK(cond, parts...): throws mt::Error(str(parts...)) when cond is false.
#define MT_CHECK(cond, ...)                                                                 \
    do {                                                                                    \
        if (!(cond)) ::mt::detail::throw_error(__FILE__, __LINE__, ::mt::str(__VA_ARGS__)); \
    } while (0)

// MT_FAIL(parts...): throws unconditionally.
#define MT_FAIL(...) ::mt::detail::throw_error(__FILE__, __LINE__, ::mt::str(__VA_ARGS__))
