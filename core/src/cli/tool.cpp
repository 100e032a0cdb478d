#include "mt/cli/tool.h"

#include <boost/program_options.hpp>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <map>

#include "mt/cli/flags.h"
#include "mt/cli/megatron_flags.h"
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
// A word argparse reads as a negative number ("-1", "-0.5", "-1e-3"), not as an option.
bool negative_number(const std::string& w) {
    if (w.size() < 2 || w[0] != '-' ||
        !(std::isdigit(static_cast<unsigned char>(w[1])) || w[1] == '.'))
        return false;
    char* end = nullptr;
    std::strtod(w.c_str(), &end);
    return end == w.c_str() + w.size();
}

// argparse takes "--flag -1" as the value -1 (its parser has no option that looks like a
// negative number); Boost would read "-1" as an option. Such a value, the flag's only one, is
// given as "--flag=-1".
std::vector<std::string> attach_negative_values(const std::vector<std::string>& words,
                                                const po::options_description& options,
                                                bool abbreviations) {
    std::vector<std::string> out;
    for (size_t i = 0; i < words.size(); ++i) {
        const std::string& w = words[i];
        if (i + 1 < words.size() && w.size() > 2 && w.compare(0, 2, "--") == 0 &&
            w.find('=') == std::string::npos && negative_number(words[i + 1]))
            if (const auto* o = options.find_nothrow(w.substr(2), abbreviations);
                o && o->semantic()->max_tokens() >= 1 &&
                (i + 2 == words.size() || words[i + 2].compare(0, 2, "--") == 0)) {
                out.push_back(w + "=" + words[++i]);
                continue;
            }
        out.push_back(w);
    }
    return out;
}
}  // namespace

std::vector<std::string> last_occurrences(const std::vector<std::string>& words,
                                          const po::options_description& options,
                                          bool abbreviations) {
    // Each flag's span: its word and the values it takes (none with "--flag=value" or a
    // switch; one; or, for a multi-value flag, the words up to the next "--" word).
    struct Span {
        std::string name;  // the flag's own name; empty for a word that is no flag
        size_t begin = 0, end = 0;
    };
    std::vector<Span> spans;
    for (size_t i = 0; i < words.size();) {
        const std::string& w = words[i];
        const po::option_description* o = nullptr;
        if (w.size() > 2 && w.compare(0, 2, "--") == 0)
            o = options.find_nothrow(w.substr(2, w.find('=') - 2), abbreviations);
        if (!o) {
            spans.push_back({"", i, i + 1});
            ++i;
            continue;
        }
        size_t end = i + 1;
        if (w.find('=') == std::string::npos) {
            const unsigned most = o->semantic()->max_tokens();
            while (end < words.size() && end - i - 1 < most && words[end].compare(0, 2, "--") != 0)
                ++end;
        }
        spans.push_back({o->long_name(), i, end});
        i = end;
    }
    std::map<std::string, size_t> last;
    for (size_t k = 0; k < spans.size(); ++k)
        if (!spans[k].name.empty()) last[spans[k].name] = k;
    std::vector<std::string> out;
    for (size_t k = 0; k < spans.size(); ++k)
        if (spans[k].name.empty() || last[spans[k].name] == k)
            out.insert(out.end(), words.begin() + long(spans[k].begin),
                       words.begin() + long(spans[k].end));
    return out;
}

int run_tool(int argc, char** argv, ToolSpec& spec) {
    PluginFlags plugins;
    po::options_description general("General", 100);
    general.add_options()("help,h", po::bool_switch(), "show this help and exit");
    po::options_description all(100);
    all.add(spec.options).add(plugin_flags(plugins)).add(general);
    // What is parsed: the tool's options (all, shown by --help) and, for a Megatron entry point,
    // the Megatron flags it does not define (the catalogue's, hidden).
    po::options_description parsed_options(100);
    parsed_options.add(all);
    const MegatronTool megatron = spec.megatron_args;
    if (megatron != MegatronTool::none) {
        parsed_options.add(megatron_options(megatron, all));
        po::options_description hidden("Hidden", 100);
        hidden.add_options()("print-megatron-flags", po::bool_switch(),
                             "print what this tool does with each Megatron-LM flag and exit");
        parsed_options.add(hidden);
    }

    po::variables_map vm;
    try {
        int style = po::command_line_style::default_style;
        if (!spec.allow_abbreviations) style &= ~po::command_line_style::allow_guessing;
        std::vector<std::string> words(argv + 1, argv + argc);
        if (megatron != MegatronTool::none) words = megatron_aliases(std::move(words), all);
        words = last_occurrences(words, parsed_options, spec.allow_abbreviations);
        words = attach_negative_values(words, parsed_options, spec.allow_abbreviations);
        const po::parsed_options parsed =
            po::command_line_parser(words).options(parsed_options).style(style).run();
        // argparse: words that belong to no flag are an error, not ignored.
        const std::vector<std::string> stray =
            po::collect_unrecognized(parsed.options, po::include_positional);
        if (!stray.empty()) {
            std::string list;
            for (const std::string& w : stray) list += (list.empty() ? "" : " ") + w;
            throw po::error("unrecognized arguments: " + list);
        }
        po::store(parsed, vm);
        if (vm["help"].as<bool>()) {
            std::cout << "usage: " << spec.name << " [options]\n\n"
                      << spec.description << "\n\n"
                      << all << "\n";
            if (megatron != MegatronTool::none)
                std::cout << "Megatron-LM's other flags are accepted (no effect here) or refused "
                             "(not supported yet):\n"
                          << spec.name << " --print-megatron-flags lists them, as docs/flags.md "
                          << "does.\n";
            return 0;
        }
        if (megatron != MegatronTool::none && vm["print-megatron-flags"].as<bool>()) {
            std::cout << "# " << spec.name << ": Megatron-LM " << megatron_version() << " and "
                      << newer_megatron_version() << " flags\n"
                      << megatron_flag_statuses(megatron, all);
            return 0;
        }
        // --list-plugins needs none of the tool's required flags.
        if (vm["list-plugins"].as<bool>()) {
            if (vm.count("plugin-dir"))
                plugins.plugin_dirs = vm["plugin-dir"].as<std::vector<std::string>>();
            plugins.list_plugins = true;
        } else {
            if (megatron != MegatronTool::none) {
                check_megatron_values(megatron, all, vm);
                // Before the required flags: a refused flag says more than a missing one.
                check_megatron_flags(megatron, all, vm);
            }
            po::notify(vm);
        }
    } catch (const po::error& e) {
        std::cerr << spec.name << ": error: " << e.what() << "\n"
                  << "try '" << spec.name << " --help'\n";
        return 2;
    } catch (const Error& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
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

int run_model_tool(int argc, char** argv, const std::string& default_model,
                   const std::function<void(const ModelFamily&, ToolSpec&)>& build) {
    std::unique_ptr<ModelFamily> family;
    try {
        family = model_family_from_argv(argc, argv, default_model);
    } catch (const std::exception& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    }
    ToolSpec spec;
    build(*family, spec);
    return run_tool(argc, argv, spec);
}

}  // namespace mt::cli
