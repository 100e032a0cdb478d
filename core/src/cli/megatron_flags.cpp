#include "mt/cli/megatron_flags.h"

#include <algorithm>
#include <boost/program_options.hpp>
#include <cerrno>
#include <cstdlib>
#include <deque>
#include <map>
#include <optional>
#include <sstream>

#include "megatron_flag_catalogue.h"
#include "megatron_flag_values.h"
#include "mt/error.h"

namespace mt::cli {

namespace {

constexpr MegatronFlag kFlags[] = {
#define MT_MEGATRON_FLAG(flag, group, kind, nargs, type, choices, default_value, dest) \
    MegatronFlag{flag, group, kind, nargs, type, choices, default_value, dest},
#include "megatron_flag_list.inc"
#undef MT_MEGATRON_FLAG
};

constexpr MegatronFlag kNewerFlags[] = {
#define MT_MEGATRON_FLAG(flag, group, kind, nargs, type, choices, default_value, dest) \
    MegatronFlag{flag, group, kind, nargs, type, choices, default_value, dest},
#include "megatron_flag_list_newer.inc"
#undef MT_MEGATRON_FLAG
};

constexpr MegatronFlag kDeepSpeedFlags[] = {
#define MT_MEGATRON_FLAG(flag, group, kind, nargs, type, choices, default_value, dest) \
    MegatronFlag{flag, group, kind, nargs, type, choices, default_value, dest},
#include "megatron_flag_list_deepspeed.inc"
#undef MT_MEGATRON_FLAG
};

// Megatron-DeepSpeed's names for flags Megatron-LM spells otherwise (same meaning, other dest):
// the tools take them as the Megatron-LM flag (with a switch that Megatron-LM also needs for it).
struct Rename {
    std::string_view flag, megatron, with_switch;
};
constexpr Rename kDeepSpeedRenames[] = {
    {"--layernorm-epsilon", "--norm-epsilon", ""},
    {"--rotary-position-embeddings-theta", "--rotary-base", ""},
    // Megatron-DeepSpeed's GQA (with as many groups as heads: the same attention).
    {"--num-key-value-heads", "--num-query-groups", "--group-query-attention"},
    {"--deepscale", "--deepspeed", ""},
    {"--deepscale_config", "--deepspeed_config", ""},
};

// Megatron-DeepSpeed's spellings of Megatron-LM's choices.
struct RenamedChoice {
    std::string_view flag, value, megatron;
};
constexpr RenamedChoice kDeepSpeedChoices[] = {
    {"--normalization", "layernorm", "LayerNorm"},
    {"--normalization", "rmsnorm", "RMSNorm"},
};

// Megatron-DeepSpeed's list forms of Megatron-LM's one-value flags (--num-experts 64 64 128:
// PR-MoE's experts per layer), joined into one comma-separated value that the tools refuse by
// name instead of calling the rest unrecognised arguments.
constexpr std::string_view kDeepSpeedLists[] = {"--num-experts"};

// The two versions' choices of a flag: either's when both name some, none (any value) when
// either takes any.
std::string_view union_of_choices(std::string_view older, std::string_view newer,
                                  std::deque<std::string>& storage) {
    if (older.empty() || newer.empty()) return {};
    std::string merged(older);
    std::string_view rest = newer;
    while (!rest.empty()) {
        const size_t bar = rest.find('|');
        const std::string_view choice = rest.substr(0, bar);
        if (("|" + merged + "|").find("|" + std::string(choice) + "|") == std::string::npos)
            merged += "|" + std::string(choice);
        if (bar == std::string_view::npos) break;
        rest.remove_prefix(bar + 1);
    }
    return storage.emplace_back(std::move(merged));
}

// `rows` widened by another version's rows of the same flags (its added choices, a list where
// it takes one; the rest of the row, the dest included, stays), then that version's other flags
// in its order.
void widen_by(std::vector<MegatronFlag>& rows, std::span<const MegatronFlag> other,
              std::deque<std::string>& storage) {
    std::map<std::string_view, const MegatronFlag*> more;
    for (const MegatronFlag& f : other) more[f.flag] = &f;
    for (MegatronFlag& f : rows) {
        auto it = more.find(f.flag);
        if (it == more.end()) continue;
        const MegatronFlag& n = *it->second;
        if (f.kind == n.kind) {  // Megatron-DeepSpeed's --profile takes a value: not widened
            f.choices = union_of_choices(f.choices, n.choices, storage);
            if (f.kind == "value" && f.nargs != n.nargs && !n.nargs.empty())
                f.nargs = f.nargs == "*" || n.nargs == "*" ? "*" : "+";
        }
        more.erase(it);
    }
    for (const MegatronFlag& f : other)
        if (more.count(f.flag)) rows.push_back(f);
}

// The flags the tools parse: core_v0.13's rows in its order, widened by core_v0.19's and then by
// Megatron-DeepSpeed's (its lower-case --normalization values, its --num-experts list, ...),
// followed by the flags only core_v0.19 has and those only Megatron-DeepSpeed has.
const std::vector<MegatronFlag>& known_flags() {
    static std::deque<std::string> storage;
    static const std::vector<MegatronFlag> known = [] {
        std::vector<MegatronFlag> out(std::begin(kFlags), std::end(kFlags));
        widen_by(out, kNewerFlags, storage);
        widen_by(out, kDeepSpeedFlags, storage);
        return out;
    }();
    return known;
}

using Index = std::map<std::string_view, const MegatronFlag*>;

Index index_of(std::span<const MegatronFlag> flags) {
    Index m;
    for (const MegatronFlag& f : flags) m[f.flag] = &f;
    return m;
}

const MegatronFlag* find_in(const Index& index, std::string_view flag) {
    auto it = index.find(flag);
    return it == index.end() ? nullptr : it->second;
}

const detail::CatalogueEntry* find_entry(std::string_view flag) {
    static const std::map<std::string_view, const detail::CatalogueEntry*> index = [] {
        std::map<std::string_view, const detail::CatalogueEntry*> m;
        for (const detail::CatalogueEntry& e : detail::catalogue()) m[e.flag] = &e;
        return m;
    }();
    auto it = index.find(flag);
    return it == index.end() ? nullptr : it->second;
}

// The first other option string argparse stores as it stores `f` (same dest and action:
// core_v0.19's --no-tp-comm-bulk-wgrad is core_v0.13's --disable-tp-comm-bulk-wgrad,
// --persistent-save-interval is --save-interval; core_v0.19's --enable-msc, store_true into
// core_v0.13's --disable-msc's store_false dest, is none) for which `wanted` holds.
template <class Pred>
const MegatronFlag* other_name(const MegatronFlag& f, Pred wanted) {
    for (const Rename& r : kDeepSpeedRenames)
        if (r.flag == f.flag)
            if (const MegatronFlag* other = detail::find_known_flag(r.megatron);
                other && wanted(*other))
                return other;
    for (const MegatronFlag& other : known_flags())
        if (other.dest == f.dest && other.kind == f.kind && other.flag != f.flag && wanted(other))
            return &other;
    return nullptr;
}

// The catalogue's row of a flag or, without one, of another name of it.
const detail::CatalogueEntry* entry_for(const MegatronFlag& f) {
    if (const detail::CatalogueEntry* e = find_entry(f.flag)) return e;
    const MegatronFlag* other =
        other_name(f, [](const MegatronFlag& o) { return find_entry(o.flag) != nullptr; });
    return other ? find_entry(other->flag) : nullptr;
}

}  // namespace

namespace detail {

const MegatronFlag* find_flag(std::string_view flag) {
    static const Index index = index_of(kFlags);
    return find_in(index, flag);
}

const MegatronFlag* find_newer_flag(std::string_view flag) {
    static const Index index = index_of(kNewerFlags);
    return find_in(index, flag);
}

const MegatronFlag* find_known_flag(std::string_view flag) {
    static const Index index = index_of(known_flags());
    return find_in(index, flag);
}

std::string name_of(std::string_view flag) {
    return std::string(flag.substr(2));
}

bool is_switch(const MegatronFlag& f) {
    return f.kind != "value";
}
bool is_list(const MegatronFlag& f) {
    return f.nargs == "*" || f.nargs == "+";
}

std::optional<std::string> default_words(std::string_view python) {
    auto unquote = [](std::string_view s) {
        while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
        while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
        if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front())
            s = s.substr(1, s.size() - 2);
        return std::string(s);
    };
    if (python.empty() || python == "None") return std::nullopt;
    if (python.front() == '[' && python.back() == ']') {
        std::string words;
        std::string_view inner = python.substr(1, python.size() - 2);
        while (!inner.empty()) {
            const size_t comma = inner.find(',');
            const std::string word = unquote(inner.substr(0, comma));
            if (!word.empty()) words += (words.empty() ? "" : " ") + word;
            if (comma == std::string_view::npos) break;
            inner.remove_prefix(comma + 1);
        }
        return words;
    }
    return unquote(python);
}

std::optional<double> number(const std::string& s) {
    if (s.empty()) return std::nullopt;
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(s.c_str(), &end);
    if (errno != 0 || end != s.c_str() + s.size()) return std::nullopt;
    return v;
}

bool same_value(const MegatronFlag& f, const std::string& given, const std::string& expected) {
    if (given == expected) return true;
    if (f.type != "int" && f.type != "float") return false;
    std::istringstream a(given), b(expected);
    std::string x, y;
    while (true) {
        const bool more_a = bool(a >> x), more_b = bool(b >> y);
        if (more_a != more_b) return false;
        if (!more_a) return true;
        const auto nx = number(x), ny = number(y);
        if (!nx || !ny || *nx != *ny) return false;
    }
}

std::vector<std::pair<std::string, std::string>> unless_conditions(const std::string& unless) {
    std::vector<std::pair<std::string, std::string>> out;
    std::istringstream parts(unless);
    for (std::string part; std::getline(parts, part, ',');) {
        const size_t eq = part.find('=');
        out.emplace_back(part.substr(0, eq), part.substr(eq + 1));
    }
    return out;
}

}  // namespace detail

namespace {

using namespace detail;

// The command line's value of a catalogue option (list values joined by spaces); nullopt for a
// switch or a flag that was not given.
std::optional<std::string> given_value(const MegatronFlag& f, const po::variables_map& vm) {
    const std::string name = name_of(f.flag);
    if (!vm.count(name) || vm[name].defaulted() || is_switch(f)) return std::nullopt;
    if (!is_list(f)) return vm[name].as<std::string>();
    std::string joined;
    for (const std::string& w : vm[name].as<std::vector<std::string>>())
        joined += (joined.empty() ? "" : " ") + w;
    return joined;
}

bool was_given(const MegatronFlag& f, const po::variables_map& vm) {
    const std::string name = name_of(f.flag);
    if (!vm.count(name) || vm[name].defaulted()) return false;
    return !is_switch(f) || vm[name].as<bool>();
}

// The tool's own option `name` has `value` (as text; a switch: "true" when given).
bool tool_flag_is(const po::variables_map& vm, const std::string& name, const std::string& value) {
    if (!vm.count(name)) return false;
    const boost::any& v = vm[name].value();
    if (const auto* s = boost::any_cast<std::string>(&v)) return *s == value;
    if (const auto* b = boost::any_cast<bool>(&v)) return (*b ? "true" : "false") == value;
    return false;
}

// Another name of the flag that the tool defines.
const MegatronFlag* defined_alias(const MegatronFlag& f, const po::options_description& defined) {
    return other_name(f, [&defined](const MegatronFlag& o) {
        return defined.find_nothrow(name_of(o.flag), false) != nullptr;
    });
}

// The catalogue flags among the parsed ones: those the tool does not define, whether or not
// an alias covers them (megatron_aliases rewrote those before parsing).
template <class Fn>
void for_each_catalogue_flag(MegatronTool tool, const po::options_description& defined, Fn fn) {
    for (const MegatronFlag& f : known_flags()) {
        if (defined.find_nothrow(name_of(f.flag), false) || defined_alias(f, defined)) continue;
        FlagVerdict v = catalogue_verdict(f.flag, tool);
        if (v.status == FlagStatus::accepted || v.status == FlagStatus::refused ||
            v.status == FlagStatus::invalid)
            fn(f, v);
    }
}

FlagVerdict verdict(FlagStatus status, std::string text) {
    FlagVerdict v;
    v.status = status;
    v.text = std::move(text);
    return v;
}

std::string with_value(const MegatronFlag& f, const po::variables_map& vm) {
    const auto value = given_value(f, vm);
    return std::string(f.flag) + (value && !value->empty() ? " " + *value : "");
}

}  // namespace

std::span<const MegatronFlag> megatron_flags() {
    return kFlags;
}

std::span<const MegatronFlag> known_megatron_flags() {
    return known_flags();
}

std::vector<std::string_view> megatron_choices(const MegatronFlag& flag) {
    std::vector<std::string_view> out;
    std::string_view rest = flag.choices;
    while (!rest.empty()) {
        const size_t bar = rest.find('|');
        out.push_back(rest.substr(0, bar));
        if (bar == std::string_view::npos) break;
        rest.remove_prefix(bar + 1);
    }
    return out;
}

bool is_megatron_choice(std::string_view flag, std::string_view value) {
    const MegatronFlag* f = find_known_flag(flag);
    if (!f) return false;
    for (const std::string_view choice : megatron_choices(*f))
        if (choice == value) return true;
    return false;
}

std::string_view megatron_version() {
    return MT_MEGATRON_VERSION;
}

std::vector<std::string> newer_megatron_flags_given(const po::variables_map& vm) {
    static const Index older = index_of(kFlags);
    std::vector<std::string> out;
    for (const MegatronFlag& f : kNewerFlags) {
        if (find_in(older, f.flag)) continue;
        const std::string name(f.flag.substr(2));
        if (vm.count(name) && !vm[name].defaulted()) out.emplace_back(f.flag);
    }
    return out;
}

std::span<const MegatronFlag> newer_megatron_flags() {
    return kNewerFlags;
}

std::string_view newer_megatron_version() {
    return MT_NEWER_MEGATRON_VERSION;
}

std::span<const MegatronFlag> deepspeed_megatron_flags() {
    return kDeepSpeedFlags;
}

std::string_view deepspeed_megatron_version() {
    return MT_DEEPSPEED_MEGATRON_VERSION;
}

std::vector<std::string_view> catalogue_flags() {
    std::vector<std::string_view> flags;
    for (const detail::CatalogueEntry& e : detail::catalogue()) flags.push_back(e.flag);
    return flags;
}

FlagVerdict catalogue_verdict(std::string_view flag, MegatronTool tool) {
    FlagVerdict v;
    const MegatronFlag* f = find_known_flag(flag);
    const detail::CatalogueEntry* e = f ? entry_for(*f) : nullptr;
    if (!e || tool == MegatronTool::none) return v;
    const detail::FlagRule& rule = tool == MegatronTool::training ? e->training : e->inference;
    // implemented: the tool should define it; without that the flag is unknown to it.
    if (rule.status == FlagStatus::implemented) return v;
    v.status = rule.status;
    v.text = rule.text;
    if (v.status == FlagStatus::refused && !is_switch(*f)) {
        if (auto d = default_words(f->default_value)) v.harmless_values.push_back(*d);
        // core_v0.19 changed some defaults (--rerun-mode validate_results): both are Megatron's.
        if (const MegatronFlag* newer = find_newer_flag(flag))
            if (auto d = default_words(newer->default_value);
                d && (v.harmless_values.empty() || v.harmless_values.front() != *d))
                v.harmless_values.push_back(*d);
        if (rule.also_harmless) v.harmless_values.push_back(rule.also_harmless);
    }
    if (rule.unless) v.unless = rule.unless;
    return v;
}

FlagVerdict megatron_flag_verdict(std::string_view flag, MegatronTool tool,
                                  const po::options_description& defined) {
    const MegatronFlag* f = find_known_flag(flag);
    if (!f) return {};
    if (const auto* own = defined.find_nothrow(name_of(flag), false)) {
        // A flag the tool defines only to accept it says so in its help: "accepted: why".
        const std::string& help = own->description();
        if (help.rfind("accepted", 0) == 0) {
            size_t start = help.find_first_not_of(":;, ", 8);
            return verdict(FlagStatus::accepted,
                           start == std::string::npos ? "" : help.substr(start));
        }
        return verdict(FlagStatus::implemented, "");
    }
    if (const MegatronFlag* alias = defined_alias(*f, defined))
        return verdict(FlagStatus::implemented, "as " + std::string(alias->flag));
    return catalogue_verdict(flag, tool);
}

std::string describe(const FlagVerdict& v) {
    switch (v.status) {
        case FlagStatus::implemented:
            return v.text.empty() ? "implemented" : "implemented (" + v.text + ")";
        case FlagStatus::accepted:
            return "accepted: " + v.text;
        case FlagStatus::refused:
        case FlagStatus::invalid: {
            std::string s = (v.status == FlagStatus::refused ? "refused: " : "invalid: ") + v.text;
            std::string ok;
            for (const std::string& h : v.harmless_values)
                if (!h.empty()) ok += (ok.empty() ? "" : " or ") + h;
            if (!ok.empty()) s += " (accepted with the value " + ok + ")";
            if (!v.unless.empty()) {
                std::string when;
                for (const auto& [flag, value] : unless_conditions(v.unless))
                    when +=
                        (when.empty() ? "" : " and ") +
                        (value == "false" ? "without --" + flag : "with --" + flag + " " + value);
                s += " (accepted " + when + ")";
            }
            return s;
        }
        case FlagStatus::unknown:
            break;
    }
    return "unknown";
}

po::options_description megatron_options(MegatronTool tool,
                                         const po::options_description& defined) {
    po::options_description g("Megatron-LM flags this tool accepts or refuses", 100);
    for_each_catalogue_flag(tool, defined, [&](const MegatronFlag& f, const FlagVerdict& v) {
        const std::string name = name_of(f.flag);
        const std::string help = describe(v);
        if (is_switch(f))
            g.add_options()(name.c_str(), po::bool_switch(), help.c_str());
        else if (f.nargs == "*")
            g.add_options()(name.c_str(),
                            po::value<std::vector<std::string>>()->multitoken()->zero_tokens(),
                            help.c_str());
        else if (f.nargs == "+")
            g.add_options()(name.c_str(), po::value<std::vector<std::string>>()->multitoken(),
                            help.c_str());
        else
            g.add_options()(name.c_str(), po::value<std::string>(), help.c_str());
    });
    return g;
}

std::vector<std::string> megatron_aliases(std::vector<std::string> words,
                                          const po::options_description& defined) {
    std::vector<std::string> switches;  // the switches renamed flags need
    for (size_t i = 0; i < words.size(); ++i) {
        std::string& w = words[i];
        if (w.rfind("--", 0) != 0) continue;
        const size_t eq = w.find('=');
        const std::string_view flag = std::string_view(w).substr(0, eq);
        for (const RenamedChoice& c : kDeepSpeedChoices) {
            if (c.flag != flag) continue;
            if (eq != std::string::npos && std::string_view(w).substr(eq + 1) == c.value)
                w = std::string(flag) + "=" + std::string(c.megatron);
            else if (eq == std::string::npos && i + 1 < words.size() && words[i + 1] == c.value)
                words[i + 1] = c.megatron;
        }
        if (std::find(std::begin(kDeepSpeedLists), std::end(kDeepSpeedLists), flag) !=
                std::end(kDeepSpeedLists) &&
            eq == std::string::npos) {
            size_t end = i + 1;
            while (end < words.size() && words[end].rfind("-", 0) != 0) ++end;
            for (size_t j = i + 2; j < end; ++j) words[i + 1] += "," + words[j];
            if (end > i + 2) words.erase(words.begin() + i + 2, words.begin() + end);
        }
        const MegatronFlag* f = find_known_flag(flag);
        if (!f || defined.find_nothrow(name_of(f->flag), false)) continue;
        if (const MegatronFlag* alias = defined_alias(*f, defined)) {
            for (const Rename& r : kDeepSpeedRenames)
                if (r.flag == f->flag && !r.with_switch.empty())
                    switches.emplace_back(r.with_switch);
            w = std::string(alias->flag) + (eq == std::string::npos ? "" : w.substr(eq));
        }
    }
    for (const std::string& s : switches)
        if (std::find(words.begin(), words.end(), s) == words.end()) words.push_back(s);
    return words;
}

void check_megatron_values(MegatronTool tool, const po::options_description& defined,
                           const po::variables_map& vm) {
    for_each_catalogue_flag(tool, defined, [&](const MegatronFlag& f, const FlagVerdict&) {
        if (is_switch(f) || !was_given(f, vm)) return;
        std::vector<std::string> values;
        if (is_list(f))
            values = vm[name_of(f.flag)].as<std::vector<std::string>>();
        else
            values.push_back(vm[name_of(f.flag)].as<std::string>());
        for (const std::string& value : values) {
            // argparse's messages for a value its type or choices reject.
            if (f.type == "int" || f.type == "float") {
                const auto n = number(value);
                const bool ok = n && (f.type == "float" ||
                                      value.find_first_not_of("+-0123456789") == std::string::npos);
                if (!ok)
                    throw po::error("argument " + std::string(f.flag) + ": invalid " +
                                    std::string(f.type) + " value: '" + value + "'");
            }
            if (f.choices.empty()) continue;
            std::string list;
            bool found = false;
            for (const std::string_view choice : megatron_choices(f)) {
                if (choice == "None") continue;  // a Python None: no command-line word gives it
                found = found || choice == value;
                list += (list.empty() ? "'" : ", '") + std::string(choice) + "'";
            }
            if (!found)
                throw po::error("argument " + std::string(f.flag) + ": invalid choice: '" + value +
                                "' (choose from " + list + ")");
        }
    });
}

void check_megatron_flags(MegatronTool tool, const po::options_description& defined,
                          const po::variables_map& vm) {
    for_each_catalogue_flag(tool, defined, [&](const MegatronFlag& f, const FlagVerdict& v) {
        if (v.status == FlagStatus::accepted || !was_given(f, vm)) return;
        if (const auto value = given_value(f, vm))
            for (const std::string& harmless : v.harmless_values)
                if (same_value(f, *value, harmless)) return;
        if (!v.unless.empty()) {
            bool all = true;
            for (const auto& [flag, value] : unless_conditions(v.unless))
                all = all && tool_flag_is(vm, flag, value);
            if (all) return;
        }
        if (v.status == FlagStatus::invalid) MT_FAIL(v.text);
        MT_FAIL(with_value(f, vm), ": not supported yet: ", v.text);
    });
}

std::string megatron_flag_statuses(MegatronTool tool, const po::options_description& defined) {
    std::string out;
    for (const MegatronFlag& f : known_flags())
        out += std::string(f.flag) + "\t" + describe(megatron_flag_verdict(f.flag, tool, defined)) +
               "\n";
    return out;
}

}  // namespace mt::cli
