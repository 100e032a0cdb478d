#include "tokenizer_spec.h"

#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string_view>

#include "mt/error.h"
#include "mt/io/json_big_integers.h"

namespace mt::plugins::hf_tokenizer {

namespace {

namespace fs = std::filesystem;
using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// Reads fields of one JSON file with messages naming it.
class Reader {
  public:
    explicit Reader(std::string file) : file_(std::move(file)) {}
    const std::string& file() const { return file_; }

    element parse(simdjson::dom::parser& parser) const {
        simdjson::padded_string text;
        MT_CHECK(!simdjson::padded_string::load(file_).get(text), "cannot read '", file_, "'");
        io::zero_big_json_integers(text.data(), text.size());  // model_max_length
        element root;
        auto error = parser.parse(text).get(root);
        MT_CHECK(!error, file_, ": not valid JSON: ", simdjson::error_message(error));
        return root;
    }

    std::optional<element> field(object o, std::string_view key) const {
        element e;
        if (o[key].get(e)) return std::nullopt;
        return e;
    }
    // A field that is absent or null reads as nullopt.
    std::optional<element> value(object o, std::string_view key) const {
        auto e = field(o, key);
        if (!e || e->is_null()) return std::nullopt;
        return e;
    }
    object as_object(element e, std::string_view what) const {
        object o;
        MT_CHECK(!e.get_object().get(o), file_, ": ", what, " is not an object");
        return o;
    }
    array as_array(element e, std::string_view what) const {
        array a;
        MT_CHECK(!e.get_array().get(a), file_, ": ", what, " is not a list");
        return a;
    }
    std::string as_string(element e, std::string_view what) const {
        std::string_view s;
        MT_CHECK(!e.get_string().get(s), file_, ": ", what, " is not a string");
        return std::string(s);
    }
    int64_t as_int(element e, std::string_view what) const {
        int64_t v;
        MT_CHECK(!e.get_int64().get(v), file_, ": ", what, " is not an integer");
        return v;
    }
    bool as_bool(element e, std::string_view what) const {
        bool v;
        MT_CHECK(!e.get_bool().get(v), file_, ": ", what, " is not true or false");
        return v;
    }
    std::string string_field(object o, std::string_view key, std::string_view what) const {
        auto e = field(o, key);
        MT_CHECK(e.has_value(), file_, ": ", what, " has no '", key, "'");
        return as_string(*e, str(what, ".", key));
    }
    bool bool_field(object o, std::string_view key, bool fallback, std::string_view what) const {
        auto e = value(o, key);
        return e ? as_bool(*e, str(what, ".", key)) : fallback;
    }
    std::string type_of(object o, std::string_view what) const {
        return string_field(o, "type", what);
    }
    [[noreturn]] void unsupported(std::string_view component) const {
        MT_FAIL("HuggingFaceTokenizer: not supported yet: ", component, " in ", file_);
    }

  private:
    std::string file_;
};

// A {"type": "Sequence", key: [...]} component: reads each item with `read`; false otherwise.
template <class Read>
bool read_sequence(const Reader& r, object o, const std::string& type, const char* key, Read read) {
    if (type != "Sequence") return false;
    auto list = r.field(o, key);
    MT_CHECK(list.has_value(), r.file(), ": Sequence has no '", key, "'");
    for (element item : r.as_array(*list, key)) read(item);
    return true;
}

PrependScheme prepend_scheme(const Reader& r, object o, std::string_view what) {
    if (auto scheme = r.value(o, "prepend_scheme")) {
        const std::string s = r.as_string(*scheme, str(what, ".prepend_scheme"));
        if (s == "always") return PrependScheme::kAlways;
        if (s == "first") return PrependScheme::kFirst;
        if (s == "never") return PrependScheme::kNever;
        r.unsupported(str(what, " prepend_scheme '", s, "'"));
    }
    // Files written before prepend_scheme existed say add_prefix_space.
    return r.bool_field(o, "add_prefix_space", true, what) ? PrependScheme::kAlways
                                                           : PrependScheme::kNever;
}

// Replace's pattern: {"String": s}; a {"Regex": ...} pattern is not supported.
std::string string_pattern(const Reader& r, object o, std::string_view what) {
    auto p = r.field(o, "pattern");
    MT_CHECK(p.has_value(), r.file(), ": ", what, " has no 'pattern'");
    object po = r.as_object(*p, str(what, ".pattern"));
    if (auto s = r.field(po, "String")) return r.as_string(*s, str(what, ".pattern.String"));
    r.unsupported(str(what, " with a regex pattern"));
}

void read_normalizer(const Reader& r, element e, std::vector<NormalizerStep>& out) {
    object o = r.as_object(e, "normalizer");
    const std::string type = r.type_of(o, "normalizer");
    if (read_sequence(r, o, type, "normalizers",
                      [&](element item) { read_normalizer(r, item, out); })) {
        return;
    } else if (type == "Prepend") {
        out.push_back({NormalizerStep::kPrepend, {}, r.string_field(o, "prepend", "Prepend")});
    } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
        const NormalizerStep::Kind kind = type == "NFC"    ? NormalizerStep::kNfc
                                          : type == "NFD"  ? NormalizerStep::kNfd
                                          : type == "NFKC" ? NormalizerStep::kNfkc
                                                           : NormalizerStep::kNfkd;
        out.push_back({kind, {}, {}});
    } else if (type == "Replace") {
        std::string pattern = string_pattern(r, o, "normalizer Replace");
        MT_CHECK(!pattern.empty(), r.file(), ": normalizer Replace has an empty pattern");
        out.push_back({NormalizerStep::kReplace, std::move(pattern),
                       r.string_field(o, "content", "Replace")});
    } else {
        r.unsupported(str("normalizer ", type));
    }
}

void read_pre_tokenizer(const Reader& r, element e, std::vector<PreTokenizerStep>& out) {
    object o = r.as_object(e, "pre_tokenizer");
    const std::string type = r.type_of(o, "pre_tokenizer");
    PreTokenizerStep step{};
    if (read_sequence(r, o, type, "pretokenizers",
                      [&](element item) { read_pre_tokenizer(r, item, out); })) {
        return;
    } else if (type == "Metaspace") {
        step.kind = PreTokenizerStep::kMetaspace;
        step.replacement = r.string_field(o, "replacement", "Metaspace");
        MT_CHECK(!step.replacement.empty(), r.file(), ": Metaspace has an empty replacement");
        step.prepend_scheme = prepend_scheme(r, o, "Metaspace");
        step.split = r.bool_field(o, "split", true, "Metaspace");
    } else if (type == "ByteLevel") {
        step.kind = PreTokenizerStep::kByteLevel;
        step.add_prefix_space = r.bool_field(o, "add_prefix_space", true, "ByteLevel");
        step.use_regex = r.bool_field(o, "use_regex", true, "ByteLevel");
    } else if (type == "Split") {
        step.kind = PreTokenizerStep::kSplit;
        auto pattern = r.field(o, "pattern");
        MT_CHECK(pattern.has_value(), r.file(), ": pre_tokenizer Split has no 'pattern'");
        object po = r.as_object(*pattern, "Split.pattern");
        if (auto regex = r.field(po, "Regex")) {
            const std::string re = r.as_string(*regex, "Split.pattern.Regex");
            try {
                step.regex.emplace(re);
            } catch (const Error& e) {
                r.unsupported(str("pre_tokenizer Split ", e.what()));
            }
        } else if (auto literal = r.field(po, "String")) {
            step.literal = r.as_string(*literal, "Split.pattern.String");
            if (step.literal.empty()) r.unsupported("pre_tokenizer Split with an empty String");
        } else {
            r.unsupported("pre_tokenizer Split pattern other than Regex or String");
        }
        const std::string behavior = r.string_field(o, "behavior", "Split");
        static const std::map<std::string, SplitBehavior> kBehaviors = {
            {"Removed", SplitBehavior::kRemoved},
            {"Isolated", SplitBehavior::kIsolated},
            {"MergedWithPrevious", SplitBehavior::kMergedWithPrevious},
            {"MergedWithNext", SplitBehavior::kMergedWithNext},
            {"Contiguous", SplitBehavior::kContiguous}};
        auto it = kBehaviors.find(behavior);
        if (it == kBehaviors.end()) r.unsupported(str("pre_tokenizer Split behavior ", behavior));
        step.behavior = it->second;
        step.invert = r.bool_field(o, "invert", false, "Split");
    } else {
        r.unsupported(str("pre_tokenizer ", type));
    }
    out.push_back(std::move(step));
}

void read_decoder(const Reader& r, element e, std::vector<DecoderStep>& out) {
    object o = r.as_object(e, "decoder");
    const std::string type = r.type_of(o, "decoder");
    DecoderStep step{};
    if (read_sequence(r, o, type, "decoders", [&](element item) { read_decoder(r, item, out); })) {
        return;
    } else if (type == "ByteLevel") {
        step.kind = DecoderStep::kByteLevel;
    } else if (type == "Metaspace") {
        step.kind = DecoderStep::kMetaspace;
        step.content = r.string_field(o, "replacement", "decoder Metaspace");
        step.prepend_scheme = prepend_scheme(r, o, "decoder Metaspace");
    } else if (type == "Replace") {
        step.kind = DecoderStep::kReplace;
        step.pattern = string_pattern(r, o, "decoder Replace");
        MT_CHECK(!step.pattern.empty(), r.file(), ": decoder Replace has an empty pattern");
        step.content = r.string_field(o, "content", "decoder Replace");
    } else if (type == "ByteFallback") {
        step.kind = DecoderStep::kByteFallback;
    } else if (type == "Fuse") {
        step.kind = DecoderStep::kFuse;
    } else if (type == "Strip") {
        step.kind = DecoderStep::kStrip;
        step.content = r.string_field(o, "content", "decoder Strip");
        auto start = r.field(o, "start"), stop = r.field(o, "stop");
        MT_CHECK(start && stop, r.file(), ": decoder Strip needs 'start' and 'stop'");
        step.start = size_t(r.as_int(*start, "Strip.start"));
        step.stop = size_t(r.as_int(*stop, "Strip.stop"));
    } else {
        r.unsupported(str("decoder ", type));
    }
    out.push_back(std::move(step));
}

// TemplateProcessing's "single": special tokens around one "$A".
void read_template(const Reader& r, object o, TokenizerSpec& spec) {
    auto single = r.field(o, "single");
    auto specials = r.field(o, "special_tokens");
    MT_CHECK(single && specials, r.file(),
             ": TemplateProcessing needs 'single' and 'special_tokens'");
    object special_map = r.as_object(*specials, "special_tokens");
    bool seen_sequence = false;
    for (element item : r.as_array(*single, "TemplateProcessing.single")) {
        object io = r.as_object(item, "template item");
        if (auto seq = r.field(io, "Sequence")) {
            const std::string id = r.string_field(r.as_object(*seq, "Sequence"), "id", "Sequence");
            if (id != "A" || seen_sequence)
                r.unsupported(str("TemplateProcessing single with sequence '", id, "'"));
            seen_sequence = true;
        } else if (auto tok = r.field(io, "SpecialToken")) {
            const std::string name =
                r.string_field(r.as_object(*tok, "SpecialToken"), "id", "SpecialToken");
            auto entry = r.field(special_map, name);
            MT_CHECK(entry.has_value(), r.file(), ": TemplateProcessing uses '", name,
                     "', which its special_tokens do not define");
            auto ids = r.field(r.as_object(*entry, name), "ids");
            MT_CHECK(ids.has_value(), r.file(), ": special token '", name, "' has no 'ids'");
            auto& target = seen_sequence ? spec.suffix_ids : spec.prefix_ids;
            for (element id : r.as_array(*ids, "ids"))
                target.push_back(int32_t(r.as_int(id, "id")));
        } else {
            r.unsupported("TemplateProcessing item other than Sequence / SpecialToken");
        }
    }
    MT_CHECK(seen_sequence, r.file(), ": TemplateProcessing single has no $A");
}

void read_post_processor(const Reader& r, element e, TokenizerSpec& spec) {
    object o = r.as_object(e, "post_processor");
    const std::string type = r.type_of(o, "post_processor");
    if (read_sequence(r, o, type, "processors",
                      [&](element item) { read_post_processor(r, item, spec); })) {
        return;
    } else if (type == "TemplateProcessing") {
        if (!spec.prefix_ids.empty() || !spec.suffix_ids.empty())
            r.unsupported("two TemplateProcessing post-processors");
        read_template(r, o, spec);
    } else if (type != "ByteLevel") {  // ByteLevel only trims offsets: ids are unchanged
        r.unsupported(str("post_processor ", type));
    }
}

void read_model(const Reader& r, element e, BpeSpec& model) {
    object o = r.as_object(e, "model");
    auto type = r.value(o, "type");
    if (!type) r.unsupported("a model without 'type'");
    const std::string t = r.as_string(*type, "model.type");
    if (t != "BPE") r.unsupported(str("model ", t));
    if (r.value(o, "dropout")) r.unsupported("BPE dropout");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
        if (auto v = r.value(o, key); v && !r.as_string(*v, key).empty())
            r.unsupported(str("BPE ", key));
    if (auto unk = r.value(o, "unk_token")) model.unk_token = r.as_string(*unk, "unk_token");
    model.fuse_unk = r.bool_field(o, "fuse_unk", false, "model");
    model.byte_fallback = r.bool_field(o, "byte_fallback", false, "model");
    model.ignore_merges = r.bool_field(o, "ignore_merges", false, "model");

    auto vocab = r.field(o, "vocab");
    MT_CHECK(vocab.has_value(), r.file(), ": model has no 'vocab'");
    for (auto field : r.as_object(*vocab, "model.vocab"))
        model.vocab.emplace_back(std::string(field.key),
                                 int32_t(r.as_int(field.value, "a vocab id")));
    auto merges = r.field(o, "merges");
    MT_CHECK(merges.has_value(), r.file(), ": model has no 'merges'");
    for (element m : r.as_array(*merges, "model.merges")) {
        if (m.is_string()) {  // "a b"
            const std::string line = r.as_string(m, "a merge");
            const size_t space = line.find(' ');
            MT_CHECK(space != std::string::npos && line.find(' ', space + 1) == std::string::npos,
                     r.file(), ": merge '", line, "' is not two tokens separated by one space");
            model.merges.emplace_back(line.substr(0, space), line.substr(space + 1));
        } else {  // ["a", "b"]
            std::vector<std::string> parts;
            for (element p : r.as_array(m, "a merge"))
                parts.push_back(r.as_string(p, "a merge part"));
            MT_CHECK(parts.size() == 2, r.file(), ": a merge has ", parts.size(),
                     " parts, expected 2");
            model.merges.emplace_back(std::move(parts[0]), std::move(parts[1]));
        }
    }
}

AddedToken read_added_token(const Reader& r, object o, std::string_view what) {
    AddedToken t;
    t.content = r.string_field(o, "content", what);
    t.lstrip = r.bool_field(o, "lstrip", false, what);
    t.rstrip = r.bool_field(o, "rstrip", false, what);
    t.special = r.bool_field(o, "special", false, what);
    t.normalized = r.bool_field(o, "normalized", !t.special, what);
    if (r.bool_field(o, "single_word", false, what)) r.unsupported(str(what, " with single_word"));
    MT_CHECK(!t.content.empty(), r.file(), ": ", what, " has empty content");
    return t;
}

// The part of tokenizer_config.json / special_tokens_map.json that changes ids.
struct TransformersConfig {
    std::string tokenizer_class;
    std::map<std::string, AddedToken> named;  // bos_token, eos_token, ... as written
    std::vector<AddedToken> extra_specials;   // additional_special_tokens, extra_special_tokens
    std::vector<AddedToken> added_tokens_decoder;
    std::optional<bool> add_bos_token, add_eos_token, add_prefix_space, legacy;
};

constexpr const char* kNamedTokens[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                        "pad_token", "cls_token", "mask_token"};

// A special token as transformers writes it: "text" or {"content": "text", ...}.
AddedToken config_token(const Reader& r, element e, std::string_view what) {
    if (e.is_string()) {
        AddedToken t;
        t.content = r.as_string(e, what);
        t.special = true;
        return t;
    }
    AddedToken t = read_added_token(r, r.as_object(e, what), what);
    t.special = true;  // transformers marks every named token special
    return t;
}

void read_config_file(const fs::path& path, TransformersConfig& config, bool is_map) {
    if (!fs::exists(path)) return;
    Reader r(path.string());
    simdjson::dom::parser parser;
    object o = r.as_object(r.parse(parser), "the file");
    for (const char* key : kNamedTokens) {
        if (config.named.count(key)) continue;  // tokenizer_config.json wins over the map
        if (auto v = r.value(o, key)) config.named.emplace(key, config_token(r, *v, key));
    }
    for (const char* key : {"additional_special_tokens", "extra_special_tokens"}) {
        auto v = r.value(o, key);
        if (!v || (is_map && !config.extra_specials.empty())) continue;
        if (!v->is_array()) r.unsupported(str(key, " that is not a list"));
        for (element item : r.as_array(*v, key))
            config.extra_specials.push_back(config_token(r, item, key));
    }
    if (is_map) return;
    if (auto v = r.value(o, "tokenizer_class"))
        config.tokenizer_class = r.as_string(*v, "tokenizer_class");
    auto flag = [&](const char* key, std::optional<bool>& out) {
        if (auto v = r.value(o, key)) out = r.as_bool(*v, key);
    };
    flag("add_bos_token", config.add_bos_token);
    flag("add_eos_token", config.add_eos_token);
    flag("add_prefix_space", config.add_prefix_space);
    flag("legacy", config.legacy);
    if (auto v = r.value(o, "split_special_tokens"); v && r.as_bool(*v, "split_special_tokens"))
        r.unsupported("split_special_tokens");
    if (auto v = r.value(o, "added_tokens_decoder")) {
        for (auto field : r.as_object(*v, "added_tokens_decoder")) {
            AddedToken t = read_added_token(r, r.as_object(field.value, "an added token"),
                                            "added_tokens_decoder entry");
            const std::string key(field.key);
            MT_CHECK(!key.empty() && key.size() < 10 &&
                         key.find_first_not_of("0123456789") == std::string::npos,
                     r.file(), ": added_tokens_decoder key '", key, "' is not an id");
            t.id = int32_t(std::stoi(key));
            config.added_tokens_decoder.push_back(std::move(t));
        }
        std::sort(config.added_tokens_decoder.begin(), config.added_tokens_decoder.end(),
                  [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
    }
}

// GPT2Tokenizer and LlamaTokenizer build their own pipeline in transformers 5 and keep only
// the vocab, merges and post-processor of tokenizer.json.
void rebuild_as_class(const TransformersConfig& config, TokenizerSpec& spec,
                      std::map<std::string, AddedToken>& named) {
    const std::string& cls = config.tokenizer_class;
    spec.normalizer.clear();
    spec.pre_tokenizer.clear();
    spec.added_tokens.clear();
    spec.model.unk_token.reset();
    spec.model.ignore_merges = false;
    auto default_token = [&](const char* key, const char* content) {
        if (named.count(key)) return;
        AddedToken t;
        t.content = content;
        t.special = true;
        named.emplace(key, t);
    };
    if (cls == "GPT2Tokenizer" || cls == "GPT2TokenizerFast") {
        PreTokenizerStep step{};
        step.kind = PreTokenizerStep::kByteLevel;
        step.add_prefix_space = config.add_prefix_space.value_or(false);
        spec.pre_tokenizer.push_back(step);
        spec.decoder = std::vector<DecoderStep>{DecoderStep{DecoderStep::kByteLevel}};
        spec.model.fuse_unk = false;
        spec.model.byte_fallback = false;
        for (const char* key : {"unk_token", "bos_token", "eos_token"})
            default_token(key, "<|endoftext|>");
    } else {  // LlamaTokenizer, LlamaTokenizerFast
        const bool add_prefix_space = config.add_prefix_space.value_or(true);
        PreTokenizerStep step{};
        step.kind = PreTokenizerStep::kMetaspace;
        step.replacement = "\xE2\x96\x81";
        step.split = false;
        step.prepend_scheme = !add_prefix_space               ? PrependScheme::kNever
                              : config.legacy.value_or(false) ? PrependScheme::kAlways
                                                              : PrependScheme::kFirst;
        spec.pre_tokenizer.push_back(step);
        std::vector<DecoderStep> decoder{{DecoderStep::kReplace, "\xE2\x96\x81", " "},
                                         {DecoderStep::kByteFallback},
                                         {DecoderStep::kFuse}};
        if (add_prefix_space) {
            DecoderStep strip{DecoderStep::kStrip, {}, " "};
            strip.start = 1;
            decoder.push_back(strip);
        }
        spec.decoder = std::move(decoder);
        spec.model.fuse_unk = true;
        spec.model.byte_fallback = true;
        default_token("unk_token", "<unk>");
        default_token("bos_token", "<s>");
        default_token("eos_token", "</s>");
    }
}

// tokenizers' AddedVocabulary::add_tokens: a token already in the vocab keeps its id; a new one
// gets the next id after the model vocab and the added tokens.
void add_token(TokenizerSpec& spec, AddedToken token) {
    for (const AddedToken& t : spec.added_tokens)
        if (t.content == token.content) return;
    if (auto id = token_id(spec, token.content)) {
        token.id = *id;
    } else {
        const int32_t model_size = int32_t(spec.model.vocab.size());
        int32_t max_added = -1;
        for (const AddedToken& t : spec.added_tokens) max_added = std::max(max_added, t.id);
        token.id = max_added >= model_size ? max_added + 1 : model_size;
    }
    spec.added_tokens.push_back(std::move(token));
}

}  // namespace

std::optional<int32_t> token_id(const TokenizerSpec& spec, const std::string& content) {
    for (const AddedToken& t : spec.added_tokens)
        if (t.content == content) return t.id;
    for (const auto& [token, id] : spec.model.vocab)
        if (token == content) return id;
    return std::nullopt;
}

std::optional<std::string> named_token(const TokenizerSpec& spec, const std::string& name) {
    const auto it = spec.named_tokens.find(name);
    return it == spec.named_tokens.end() ? std::nullopt : std::optional<std::string>(it->second);
}

void add_special_token(TokenizerSpec& spec, const std::string& content) {
    for (AddedToken& t : spec.added_tokens)
        if (t.content == content) {
            t.special = true;
            return;
        }
    AddedToken token;
    token.content = content;
    token.special = true;
    add_token(spec, std::move(token));
}

TokenizerSpec read_tokenizer_spec(const std::string& path) {
    MT_CHECK(!path.empty(),
             "HuggingFaceTokenizer needs --tokenizer-model (a model folder or its tokenizer.json)");
    fs::path json_path = path;
    if (fs::is_directory(json_path)) json_path /= "tokenizer.json";
    MT_CHECK(fs::is_regular_file(json_path), "HuggingFaceTokenizer: no tokenizer.json at '",
             json_path.string(), "'");
    const fs::path folder = json_path.parent_path();

    TokenizerSpec spec;
    spec.source = json_path.string();
    Reader r(spec.source);
    {
        simdjson::dom::parser parser;
        object root = r.as_object(r.parse(parser), "the file");
        auto model = r.field(root, "model");
        MT_CHECK(model.has_value(), spec.source, ": no 'model'");
        read_model(r, *model, spec.model);
        if (auto added = r.value(root, "added_tokens")) {
            for (element item : r.as_array(*added, "added_tokens")) {
                object o = r.as_object(item, "an added token");
                AddedToken t = read_added_token(r, o, "added token");
                auto id = r.field(o, "id");
                MT_CHECK(id.has_value(), spec.source, ": added token '", t.content, "' has no id");
                t.id = int32_t(r.as_int(*id, "added token id"));
                spec.added_tokens.push_back(std::move(t));
            }
        }
        if (auto n = r.value(root, "normalizer")) read_normalizer(r, *n, spec.normalizer);
        if (auto p = r.value(root, "pre_tokenizer")) read_pre_tokenizer(r, *p, spec.pre_tokenizer);
        if (auto p = r.value(root, "post_processor")) read_post_processor(r, *p, spec);
        if (auto d = r.value(root, "decoder")) {
            spec.decoder.emplace();
            read_decoder(r, *d, *spec.decoder);
        }
    }

    TransformersConfig config;
    read_config_file(folder / "tokenizer_config.json", config, false);
    read_config_file(folder / "special_tokens_map.json", config, true);
    const std::string& cls = config.tokenizer_class;
    static const std::set<std::string> kAsIs = {"", "TokenizersBackend", "PreTrainedTokenizerFast"};
    static const std::set<std::string> kRebuilt = {"GPT2Tokenizer", "GPT2TokenizerFast",
                                                   "LlamaTokenizer", "LlamaTokenizerFast"};
    std::map<std::string, AddedToken> named = config.named;
    if (kRebuilt.count(cls)) {
        rebuild_as_class(config, spec, named);
    } else if (!kAsIs.count(cls)) {
        Reader((folder / "tokenizer_config.json").string())
            .unsupported(str("tokenizer_class ", cls));
    }
    // transformers adds the config's tokens the backend lacks, in this order.
    for (const AddedToken& t : config.added_tokens_decoder) add_token(spec, t);
    for (const char* key : kNamedTokens)
        if (auto it = named.find(key); it != named.end()) add_token(spec, it->second);
    for (const AddedToken& t : config.extra_specials) add_token(spec, t);

    for (const auto& [key, token] : named) spec.named_tokens[key] = token.content;
    const std::optional<std::string> bos = named_token(spec, "bos_token");
    const std::optional<std::string> eos = named_token(spec, "eos_token");
    // transformers rewrites the template when the config says add_bos_token / add_eos_token.
    if (config.add_bos_token || config.add_eos_token) {
        spec.prefix_ids.clear();
        spec.suffix_ids.clear();
        if (config.add_bos_token.value_or(false) && bos)
            spec.prefix_ids.push_back(*token_id(spec, *bos));
        if (config.add_eos_token.value_or(false) && eos)
            spec.suffix_ids.push_back(*token_id(spec, *eos));
    }
    return spec;
}

}  // namespace mt::plugins::hf_tokenizer
