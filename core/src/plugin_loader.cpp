#define BOOST_DLL_USE_STD_FS
#include "mt/plugin_loader.h"

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "mt/error.h"
#include "mt/log.h"
#include "mt/plugin.h"
#include "mt/registry.h"

namespace fs = std::filesystem;

namespace mt {

namespace {
constexpr const char* kKinds[] = {"tokenizer", "model",   "checkpoint",
                                  "parallel",  "backend", "comm"};

// "libmt_<kind>_<name>.so" -> {kind, name}; empty kind when the name does not match.
std::pair<std::string, std::string> parse_file_name(const fs::path& path) {
    std::string file = path.filename().string();
    const std::string prefix = "libmt_", suffix = ".so";
    if (file.size() <= prefix.size() + suffix.size() || file.rfind(prefix, 0) != 0 ||
        file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0)
        return {};
    std::string stem = file.substr(prefix.size(), file.size() - prefix.size() - suffix.size());
    for (const char* kind : kKinds) {
        std::string k = std::string(kind) + "_";
        if (stem.rfind(k, 0) == 0 && stem.size() > k.size()) return {kind, stem.substr(k.size())};
    }
    return {};
}
}  // namespace

struct PluginLoader::Impl {
    Registry& registry;
    std::vector<fs::path> extra_dirs;
    std::map<fs::path, size_t> by_path;  // canonical path -> index in infos
    std::vector<PluginInfo> infos;
    std::vector<boost::dll::shared_library> libraries;  // kept loaded until exit
    std::set<std::string> kinds_scanned;
    std::map<std::string, std::vector<std::string>> kind_errors;  // kind -> failed files' errors
    explicit Impl(Registry& r) : registry(r) {}

    // Plugin files on the search path, first hit per file name, optionally of one kind.
    std::vector<fs::path> discover(const std::string& kind, const std::vector<fs::path>& path) {
        std::vector<fs::path> found;
        std::set<std::string> seen;
        for (const auto& dir : path) {
            std::error_code ec;
            if (!fs::is_directory(dir, ec)) continue;
            std::vector<fs::path> files;
            for (const auto& entry : fs::directory_iterator(dir, ec)) files.push_back(entry.path());
            std::sort(files.begin(), files.end());
            for (const auto& file : files) {
                auto [k, n] = parse_file_name(file);
                if (k.empty() || (!kind.empty() && k != kind)) continue;
                if (seen.insert(file.filename().string()).second) found.push_back(file);
            }
        }
        return found;
    }
};

PluginLoader::PluginLoader(Registry& registry) : impl_(std::make_unique<Impl>(registry)) {}
PluginLoader::~PluginLoader() {
    // The libraries stay loaded for the rest of the process: objects created by a plugin keep
    // their vtables in it. Kept where a static reaches them, so leak checkers see no leak.
    static std::mutex mutex;
    static auto* kept = new std::vector<boost::dll::shared_library>;
    std::lock_guard lock(mutex);
    for (auto& lib : impl_->libraries) kept->push_back(std::move(lib));
}

void PluginLoader::add_search_dir(const fs::path& dir) {
    impl_->extra_dirs.push_back(dir);
}

std::vector<fs::path> PluginLoader::search_path() const {
    std::vector<fs::path> path = impl_->extra_dirs;
    if (const char* env = std::getenv("MT_PLUGIN_PATH")) {
        std::string s = env;
        size_t start = 0;
        while (start <= s.size()) {
            size_t end = s.find(':', start);
            if (end == std::string::npos) end = s.size();
            if (end > start) path.emplace_back(s.substr(start, end - start));
            start = end + 1;
        }
    }
    std::error_code ec;
    fs::path exe = boost::dll::program_location(ec);
    if (!ec) path.push_back(exe.parent_path().parent_path() / "lib" / "mt" / "plugins");
    path.emplace_back(MT_PLUGIN_DIR);
    return path;
}

const PluginInfo& PluginLoader::load_file(const fs::path& path) {
    std::error_code ec;
    MT_CHECK(fs::exists(path, ec), "plugin file not found: ", path.string());
    fs::path canonical = fs::canonical(path, ec);
    if (auto it = impl_->by_path.find(canonical); it != impl_->by_path.end())
        return impl_->infos[it->second];

    auto [file_kind, file_name] = parse_file_name(path);
    MT_CHECK(!file_kind.empty(), "plugin file ", path.string(),
             " is not named libmt_<kind>_<name>.so");

    std::error_code bec;
    boost::dll::shared_library lib(
        canonical, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, bec);
    MT_CHECK(!bec, "cannot load plugin ", path.string(), ": ", bec.message());
    MT_CHECK(lib.has(MT_PLUGIN_ENTRY_NAME), "plugin ", path.string(),
             " is not a megatron.cpp plugin: it exports no ", MT_PLUGIN_ENTRY_NAME);
    auto entry = lib.get<const mt_plugin_descriptor*()>(MT_PLUGIN_ENTRY_NAME);
    const mt_plugin_descriptor* d = entry();
    MT_CHECK(d, "plugin ", path.string(), ": ", MT_PLUGIN_ENTRY_NAME, " returned null");
    MT_CHECK(d->abi_version == MT_PLUGIN_ABI_VERSION, "plugin ", path.string(),
             " was built for plugin ABI version ", d->abi_version,
             " but this build uses ABI version ", MT_PLUGIN_ABI_VERSION, "; rebuild the plugin");
    MT_CHECK(d->struct_size >= sizeof(mt_plugin_descriptor), "plugin ", path.string(),
             " has a descriptor of ", d->struct_size, " bytes, expected at least ",
             sizeof(mt_plugin_descriptor));
    MT_CHECK(d->build_id && std::strcmp(d->build_id, MT_BUILD_ID) == 0, "plugin ", path.string(),
             " was built by '", d->build_id ? d->build_id : "(null)", "' but this build is '",
             MT_BUILD_ID, "'; rebuild the plugin with the same toolchain");
    MT_CHECK(d->kind && d->name && file_kind == d->kind && file_name == d->name, "plugin ",
             path.string(), " declares itself ", d->kind ? d->kind : "(null)", "/",
             d->name ? d->name : "(null)", ", which contradicts its file name");

    std::string owner = std::string(d->kind) + "/" + d->name;
    std::string previous_owner = impl_->registry.current_owner();
    impl_->registry.set_current_owner(owner);
    char err[1024] = {0};
    int rc = d->register_into(&impl_->registry, err, sizeof err);
    impl_->registry.set_current_owner(previous_owner);
    MT_CHECK(rc == 0, "plugin ", path.string(), " failed to register: ", err);

    PluginInfo info{canonical, d->kind, d->name, d->plugin_version ? d->plugin_version : "",
                    impl_->registry.names_from(owner)};
    log::debug("loaded plugin ", owner, " from ", canonical.string());
    impl_->libraries.push_back(std::move(lib));
    impl_->infos.push_back(std::move(info));
    impl_->by_path[canonical] = impl_->infos.size() - 1;
    return impl_->infos.back();
}

void PluginLoader::load_kind(const std::string& kind) {
    if (!impl_->kinds_scanned.insert(kind).second) return;
    // One plugin that cannot load (e.g. the NCCL one where libnccl is missing) must not hide
    // the others of its kind: its error is kept for the message of a name still not found.
    for (const auto& file : impl_->discover(kind, search_path())) {
        try {
            load_file(file);
        } catch (const Error& e) {
            impl_->kind_errors[kind].push_back(e.what());
            log::debug("skipped plugin ", file.string(), ": ", e.what());
        }
    }
}

const std::vector<std::string>& PluginLoader::load_errors(const std::string& kind) const {
    static const std::vector<std::string> none;
    auto it = impl_->kind_errors.find(kind);
    return it == impl_->kind_errors.end() ? none : it->second;
}

std::vector<PluginInfo> PluginLoader::load_all() {
    for (const auto& file : impl_->discover("", search_path())) load_file(file);
    for (const char* kind : kKinds) impl_->kinds_scanned.insert(kind);
    return impl_->infos;
}

const std::vector<PluginInfo>& PluginLoader::loaded() const {
    return impl_->infos;
}

}  // namespace mt
