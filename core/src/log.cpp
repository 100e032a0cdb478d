#include "mt/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace mt::log {

namespace {
std::atomic<Level> g_level{Level::info};
std::mutex g_mutex;
const char* prefix(Level level) {
    switch (level) {
        case Level::debug:
            return "debug: ";
        case Level::warn:
            return "warning: ";
        case Level::error:
            return "error: ";
        default:
            return "";
    }
}
}  // namespace

void set_level(Level level) {
    g_level = level;
}
Level level() {
    return g_level;
}

void write(Level level, const std::string& message) {
    if (level < g_level) return;
    std::lock_guard<std::mutex> lock(g_mutex);
    std::fprintf(stderr, "%s%s\n", prefix(level), message.c_str());
    std::fflush(stderr);
}

}  // namespace mt::log
