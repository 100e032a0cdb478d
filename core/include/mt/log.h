// Process-wide logging to stderr with a level threshold; one logger for core, plugins and tools.
#pragma once

#include <string>

#include "mt/api.h"
#include "mt/error.h"

namespace mt::log {

enum class Level { debug = 0, info = 1, warn = 2, error = 3, quiet = 4 };

MT_API void set_level(Level level);
MT_API Level level();
MT_API void write(Level level, const std::string& message);

template <class... Args>
void debug(const Args&... a) {
    if (level() <= Level::debug) write(Level::debug, str(a...));
}
template <class... Args>
void info(const Args&... a) {
    if (level() <= Level::info) write(Level::info, str(a...));
}
template <class... Args>
void warn(const Args&... a) {
    if (level() <= Level::warn) write(Level::warn, str(a...));
}

}  // namespace mt::log
