// The plugin ABI: each plugin .so exports one C function, mt_plugin_entry, returning a
// versioned descriptor. Behind it the plugin registers C++ factories into core's Registry.
// Rules: exceptions never cross the C entry; plugins are never unloaded before exit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mt/api.h"
#include "mt/version.h"

#define MT_PLUGIN_ENTRY_NAME "mt_plugin_entry"

extern "C" {
typedef struct mt_plugin_descriptor {
    uint32_t abi_version;  // MT_PLUGIN_ABI_VERSION the plugin was compiled against
    uint32_t struct_size;  // sizeof(mt_plugin_descriptor) at compile time
    const char* kind;      // "tokenizer" | "model" | "checkpoint" | "parallel" | "comm" | "backend"
    const char* name;      // plugin name, equals the file's libmt_<kind>_<name>.so suffix
    const char* plugin_version;  // the plugin's own version
    const char* build_id;        // MT_BUILD_ID of the build that compiled it
    // Registers the plugin's factories into an mt::Registry*. Returns 0 on success, otherwise
    // writes a NUL-terminated message into err. Never throws.
    int (*register_into)(void* registry, char* err, size_t err_len);
} mt_plugin_descriptor;

typedef const mt_plugin_descriptor* (*mt_plugin_entry_fn)(void);
}

namespace mt {
class Registry;
namespace detail {
// Runs fn(registry), turning any exception into (1, message). Defined in core.
MT_API int register_guarded(void* registry, char* err, size_t err_len, void (*fn)(Registry&));
}  // namespace detail
}  // namespace mt

// Defines the plugin's exported entry. register_fn: void(mt::Registry&).
#define MT_PLUGIN(kind_, name_, version_, register_fn)                                             \
    namespace {                                                                                    \
    int mt_plugin_register_(void* r, char* e, size_t n) {                                          \
        return ::mt::detail::register_guarded(r, e, n, register_fn);                               \
    }                                                                                              \
    const mt_plugin_descriptor mt_plugin_descriptor_ = {                                           \
        MT_PLUGIN_ABI_VERSION, sizeof(mt_plugin_descriptor), kind_, name_, version_,               \
        MT_BUILD_ID,           &mt_plugin_register_};                                              \
    }                                                                                              \
    extern "C" __attribute__((visibility("default"))) const mt_plugin_descriptor* mt_plugin_entry( \
        void) {                                                                                    \
        return &mt_plugin_descriptor_;                                                             \
    }
