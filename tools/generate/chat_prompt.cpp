// ChatPrompt: where Hugging Face folders keep a chat template, and the variables transformers'
// render_jinja_template gives it, built as JSON for jinja::Value::from_json.
#include "chat_prompt.h"

#include <simdjson.h>

#include "mt/error.h"
#include "mt/io/json_big_integers.h"
#include "mt/io/json_writer.h"

namespace mt::generate_tool {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

// The special tokens transformers' special_tokens_map names.
constexpr const char* kSpecialTokens[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                          "pad_token", "cls_token", "mask_token"};
// Names of a message's reasoning that transformers fills in for each other.
constexpr const char* kReasoningFields[] = {"reasoning_content", "thinking", "reasoning"};

std::string read_text(const std::filesystem::path& file) {
    simdjson::padded_string text;
    MT_CHECK(!simdjson::padded_string::load(file.string()).get(text), "cannot read ",
             file.string());
    return std::string(std::string_view(text));
}

// tokenizer_config.json, its model_max_length (which may be 10^30) zeroed.
std::string read_config(const std::filesystem::path& file) {
    std::string text = read_text(file);
    io::zero_big_json_integers(text.data(), text.size());
    return text;
}

// A special token's text: a string, or an AddedToken's {"content": ...}.
std::optional<std::string> token_text(element e) {
    if (e.type() == element_type::STRING) return std::string(std::string_view(e));
    element content;
    if (e.type() == element_type::OBJECT && !object(e).at_key("content").get(content) &&
        content.type() == element_type::STRING)
        return std::string(std::string_view(content));
    return std::nullopt;
}

bool is_null(element e) {
    return e.type() == element_type::NULL_VALUE;
}

// A message as transformers hands it to the template: null fields dropped, and a reasoning under
// any of its names also as "thinking" (first) and "reasoning_content".
void write_message(std::string& out, object message) {
    std::optional<element> reasoning;
    for (const char* name : kReasoningFields) {
        element e;
        if (!message.at_key(name).get(e) && !is_null(e)) {
            reasoning = e;
            break;
        }
    }
    out += '{';
    bool first = true;
    const auto member = [&](std::string_view key, element value) {
        if (!first) out += ',';
        first = false;
        out += io::json_quote(key) + ':' + simdjson::minify(value);
    };
    element thinking;
    if (reasoning)
        member("thinking", !message.at_key("thinking").get(thinking) && !is_null(thinking)
                               ? thinking
                               : *reasoning);
    for (auto [key, value] : message) {
        if (is_null(value) || (reasoning && key == "thinking")) continue;
        member(key, reasoning && key == "reasoning_content" ? *reasoning : value);
    }
    element given;
    if (reasoning && (message.at_key("reasoning_content").get(given) || is_null(given)))
        member("reasoning_content", *reasoning);
    out += '}';
}

// apply_chat_template's variables as a JSON object.
std::string template_context(const ChatRequest& r,
                             const std::vector<std::pair<std::string, std::string>>& special) {
    simdjson::dom::parser messages_parser, kwargs_parser;
    const element messages = messages_parser.parse(r.messages_json);
    const element kwargs = kwargs_parser.parse(r.template_kwargs_json);
    std::string out = "{\"messages\":[";
    bool first = true;
    for (element m : simdjson::dom::array(messages)) {
        if (!first) out += ',';
        first = false;
        write_message(out, object(m));
    }
    out += "],\"tools\":" + (r.tools_json ? *r.tools_json : std::string("null"));
    out += ",\"documents\":null,\"add_generation_prompt\":true";
    for (const auto& [name, text] : special) {
        element overridden;
        if (object(kwargs).at_key(name).get(overridden))
            out += ',' + io::json_quote(name) + ':' + io::json_quote(text);
    }
    for (auto [key, value] : object(kwargs)) {
        MT_CHECK(key != "messages" && key != "tools" && key != "documents" &&
                     key != "add_generation_prompt",
                 "chat_template_kwargs may not set '", key, "'");
        out += ',' + io::json_quote(key) + ':' + simdjson::minify(value);
    }
    return out + '}';
}

}  // namespace

ChatPrompt ChatPrompt::find(const std::vector<std::filesystem::path>& folders,
                            const std::optional<std::string>& given,
                            const std::string& given_where) {
    ChatPrompt prompt;
    for (const auto& folder : folders) {
        if (folder.empty() || !std::filesystem::is_directory(folder)) continue;
        const auto config_file = folder / "tokenizer_config.json";
        simdjson::dom::parser parser;
        std::optional<object> config;
        std::string config_text;
        if (std::filesystem::exists(config_file)) {
            config_text = read_config(config_file);
            element doc;
            if (auto error = parser.parse(config_text).get(doc))
                MT_FAIL(config_file.string(), " is not JSON: ", simdjson::error_message(error));
            if (doc.type() == element_type::OBJECT) config = object(doc);
        }
        std::string source, where;
        if (given) {
            if (!config) continue;
            source = *given;
            where = given_where;
        } else if (const auto jinja_file = folder / "chat_template.jinja";
                   std::filesystem::exists(jinja_file)) {
            source = read_text(jinja_file);
            where = jinja_file.string();
        } else if (element t; config && !config->at_key("chat_template").get(t)) {
            where = config_file.string() + " (chat_template)";
            if (t.type() == element_type::STRING) {
                source = std::string(std::string_view(t));
            } else if (t.type() == element_type::ARRAY) {  // [{"name", "template"}, ...]
                for (element named : simdjson::dom::array(t)) {
                    element name, text;
                    if (named.type() == element_type::OBJECT &&
                        !object(named).at_key("name").get(name) &&
                        name.type() == element_type::STRING &&
                        std::string_view(name) == "default" &&
                        !object(named).at_key("template").get(text) &&
                        text.type() == element_type::STRING)
                        source = std::string(std::string_view(text));
                }
                MT_CHECK(!source.empty(), where, " has no template named \"default\"");
            } else {
                MT_FAIL(where, " must be a string or a list of named templates");
            }
        } else {
            continue;
        }
        prompt.use(source, where);
        if (config)
            for (const char* name : kSpecialTokens) {
                element e;
                if (!config->at_key(name).get(e))
                    if (auto text = token_text(e)) prompt.special_tokens_.emplace_back(name, *text);
            }
        return prompt;
    }
    if (given) prompt.use(*given, given_where);  // no folder's special tokens
    return prompt;
}

ChatPrompt ChatPrompt::of_tokenizer(const TokenizerOptions& tokenizer, const std::string& load,
                                    const std::optional<std::string>& given) {
    namespace fs = std::filesystem;
    std::vector<fs::path> folders;
    const std::string& model = tokenizer.tokenizer_model;
    if (!model.empty())
        folders.push_back(fs::is_directory(model) ? fs::path(model)
                                                  : fs::path(model).parent_path());
    folders.emplace_back(load);
    if (tokenizer.metadata_chat_template)
        return find(folders, tokenizer.metadata_chat_template,
                    "--tokenizer-metadata " + tokenizer.metadata_path);
    return find(folders, given);
}

void ChatPrompt::use(const std::string& source, const std::string& where) {
    try {
        template_ = std::make_shared<const text::jinja::Template>(source);
    } catch (const mt::Error& e) {
        MT_FAIL(where, ": ", e.what());
    }
    source_ = where;
}

std::string ChatPrompt::render(const ChatRequest& r) const {
    if (!template_) {  // Megatron: "\n".join(message["content"] for message in messages)
        simdjson::dom::parser parser;
        std::string text;
        size_t index = 0;
        for (element m : simdjson::dom::array(parser.parse(r.messages_json))) {
            element content;
            MT_CHECK(
                !object(m).at_key("content").get(content) && content.type() == element_type::STRING,
                "messages[", index,
                "] needs a string 'content' (this model has no chat "
                "template, so the contents are joined by newlines)");
            if (index++ > 0) text += '\n';
            text += std::string_view(content);
        }
        return text;
    }
    return template_->render(text::jinja::Value::from_json(template_context(r, special_tokens_)));
}

std::vector<int32_t> ChatPrompt::prompt_ids(const ChatRequest& r,
                                            const Tokenizer& tokenizer) const {
    std::vector<int32_t> ids = tokenizer.encode(render(r));
    const std::optional<int32_t> bos = tokenizer.special_ids().bos;
    size_t start = 0;
    while (bos && start < ids.size() && ids[start] == *bos) ++start;
    ids.erase(ids.begin(), ids.begin() + start);
    if (r.add_bos) {
        MT_CHECK(bos, "add_BOS: the tokenizer has no BOS token");
        ids.insert(ids.begin(), *bos);
    }
    MT_CHECK(!ids.empty(), "the messages give no tokens");
    return ids;
}

}  // namespace mt::generate_tool
