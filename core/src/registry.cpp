#include "mt/registry.h"

#include "mt/backend.h"
#include "mt/checkpoint.h"
#include "mt/cli/megatron_flags.h"
#include "mt/communicator.h"
#include "mt/model.h"
#include "mt/parallel.h"
#include "mt/plugin_loader.h"
#include "mt/tokenizer.h"

namespace mt {

namespace {
std::string join(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
    return out.empty() ? "none" : out;
}

std::string join_paths(const std::vector<std::filesystem::path>& items) {
    std::string out;
    for (const auto& p : items) out += (out.empty() ? "" : ":") + p.string();
    return out;
}
}  // namespace

Registry::Registry() : loader_(std::make_unique<PluginLoader>(*this)) {}
Registry::~Registry() = default;

Registry& Registry::global() {
    // Never destroyed: objects made by plugins may outlive static destruction order.
    static Registry* registry = new Registry();
    return *registry;
}

template <class Table, class... Args>
auto Registry::create(Table& table, std::string_view kind, std::string_view name, Args&&... args) {
    if (!table.find(name)) loader_->load_kind(std::string(kind));
    const auto* factory = table.find(name);
    if (!factory) {
        const auto& failed = loader_->load_errors(std::string(kind));
        const std::string why =
            failed.empty() ? "" : "; plugins that could not be loaded: " + join(failed);
        MT_FAIL("unknown ", kind, " '", name, "'; available: ", join(table.names()),
                " (plugin search path: ", join_paths(loader_->search_path()), ")", why);
    }
    auto made = (*factory)(std::forward<Args>(args)...);
    MT_CHECK(made, "the ", kind, " factory for '", name, "' returned nothing");
    return made;
}

std::unique_ptr<Tokenizer> Registry::create_tokenizer(std::string_view name,
                                                      const TokenizerOptions& options) {
    if (!tokenizers_.find(name)) loader_->load_kind("tokenizer");
    // One of Megatron's --tokenizer-type choices that no plugin provides: a capability
    // megatron.cpp lacks, not a typo.
    if (!tokenizers_.find(name))
        MT_CHECK(!cli::is_megatron_choice("--tokenizer-type", name), "--tokenizer-type ", name,
                 ": not supported yet: the ", name, " tokenizer");
    return create(tokenizers_, "tokenizer", name, options);
}
std::unique_ptr<ModelFamily> Registry::create_model(std::string_view name) {
    return create(models_, "model", name);
}
std::unique_ptr<CheckpointFormat> Registry::create_checkpoint(std::string_view name) {
    return create(checkpoints_, "checkpoint", name);
}
std::unique_ptr<ParallelStrategy> Registry::create_parallel(std::string_view name) {
    return create(parallel_, "parallel", name);
}
std::unique_ptr<Backend> Registry::create_backend(std::string_view name, int device_index) {
    return create(backends_, "backend", name, device_index);
}
std::unique_ptr<Communicator> Registry::create_communicator(std::string_view name) {
    return create(communicators_, "comm", name);
}

std::vector<std::string> Registry::names(std::string_view kind) const {
    if (kind == "tokenizer") return tokenizers_.names();
    if (kind == "model") return models_.names();
    if (kind == "checkpoint") return checkpoints_.names();
    if (kind == "parallel") return parallel_.names();
    if (kind == "backend") return backends_.names();
    if (kind == "comm") return communicators_.names();
    MT_FAIL("unknown plugin kind '", kind,
            "'; kinds: tokenizer, model, checkpoint, parallel, backend, comm");
}

std::vector<std::string> Registry::names_from(const std::string& owner) const {
    std::vector<std::string> out;
    for (auto&& names : {tokenizers_.names_from(owner), models_.names_from(owner),
                         checkpoints_.names_from(owner), parallel_.names_from(owner),
                         backends_.names_from(owner), communicators_.names_from(owner)})
        out.insert(out.end(), names.begin(), names.end());
    return out;
}

}  // namespace mt
