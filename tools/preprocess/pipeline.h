// megatron-preprocess's engine: JSON lines -> token ids -> Megatron .bin/.idx, with the
// output names, document order and bytes of preprocess_data.py. A reader thread batches lines,
// --workers threads encode them, and the calling thread writes batches back in input order;
// the queues between them are bounded, so memory does not grow with the input.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "document_encoder.h"
#include "mt/data/indexed_dataset.h"
#include "mt/tokenizer.h"

namespace mt::preprocess {

struct PreprocessConfig {
    std::string input;          // a file (.jsonl, .json, .jsonl.zst); a glob when partitions > 1
    std::string output_prefix;  // outputs are <prefix>_<key>_<document|sentence>.{bin,idx}
    EncoderOptions encoder;
    int workers = 1;
    int partitions = 1;
    bool keep_sequential_samples = false;
    int64_t log_interval = 1000;
    bool skip_bad_lines = false;
};

struct OutputSummary {
    std::string prefix;
    data::IndexDType dtype = data::IndexDType::u16;
    int64_t documents = 0, sequences = 0, tokens = 0;
};

struct PreprocessResult {
    int64_t documents = 0;  // lines written as documents
    int64_t bad_lines = 0;  // lines skipped under --skip-bad-lines
    int64_t bytes = 0;      // input bytes consumed
    double seconds = 0;
    std::vector<OutputSummary> outputs;  // one per --json-keys key
};

// Output prefix for one key: <prefix>_<key>_<level>.
std::string output_name(const std::string& prefix, const std::string& key, bool split_sentences);

// Runs the whole job. Bad input stops it with an mt::Error "FILE:LINE: reason" (nothing is
// left at the output names), unless skip_bad_lines, which counts and reports such lines.
PreprocessResult run_preprocess(const PreprocessConfig& config, const Tokenizer& tokenizer);

}  // namespace mt::preprocess
