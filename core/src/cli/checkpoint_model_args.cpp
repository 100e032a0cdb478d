// The walk of a checkpoint's args over Megatron's model-shaping arguments
// (mt/cli/megatron_flags.h check_checkpoint_model_args). A checkpoint's args are the Namespace
// that Megatron's parse_args + validate_args filled, of core_v0.13 or core_v0.19: every field is
// there, at its default, at a value validate_args derived, or at what the run gave. Only a field
// that changes the loaded model and is not read by the family stops the load.
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "megatron_flag_catalogue.h"
#include "megatron_flag_values.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/cli/megatron_flags.h"
#include "mt/error.h"

namespace mt::cli {

namespace {

using namespace detail;

bool in(std::string_view s, std::initializer_list<std::string_view> set) {
    for (std::string_view x : set)
        if (s == x) return true;
    return false;
}

// core_v0.13's model-shaping groups (the command line's catalogue classifies by them).
bool shapes_the_model(const MegatronFlag& f) {
    return in(f.group,
              {"network size", "moe", "mla", "heterogeneous architecture", "experimental"}) ||
           in(f.flag, {"--qk-l2-norm", "--qk-layernorm"});
}

// A newer Megatron's model options that core_v0.13 lacks: its dataclass-made "transformer
// configuration" group holds most of them.
bool newer_shapes_the_model(const MegatronFlag& f) {
    return !find_flag(f.flag) && in(f.group, {"transformer configuration", "network size", "moe",
                                              "mla", "experimental_attention_variant",
                                              "heterogeneous architecture", "experimental"});
}

// A checkpoint arg as the words a command line would give; nullopt for None (and for a switch,
// whether it holds its default instead: see holds_default).
std::optional<std::string> arg_words(const ArgValue& v) {
    if (std::holds_alternative<int64_t>(v)) return std::to_string(std::get<int64_t>(v));
    if (std::holds_alternative<double>(v)) {
        std::ostringstream s;
        s.precision(17);
        s << std::get<double>(v);
        return s.str();
    }
    if (std::holds_alternative<std::string>(v)) return std::get<std::string>(v);
    if (std::holds_alternative<bool>(v)) return std::get<bool>(v) ? "True" : "False";
    if (const auto* list = std::get_if<std::vector<int64_t>>(&v)) return int_list_text(*list);
    if (const auto* list = std::get_if<std::vector<std::string>>(&v))
        return string_list_words(*list);
    return std::nullopt;
}

// Whether an arg holds something: not absent, None, False, 0 or "".
bool is_set(const CheckpointArgs& args, std::string_view name) {
    const ArgValue* v = find_arg(args, name);
    if (!v || std::holds_alternative<std::monostate>(*v)) return false;
    if (const bool* b = std::get_if<bool>(v)) return *b;
    if (const int64_t* i = std::get_if<int64_t>(v)) return *i != 0;
    if (const std::string* s = std::get_if<std::string>(v)) return !s->empty();
    return true;
}

bool text_is(const CheckpointArgs& args, std::string_view name, std::string_view value) {
    const ArgValue* v = find_arg(args, name);
    return v && std::holds_alternative<std::string>(*v) && std::get<std::string>(*v) == value;
}

// Whether the field can change the model at all: a feature's options are inert while the
// feature is off (Megatron never reads --moe-router-topk without experts, MLA's --mscale without
// multi-latent attention or YaRN, ...), whatever value validate_args or a version's default
// left there.
bool matters(std::string_view dest, std::string_view group, const CheckpointArgs& args) {
    const auto starts = [&](std::string_view prefix) { return dest.starts_with(prefix); };
    if (dest != "num_experts" && (group == "moe" || starts("moe_")))
        return is_set(args, "num_experts");
    if (group == "mla")
        return is_set(args, "multi_latent_attention") ||
               text_is(args, "position_embedding_type", "yarn");
    if (starts("yarn_")) return text_is(args, "position_embedding_type", "yarn");
    if (starts("relative_attention_")) return text_is(args, "position_embedding_type", "relative");
    if (starts("mtp_") && dest != "mtp_num_layers") return is_set(args, "mtp_num_layers");
    if (starts("dsa_")) return is_set(args, "experimental_attention_variant");
    if (starts("linear_") && dest != "linear_attention_freq")
        return is_set(args, "linear_attention_freq") ||
               is_set(args, "experimental_attention_variant");
    if (starts("mup_")) return is_set(args, "use_mup");
    if (starts("qk_clip_")) return is_set(args, "qk_clip");
    if (starts("mamba_"))
        return is_set(args, "is_hybrid_model") || is_set(args, "hybrid_override_pattern") ||
               is_set(args, "hybrid_layer_pattern");
    if (dest == "window_attn_skip_freq") return is_set(args, "window_size");
    if (dest == "kitchen_attention_backend") return is_set(args, "use_kitchen_attention");
    return true;
}

// Fields validate_args sets from another when the flag is not given (arguments.py, core_v0.13
// through core_v0.19: `args.encoder_num_layers = args.num_layers` for every model that is not
// an encoder-decoder, and the same for the sequence length).
constexpr std::pair<std::string_view, std::string_view> kDerived[] = {
    {"encoder_num_layers", "num_layers"},
    {"encoder_seq_length", "seq_length"},
};

bool holds_derived_value(std::string_view dest, const ArgValue& v, const CheckpointArgs& args) {
    for (const auto& [field, source] : kDerived)
        if (field == dest) {
            const ArgValue* s = find_arg(args, source);
            return s && *s == v;
        }
    return false;
}

// Whether the arg is what Megatron stores for the row's flag when it is not given, or a value
// in `harmless`.
bool holds_default(const MegatronFlag& f, const std::vector<std::string>& harmless,
                   const ArgValue& v) {
    if (is_switch(f) && f.default_value.empty()) {
        // store_true defaults to False, store_false to True.
        const bool given_default = f.kind == "store_false";
        return !std::holds_alternative<bool>(v) || std::get<bool>(v) == given_default;
    }
    const std::optional<std::string> words = arg_words(v);
    const std::optional<std::string> fallback = default_words(f.default_value);
    if (!words) return !fallback.has_value() || f.default_value == "None";
    if (fallback &&
        (same_value(f, *words, *fallback) || (*words == "True" && *fallback == "True") ||
         (*words == "False" && *fallback == "False")))
        return true;
    for (const std::string& h : harmless)
        if (same_value(f, *words, h)) return true;
    return false;
}

// The rows of both versions that store into `dest`.
std::vector<const MegatronFlag*> rows_of(std::string_view dest) {
    std::vector<const MegatronFlag*> rows;
    for (const MegatronFlag& f : megatron_flags())
        if (f.dest == dest) rows.push_back(&f);
    for (const MegatronFlag& f : newer_megatron_flags())
        if (f.dest == dest) rows.push_back(&f);
    return rows;
}

// The catalogue's "flag=value,..." conditions hold in the args.
bool unless_holds(const std::string& unless, const CheckpointArgs& args) {
    for (const auto& [flag, value] : unless_conditions(unless)) {
        const MegatronFlag* other = find_flag("--" + flag);
        const ArgValue* ov = other ? find_arg(args, other->dest) : nullptr;
        const auto words = ov ? arg_words(*ov) : std::nullopt;
        // A switch's words are Python's True / False.
        if (!words || !(*words == value || (value == "false" && *words == "False") ||
                        (value == "true" && *words == "True")))
            return false;
    }
    return true;
}

}  // namespace

void check_checkpoint_model_args(const CheckpointArgs& args,
                                 const std::vector<FlagInfo>& family_flags) {
    std::set<std::string_view> read_by_family;
    for (const FlagInfo& fi : family_flags) {
        const std::string flag = "--" + fi.name;
        for (const MegatronFlag* f : {find_flag(flag), find_newer_flag(flag)})
            if (f) read_by_family.insert(f->dest);
        if (!fi.store_false_dest.empty()) read_by_family.insert(fi.store_false_dest);
        if (!fi.dest.empty()) read_by_family.insert(fi.dest);
    }
    std::set<std::string_view> walked;
    auto walk = [&](const MegatronFlag& f) {
        if (!walked.insert(f.dest).second || read_by_family.count(f.dest)) return;
        const ArgValue* v = find_arg(args, f.dest);
        if (!v || !matters(f.dest, f.group, args) || holds_derived_value(f.dest, *v, args)) return;
        const FlagVerdict verdict = catalogue_verdict(f.flag, MegatronTool::inference);
        if (verdict.status == FlagStatus::accepted) return;
        // Either version's default (core_v0.19 changed some: --mscale-all-dim 1.0 -> 0.0).
        for (const MegatronFlag* row : rows_of(f.dest))
            if (holds_default(*row, verdict.harmless_values, *v)) return;
        if (!verdict.unless.empty() && unless_holds(verdict.unless, args)) return;
        const std::string shown = arg_words(*v).value_or("None");
        MT_CHECK(verdict.status != FlagStatus::unknown, "checkpoint args: ", f.dest, " = ", shown,
                 ": not supported yet: ", f.dest);
        MT_FAIL("checkpoint args: ", f.dest, " = ", shown, ": not supported yet: ", verdict.text);
    };
    for (const MegatronFlag& f : megatron_flags())
        if (shapes_the_model(f)) walk(f);
    for (const MegatronFlag& f : newer_megatron_flags())
        if (newer_shapes_the_model(f)) walk(f);
}

}  // namespace mt::cli
