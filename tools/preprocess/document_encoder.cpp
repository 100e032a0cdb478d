#include "document_encoder.h"

#include "mt/error.h"

namespace mt::preprocess {

namespace {
const char* json_type_name(simdjson::dom::element_type t) {
    using T = simdjson::dom::element_type;
    switch (t) {
        case T::ARRAY:
            return "a list";
        case T::OBJECT:
            return "an object";
        case T::INT64:
        case T::UINT64:
        case T::DOUBLE:
            return "a number";
        case T::STRING:
            return "a string";
        case T::BOOL:
            return "a boolean";
        case T::NULL_VALUE:
            return "null";
    }
    return "an unknown value";
}
}  // namespace

DocumentEncoder::DocumentEncoder(const Tokenizer& tokenizer, const EncoderOptions& options)
    : tokenizer_(tokenizer), options_(options) {
    if (options.append_eod) eod_ = tokenizer.eod();
    if (options.split_sentences)
        splitter_ = std::make_unique<SentenceSplitter>(options.lang, options.keep_newlines);
}

void DocumentEncoder::encode(std::string_view line, std::vector<KeyTokens>& out) {
    simdjson::dom::element doc;
    auto error = parser_.parse(line.data(), line.size(), false).get(doc);
    if (error) {
        if (line.find_first_not_of(" \t\r") == std::string_view::npos)
            throw BadLine{"empty line, expected a JSON object"};
        throw BadLine{std::string("not valid JSON: ") + simdjson::error_message(error)};
    }
    simdjson::dom::object object;
    if (doc.get_object().get(object))
        throw BadLine{std::string("expected a JSON object, found ") + json_type_name(doc.type())};

    out.resize(options_.json_keys.size());
    for (size_t k = 0; k < options_.json_keys.size(); ++k) {
        const std::string& key = options_.json_keys[k];
        // Python's json keeps the last of duplicate keys.
        simdjson::dom::element value;
        bool found = false;
        for (auto field : object)
            if (field.key == key) {
                value = field.value;
                found = true;
            }
        if (!found) throw BadLine{"no key '" + key + "'"};

        sentences_.clear();
        split_buffer_.clear();
        if (value.is_string()) {
            std::string_view text = value.get_string().value_unsafe();
            if (splitter_) {
                splitter_->split(text, split_buffer_);
                sentences_.assign(split_buffer_.begin(), split_buffer_.end());
            } else {
                sentences_.push_back(text);
            }
        } else if (simdjson::dom::array list; !value.get_array().get(list)) {
            for (auto item : list) {
                if (!item.is_string())
                    throw BadLine{"key '" + key + "' holds a list with " +
                                  json_type_name(item.type()) + ", expected strings"};
                sentences_.push_back(item.get_string().value_unsafe());
            }
        } else {
            throw BadLine{"key '" + key + "' holds " + json_type_name(value.type()) +
                          ", expected a string or a list of strings"};
        }
        encode_sentences(sentences_, out[k]);
    }
}

void DocumentEncoder::encode_sentences(const std::vector<std::string_view>& sentences,
                                       KeyTokens& out) {
    out.clear();
    for (std::string_view sentence : sentences) {
        size_t before = out.ids.size();
        try {
            tokenizer_.encode_append(sentence, out.ids);
        } catch (const Error& e) {
            throw BadLine{e.what()};
        }
        if (out.ids.size() > before)
            out.lengths.push_back(static_cast<int32_t>(out.ids.size() - before));
    }
    if (options_.append_eod && !out.ids.empty()) {
        out.ids.push_back(eod_);
        out.lengths.back() += 1;
    }
}

}  // namespace mt::preprocess
