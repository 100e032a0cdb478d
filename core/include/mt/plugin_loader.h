// PluginLoader: finds libmt_<kind>_<name>.so files on the search path, loads them with
// Boost.DLL, checks their ABI version and build id, and lets them register into a Registry.
// Search order (first hit wins): --plugin-dir DIRs, $MT_PLUGIN_PATH (colon-separated),
// <exe>/../lib/mt/plugins, the compiled-in MT_PLUGIN_DIR. Plugins are never unloaded.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "mt/api.h"

namespace mt {

class Registry;

struct PluginInfo {
    std::filesystem::path path;
    std::string kind, name, version;
    std::vector<std::string> registered;  // names it added to the registry
};

class MT_API PluginLoader {
  public:
    explicit PluginLoader(Registry& registry);
    ~PluginLoader();

    // Directories searched before the environment and default ones (--plugin-dir).
    void add_search_dir(const std::filesystem::path& dir);
    // The full search path in order, existing or not.
    std::vector<std::filesystem::path> search_path() const;

    // Loads one plugin file (no-op if that file is already loaded). Throws mt::Error naming the
    // path and the reason: missing file, not loadable, no entry, ABI/build mismatch, failed
    // registration, or a plugin whose descriptor contradicts its file name.
    const PluginInfo& load_file(const std::filesystem::path& path);
    // Loads every plugin of `kind` found on the search path (first hit per file name wins). A
    // file that fails to load is skipped; its error is kept in load_errors(kind).
    void load_kind(const std::string& kind);
    // Why plugin files of `kind` could not be loaded by load_kind (empty: all loaded).
    const std::vector<std::string>& load_errors(const std::string& kind) const;
    // Loads every plugin on the search path and describes each (for --list-plugins).
    std::vector<PluginInfo> load_all();

    const std::vector<PluginInfo>& loaded() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace mt
