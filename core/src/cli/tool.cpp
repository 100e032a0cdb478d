#include "mt/cli/tool.h"

#include <boost/program_options.hpp>
#include <iostream>

#include "mt/cli/flags.h"
#include "mt/error.h"
#include "mt/plugin_loader.h"
#include "mt/registry.h"

namespace mt::cli {

namespace {
void print_plugins(PluginLoader& loader) {
    auto plugins = loader.load_all();
    std::cout << "plugin search path:\n";
    for (const auto& dir : loader.search_path()) std::cout << "  " << dir.string() << "\n";
    if (plugins.empty()) std::cout << "no plugins found\n";
    for (const auto& p : plugins) {
        std::cout << p.kind << "/" << p.name << " " << p.version << "  " << p.path.string()
                  << "\n    provides:";
        for (const auto& n : p.registered) std::cout << " " << n;
        std::cout << "\n";
    }
}
}  // namespace

int run_tool(int argc, char** argv, ToolSpec& spec) {
    PluginFlags plugins;
    po::options_description general("General", 100);
    general.add_options()("help,h", po::bool_switch(), "show this help and exit");
    po::options_description all(100);
    all.add(spec.options).add(plugin_flags(plugins)).add(general);

    po::variables_map vm;
    try {
        po::store(po::command_line_parser(argc, argv).options(all).run(), vm);
        if (vm["help"].as<bool>()) {
            std::cout << "usage: " << spec.name << " [options]\n\n"
                      << spec.description << "\n\n"
                      << all << "\n";
            return 0;
        }
        // --list-plugins needs none of the tool's required flags.
        if (vm["list-plugins"].as<bool>()) {
            if (vm.count("plugin-dir"))
                plugins.plugin_dirs = vm["plugin-dir"].as<std::vector<std::string>>();
            plugins.list_plugins = true;
        } else {
            po::notify(vm);
        }
    } catch (const po::error& e) {
        std::cerr << spec.name << ": error: " << e.what() << "\n"
                  << "try '" << spec.name << " --help'\n";
        return 2;
    }
    try {
        auto& registry = Registry::global();
        for (const auto& dir : plugins.plugin_dirs) registry.loader().add_search_dir(dir);
        if (plugins.list_plugins) {
            print_plugins(registry.loader());
            return 0;
        }
        return spec.run(vm);
    } catch (const std::exception& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    }
}

int run_model_tool(int argc, char** argv,
                   const std::function<void(const ModelFamily&, ToolSpec&)>& build) {
    std::unique_ptr<ModelFamily> family;
    try {
        family = model_family_from_argv(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    }
    ToolSpec spec;
    build(*family, spec);
    return run_tool(argc, argv, spec);
}

}  // namespace mt::cli
