// megatron-generate's command-line modes, as Megatron's generate_samples_gpt.py had them:
// prompts from the command line, a file of prompts, unconditional samples to a jsonl file, and
// the interactive "Context prompt" loop; and the detoxify example's prompt records.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "text_generation.h"

namespace mt::generate_tool {

struct CliSettings {
    TextRequest base;            // sampling settings; prompts and length are filled per prompt
    int64_t out_seq_length = 0;  // tokens to generate at most
    int64_t max_positions = 0;   // the model's limit on prompt + generation (0: none)
    int64_t output_every_n = 1;  // run_prompts' output file: every Nth result and the last
};

// One prompt of --prompts or --prompt-file, with its own number of tokens to generate where the
// file gives one.
struct CliPrompt {
    std::string text;
    std::optional<int64_t> tokens_to_generate;
};

// Megatron's --prompt-file as its inference examples read it (examples/inference/utils.py
// get_requests_from_file): one JSON object per line with a "text" string (other fields ignored),
// the first `truncate` lines when given, and with `tokens_from_file` each line's
// "chatgpt_output_token_length" as its tokens to generate. mt::Error naming the file and line.
std::vector<CliPrompt> read_prompt_file(const std::string& path, std::optional<int64_t> truncate,
                                        bool tokens_from_file);

// Each prompt's prompt + generation on `out` (with its log-probs when base.logprobs); with an
// `output_path`, also the JSON that Megatron core_v0.19's examples/inference
// gpt_static_inference.py writes to its --output-path: {"<request id from 0>": {"input_prompt",
// "generated_text" (the generated ids detokenized), "generated_tokens", "latency" (seconds for all
// the prompts, the same in every result), and with base.logprobs "logprobs" (the prompt's after its
// first token unless base.prompt_logprobs is false, then the generated ones), and with
// base.top_n_logprobs "generated_top_n_logprobs" (per generated token a {token text: log-prob}
// dict)}}, every s.output_every_n-th result and the last, written to a temporary name and renamed
// into place. Megatron's per-token times ("tpot") are not measured here and left out.
void run_prompts(TextGenerator& g, const CliSettings& s, const std::vector<CliPrompt>& prompts,
                 std::ostream& out, const std::string& output_path);
// Every line of `input` is a prompt; writes "\nContext:<prompt>\n\nMegatron-LM:<generation>\n"
// per line to `output` (a temporary name renamed into place), with a progress bar.
void run_sample_file(TextGenerator& g, const CliSettings& s, const std::string& input,
                     const std::string& output);
// --sample-input-file with --num-samples, as Megatron's detoxify generate_samples_gpt.py
// (examples/academic_paper_scripts/detxoify_lm) reads them: `count` prompts from `input`'s JSON
// lines ({"prompt": {"text": ...}}), "EMPTY TEXT" past its end, each sampled at temperature 1.0;
// one {"text", "all_text", "prompt", "id"} line each to `output`.
void run_prompt_records(TextGenerator& g, const CliSettings& s, const std::string& input,
                        const std::string& output, int64_t count);
// `count` samples from an EOD prompt, one {"text", "length", "finished"} line each, to `genfile`.
void run_unconditional(TextGenerator& g, const CliSettings& s, int64_t count,
                       const std::string& genfile);
// "Context prompt (stop to exit) >>> " until "stop" or end of input.
void run_interactive(TextGenerator& g, const CliSettings& s, std::istream& in, std::ostream& out);

}  // namespace mt::generate_tool
