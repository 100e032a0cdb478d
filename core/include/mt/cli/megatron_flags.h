// Every flag of Megatron-LM's arguments.py, known to the tools that stand for a Megatron entry
// point: a tool implements it (defines it itself), or this catalogue accepts it (it changes
// nothing here, with the reason) or refuses it ("not supported yet: <capability>").
#pragma once

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mt/api.h"
#include "mt/checkpoint.h"
#include "mt/model.h"

namespace mt::cli {

namespace po = boost::program_options;

// The Megatron entry point a tool stands for: training (pretrain_gpt.py) or inference
// (tools/run_text_generation_server.py, tasks/main.py's zero-shot tasks), which parse the same
// arguments.py but read different parts of it.
enum class MegatronTool { none, training, inference };

// One option string of Megatron's arguments.py, as tests/fixtures/megatron_flags/
// extract_flags.py read it (core/src/cli/megatron_flag_list.inc).
struct MegatronFlag {
    std::string_view flag;           // "--num-experts"
    std::string_view group;          // the argparse group's title: "moe"
    std::string_view kind;           // store_true, store_false or value
    std::string_view nargs;          // "", "*" or "+"
    std::string_view type;           // int, float, str, bool or a Python callable's name
    std::string_view choices;        // "a|b|c"; empty: any value
    std::string_view default_value;  // Python source ("None", "1", "'adam'"); "" for switches
    std::string_view dest;
};

// All of them, in arguments.py's order, and the Megatron-LM version they come from.
MT_API std::span<const MegatronFlag> megatron_flags();
// The flags of the newest Megatron-LM the tools take (core_v0.19, from its live parser:
// tests/fixtures/megatron_flags/extract_live_flags.py), which stores some args under other
// names (--norm-epsilon: layernorm_epsilon) and has options core_v0.13 lacks.
MT_API std::span<const MegatronFlag> newer_megatron_flags();
MT_API std::string_view newer_megatron_version();
// The flags of Megatron-DeepSpeed (microsoft/Megatron-DeepSpeed's megatron/arguments.py at the
// commit deepspeed_megatron_version() names, with DeepSpeed's --deepspeed and --deepspeed_config:
// tests/fixtures/megatron_flags/extract_deepspeed_flags.py), the other system whose launch
// scripts the tools run.
MT_API std::span<const MegatronFlag> deepspeed_megatron_flags();
MT_API std::string_view deepspeed_megatron_version();
// What the tools parse and the catalogue below is keyed by: core_v0.13's rows (widened to the
// choices and lists core_v0.19 and Megatron-DeepSpeed also take), then core_v0.19's own, then
// Megatron-DeepSpeed's own.
MT_API std::span<const MegatronFlag> known_megatron_flags();
// The argparse choices of a flag's MegatronFlag ("a|b|c" split; none for a free value).
MT_API std::vector<std::string_view> megatron_choices(const MegatronFlag& flag);
// Whether `value` is one of the argparse choices of Megatron's `flag` in either version
// (--tokenizer-type TikTokenizer, --optimizer muon): a tool without it refuses it as a missing
// capability, not as a typo.
MT_API bool is_megatron_choice(std::string_view flag, std::string_view value);
MT_API std::string_view megatron_version();
// The flags given in `vm` that core_v0.19 has and core_v0.13 lacks ("--dist-ckpt-optim-..."),
// which mark a script written for core_v0.19; empty for a core_v0.13 one.
MT_API std::vector<std::string> newer_megatron_flags_given(const po::variables_map& vm);

enum class FlagStatus {
    implemented,  // the tool defines the flag itself
    accepted,     // parsed, and changes nothing here (text: why)
    refused,      // an error when given (text: the capability megatron.cpp lacks)
    invalid,      // an error when given, as in Megatron (text: Megatron's message)
    unknown,      // neither: the tool would call it an unrecognised option
};

struct FlagVerdict {
    FlagStatus status = FlagStatus::unknown;
    std::string text;
    // For refused value flags: also accepted with these values (Megatron's default first).
    std::vector<std::string> harmless_values;
    // For refused flags: accepted when the flag named here has this value ("flag=value").
    std::string unless;
};

// The flags the catalogue has a row for (each should be one of known_megatron_flags()).
MT_API std::vector<std::string_view> catalogue_flags();
// What `tool` does with Megatron's `flag` ("--name") when the tool does not define it itself.
MT_API FlagVerdict catalogue_verdict(std::string_view flag, MegatronTool tool);
// The same for a tool whose own options are `defined`: implemented when it defines the flag,
// or the alias the flag is for (--persistent-save-interval: --save-interval).
MT_API FlagVerdict megatron_flag_verdict(std::string_view flag, MegatronTool tool,
                                         const po::options_description& defined);
// "implemented", "accepted: <why>", "refused: <capability>", "invalid: <message>", "unknown".
MT_API std::string describe(const FlagVerdict& verdict);

// The catalogue's flags that `defined` lacks, with Megatron's arity (switch, one value, or a
// list), to be parsed beside the tool's own options (not shown by --help).
MT_API po::options_description megatron_options(MegatronTool tool,
                                                const po::options_description& defined);
// The command-line words with Megatron's aliases of the tool's own flags replaced by them
// (--persistent-save-interval N: --save-interval N), Megatron-DeepSpeed's names too
// (--num-key-value-heads N: --group-query-attention --num-query-groups N; --normalization
// rmsnorm: RMSNorm; its per-layer --num-experts 64 128 as the one value 64,128, refused).
MT_API std::vector<std::string> megatron_aliases(std::vector<std::string> words,
                                                 const po::options_description& defined);
// After parsing: a usage error (po::error) for a catalogue flag's value that Megatron's parser
// would reject (not an int, not one of its choices); then mt::Error for the first refused or
// invalid flag the command line gave ("--num-experts 8: not supported yet: MoE ...").
MT_API void check_megatron_values(MegatronTool tool, const po::options_description& defined,
                                  const po::variables_map& vm);
MT_API void check_megatron_flags(MegatronTool tool, const po::options_description& defined,
                                 const po::variables_map& vm);

// A checkpoint's args walked over Megatron's model-shaping arguments, of both versions
// (megatron_flags(): the network size, MoE, MLA, heterogeneous and experimental groups and
// --qk-l2-norm / --qk-layernorm; newer_megatron_flags() adds the transformer configuration and
// experimental attention variants): an entry the model family does not read itself
// (`family_flags`), that does not hold what Megatron's parse_args + validate_args store when the
// flag is not given (either version's default, a value validate_args derives such as
// encoder_num_layers = num_layers, or one the catalogue calls harmless), that matters for the
// model (MoE options only with experts, MLA options only with multi-latent attention, ...), and
// that the inference tools do not accept as changing nothing, is an mt::Error
// "checkpoint args: <dest> = <value>: not supported yet: <capability>" (an argument nothing here
// knows: "not supported yet: <dest>"), never a silently different model.
MT_API void check_checkpoint_model_args(const CheckpointArgs& args,
                                        const std::vector<FlagInfo>& family_flags);

// One line per Megatron flag: "<flag>\t<describe(verdict)>" (the hidden --print-megatron-flags
// of the tools, from which docs/flags.md is made).
MT_API std::string megatron_flag_statuses(MegatronTool tool,
                                          const po::options_description& defined);

}  // namespace mt::cli
