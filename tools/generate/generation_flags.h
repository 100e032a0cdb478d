// megatron-generate's own flags, with the names of Megatron-LM's text generation tools
// (tools/run_text_generation_server.py, the older generate_samples_gpt.py): checkpoint, sampling,
// the run mode (server, prompts, sample files, unconditional samples, interactive).
#pragma once

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mt/dtype.h"
#include "mt/infer/sampler.h"
#include "mt/infer/synthetic_requests.h"

namespace mt::generate_tool {

struct GenerationFlags {
    std::string load, ckpt_format;
    infer::SamplingParams sampling;
    bool greedy = false;
    int64_t out_seq_length = 1024;  // tokens to generate, at most (the model's positions bound it)
    uint64_t seed = 1234;
    bool return_log_probs = false;
    std::vector<std::string> prompts;
    std::string sample_input_file, sample_output_file, genfile;
    std::string output_path;  // --prompts' results as JSON (Megatron core_v0.19's examples)
    // Megatron core_v0.19's inference examples (megatron/inference/utils.py add_inference_args):
    std::string prompt_file;                          // JSON lines {"text": ...}: --prompts
    std::optional<int64_t> prompt_file_num_truncate;  // its first N lines only
    bool num_tokens_from_file = false;                // each line's "chatgpt_output_token_length"
    int64_t top_n_logprobs = 0;
    std::optional<int32_t> termination_id;  // instead of the EOD
    bool skip_prompt_log_probs = false;
    std::vector<std::string> stop_words;
    int64_t output_every_n_results = 1;        // --output-path: every Nth result and the last
    // Megatron's dynamic-inference example without --prompts or --prompt-file
    // (--num-tokens-to-prompt, --incoming-requests-per-sec / -duration given): its synthetic
    // requests, as that Megatron version makes them.
    std::optional<infer::SyntheticRequestFlags> synthetic;
    std::optional<std::string> chat_template;  // --chat-template: Jinja text (core_v0.19's)
    int64_t num_samples = 0;
    int port = 5000;  // the REST server's, when no CLI mode is asked for
    bool interactive = false;
    std::string host = "0.0.0.0";
    int64_t inference_max_requests = 8;  // the server's continuous batch (Megatron's default)
    // --inference-dynamic-batching-buffer-size-gb: the batch's states (KV caches) together, GiB
    // (Megatron's default 40; 0: no bound).
    double inference_buffer_size_gb = 40.0;
    DType params_dtype = DType::f32;  // --bf16 / --fp16
    // The model split over the ranks of an mpirun job (rank 0 serves, the others follow).
    int tensor_parallel = 1, pipeline_parallel = 1, expert_parallel = 1;
};

boost::program_options::options_description generation_flags(GenerationFlags& out);
// Reads what po cannot store directly (--port, --greedy) after po::notify.
void finish_generation_flags(const boost::program_options::variables_map& vm, GenerationFlags& out);

}  // namespace mt::generate_tool
