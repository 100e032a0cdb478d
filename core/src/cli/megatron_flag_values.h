// Reading Megatron's flag rows (megatron_flag_list.inc and megatron_flag_list_newer.inc) as
// argparse does: look-ups by option string, arity, Python defaults as command-line words, values
// compared as argparse stores them. Shared by the flag catalogue and the checkpoint-args walk.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mt/cli/megatron_flags.h"

namespace mt::cli::detail {

// The row of `flag` ("--num-layers") in megatron_flags() / newer_megatron_flags(); null: none.
const MegatronFlag* find_flag(std::string_view flag);
const MegatronFlag* find_newer_flag(std::string_view flag);
// The row of `flag` in known_megatron_flags() (either version's).
const MegatronFlag* find_known_flag(std::string_view flag);
// "--num-layers" -> "num-layers".
std::string name_of(std::string_view flag);
bool is_switch(const MegatronFlag& f);
bool is_list(const MegatronFlag& f);
// A Python literal default as the words a command line would give: 'adam' -> adam,
// ['p2p'] -> p2p, [0, 1] -> "0 1", [] -> "". Empty optional: None or not a literal.
std::optional<std::string> default_words(std::string_view python);
std::optional<double> number(const std::string& s);
// The same value as argparse would store it: numbers compare as numbers.
bool same_value(const MegatronFlag& f, const std::string& given, const std::string& expected);
// The conditions of a rule's `unless`, "flag=value[,flag=value...]", as (flag, value) pairs.
std::vector<std::pair<std::string, std::string>> unless_conditions(const std::string& unless);

}  // namespace mt::cli::detail
