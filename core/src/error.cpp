#include "mt/error.h"

#include "mt/plugin.h"

namespace mt::detail {

void throw_error(const char* file, int line, const std::string& message) {
    throw Error(message, str(file, ":", line));
}

int register_guarded(void* registry, char* err, size_t err_len, void (*fn)(Registry&)) {
    auto report = [&](const char* what) {
        if (err && err_len) {
            size_t n = 0;
            for (; what[n] && n + 1 < err_len; ++n) err[n] = what[n];
            err[n] = '\0';
        }
        return 1;
    };
    try {
        fn(*static_cast<Registry*>(registry));
        return 0;
    } catch (const std::exception& e) {
        return report(e.what());
    } catch (...) {
        return report("unknown exception");
    }
}

}  // namespace mt::detail
