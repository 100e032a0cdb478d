// Turns one JSON line into token ids per --json-keys key, as preprocess_data.py's
// Encoder.encode does: a string value is one sentence (or is split into sentences), a list of
// strings is a pre-split list of sentences; empty sentences are dropped; --append-eod adds
// the eod id to a non-empty document and counts it in its last sentence.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mt/tokenizer.h"
#include "sentence_splitter.h"

namespace mt::preprocess {

// One document's tokens for one key: `ids` split into sequences of `lengths`.
struct KeyTokens {
    std::vector<int32_t> ids;
    std::vector<int32_t> lengths;
    void clear() {
        ids.clear();
        lengths.clear();
    }
};

struct EncoderOptions {
    std::vector<std::string> json_keys{"text"};
    bool split_sentences = false;
    bool keep_newlines = false;
    bool append_eod = false;
    std::string lang = "english";
};

// Thrown for a line that cannot be encoded; the caller adds the file and line number.
struct BadLine {
    std::string message;
};

// One per worker thread (holds a JSON parser and a sentence splitter).
class DocumentEncoder {
  public:
    DocumentEncoder(const Tokenizer& tokenizer, const EncoderOptions& options);

    // Encodes `line`, which must be followed by simdjson::SIMDJSON_PADDING readable bytes.
    // Fills out[k] for json_keys[k]. Throws BadLine when the line is not usable.
    void encode(std::string_view line, std::vector<KeyTokens>& out);

  private:
    void encode_sentences(const std::vector<std::string_view>& sentences, KeyTokens& out);

    const Tokenizer& tokenizer_;
    const EncoderOptions& options_;
    int32_t eod_ = -1;
    simdjson::dom::parser parser_;
    std::unique_ptr<SentenceSplitter> splitter_;
    std::vector<std::string> split_buffer_;
    std::vector<std::string_view> sentences_;
};

}  // namespace mt::preprocess
