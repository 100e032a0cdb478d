// The common frame of every megatron-* main(): parse flags (Megatron's names) as argparse does
// (a flag given twice takes its last value, multi-value flags included; no abbreviations unless
// the tool's script allows them), --help, --plugin-dir / --list-plugins, and error handling
// (usage errors exit 2, mt::Error exits 1 with "error: <message>").
#pragma once

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
#include <functional>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/cli/megatron_flags.h"
#include "mt/model.h"

namespace mt::cli {

namespace po = boost::program_options;

struct ToolSpec {
    std::string name;         // "megatron-preprocess"
    std::string description;  // one paragraph shown by --help
    po::options_description options{100};
    // Runs after parsing, once --help and --list-plugins are handled. Returns the exit code.
    std::function<int(const po::variables_map&)> run;
    // Unique prefixes of flag names accepted (argparse's allow_abbrev, which Megatron turns off
    // everywhere but preprocess_data.py).
    bool allow_abbreviations = false;
    // The Megatron entry point the tool stands for: every flag of Megatron's arguments.py that
    // the tool does not define is then parsed too, and accepted or refused as the catalogue
    // (mt/cli/megatron_flags.h) says; the hidden --print-megatron-flags lists what the tool
    // does with each (docs/flags.md).
    MegatronTool megatron_args = MegatronTool::none;
};

// The command-line words with every flag's earlier occurrences (the flag and its values)
// dropped, so the last one wins as in argparse; flags are matched by `options` (abbreviated
// when `abbreviations`), words that are no flag of it are kept in place.
MT_API std::vector<std::string> last_occurrences(const std::vector<std::string>& words,
                                                 const po::options_description& options,
                                                 bool abbreviations);

MT_API int run_tool(int argc, char** argv, ToolSpec& spec);

// run_tool for the tools built around a model family (train, generate, eval): the family --model
// names (default `default_model`; --plugin-dir searched first) is created before parsing, so
// `build` can add its flags (model_flags(family)) to the spec it fills. A family that cannot be
// created is "error: ..." and exit 1.
MT_API int run_model_tool(int argc, char** argv, const std::string& default_model,
                          const std::function<void(const ModelFamily&, ToolSpec&)>& build);

}  // namespace mt::cli
