// Registry: name -> factory tables, one per plugin kind. Plugins fill it from their entry
// function; tools create objects by name. A missing name makes the registry ask the
// PluginLoader for the plugins of that kind before failing with the list of known names.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mt/api.h"
#include "mt/error.h"

namespace mt {

class Tokenizer;
struct TokenizerOptions;
class ModelFamily;
class CheckpointFormat;
class ParallelStrategy;
class Backend;
class Communicator;
class PluginLoader;

// One kind's name -> factory table. Each entry records the plugin that registered it
// (the registry's current owner at the time).
template <class Interface, class... Args>
class FactoryTable {
  public:
    using Factory = std::function<std::unique_ptr<Interface>(Args...)>;

    explicit FactoryTable(const std::string* current_owner) : current_owner_(current_owner) {}

    void add(const std::string& name, Factory factory) {
        MT_CHECK(!name.empty(), "cannot register an empty name");
        auto [it, inserted] =
            entries_.try_emplace(name, Entry{std::move(factory), *current_owner_});
        MT_CHECK(inserted, "'", name, "' is registered twice (by ", it->second.owner, " and by ",
                 *current_owner_, ")");
    }
    const Factory* find(std::string_view name) const {
        auto it = entries_.find(name);
        return it == entries_.end() ? nullptr : &it->second.factory;
    }
    std::vector<std::string> names() const {
        std::vector<std::string> out;
        for (const auto& [name, entry] : entries_) out.push_back(name);
        return out;
    }
    std::vector<std::string> names_from(const std::string& owner) const {
        std::vector<std::string> out;
        for (const auto& [name, entry] : entries_)
            if (entry.owner == owner) out.push_back(name);
        return out;
    }

  private:
    struct Entry {
        Factory factory;
        std::string owner;
    };
    const std::string* current_owner_;
    std::map<std::string, Entry, std::less<>> entries_;
};

using TokenizerTable = FactoryTable<Tokenizer, const TokenizerOptions&>;
using ModelTable = FactoryTable<ModelFamily>;
using CheckpointTable = FactoryTable<CheckpointFormat>;
using ParallelTable = FactoryTable<ParallelStrategy>;
using BackendTable = FactoryTable<Backend, int /*device index*/>;
using CommunicatorTable = FactoryTable<Communicator>;

class MT_API Registry {
  public:
    Registry();
    ~Registry();
    Registry(const Registry&) = delete;
    Registry& operator=(const Registry&) = delete;

    // The process-wide registry that tools use.
    static Registry& global();

    // Tables, filled by plugins (and by tests that link a plugin's _impl directly).
    TokenizerTable& tokenizers() { return tokenizers_; }
    ModelTable& models() { return models_; }
    CheckpointTable& checkpoints() { return checkpoints_; }
    ParallelTable& parallel() { return parallel_; }
    BackendTable& backends() { return backends_; }
    CommunicatorTable& communicators() { return communicators_; }

    // Creates by name, loading plugins of that kind on a miss.
    std::unique_ptr<Tokenizer> create_tokenizer(std::string_view name, const TokenizerOptions& o);
    std::unique_ptr<ModelFamily> create_model(std::string_view name);
    std::unique_ptr<CheckpointFormat> create_checkpoint(std::string_view name);
    std::unique_ptr<ParallelStrategy> create_parallel(std::string_view name);
    std::unique_ptr<Backend> create_backend(std::string_view name, int device_index);
    std::unique_ptr<Communicator> create_communicator(std::string_view name);

    // Names registered so far under `kind` ("tokenizer", "model", ...).
    std::vector<std::string> names(std::string_view kind) const;
    // Names a given plugin (its "<kind>/<name>" owner tag) registered, across all kinds.
    std::vector<std::string> names_from(const std::string& owner) const;

    PluginLoader& loader() { return *loader_; }

    // The owner tag recorded for names added while a plugin registers ("builtin" otherwise).
    const std::string& current_owner() const { return current_owner_; }
    void set_current_owner(std::string owner) { current_owner_ = std::move(owner); }

  private:
    template <class Table, class... Args>
    auto create(Table& table, std::string_view kind, std::string_view name, Args&&... args);

    std::string current_owner_ = "builtin";  // declared first: the tables point at it
    TokenizerTable tokenizers_{&current_owner_};
    ModelTable models_{&current_owner_};
    CheckpointTable checkpoints_{&current_owner_};
    ParallelTable parallel_{&current_owner_};
    BackendTable backends_{&current_owner_};
    CommunicatorTable communicators_{&current_owner_};
    std::unique_ptr<PluginLoader> loader_;
};

}  // namespace mt
