#include "generation_flags.h"

#include <boost/program_options.hpp>

#include "mt/cli/flags.h"
#include "mt/cli/megatron_flags.h"
#include "mt/error.h"

namespace mt::generate_tool {

namespace po = boost::program_options;

namespace {

// Options of Megatron core_v0.19's inference examples (megatron/inference/utils.py's
// add_inference_args) that megatron-generate parses and refuses by name.
constexpr const char* kExampleOptionsNotSupported[] = {"output-request-events"};

// Options of the same examples that test or time Megatron's dynamic engine (suspending it,
// draining it between batches, timing only) or choose how its requests reach it
// (offline_inference.py's ZMQ coordinator over the data-parallel engines and its asyncio mode,
// whose output, the script says, is the direct run's): megatron-generate has no such engine and
// its results do not depend on them, so they are accepted and change nothing.
constexpr const char* kEngineOptionsWithoutEffect[] = {
    "suspend-resume-interval", "suspend-timeout", "throughput-check-only", "drain-between-batches",
    "batch-boundaries",        "use-coordinator", "coordinator-host",      "coordinator-port",
    "async-mode"};

}  // namespace

po::options_description generation_flags(GenerationFlags& f) {
    po::options_description g("Generation", 100);
    g.add_options()("model", po::value<std::string>()->default_value("gpt"),
                    "model family (a model plugin): gpt, or mamba (hybrid) for Megatron's "
                    "pretrain_mamba.py models")(
        "load", po::value(&f.load)->required(),
        "checkpoint directory: megatron-train's (torch), Megatron's torch_dist, or a "
        "Hugging Face model folder")("ckpt-format", po::value(&f.ckpt_format),
                                     "checkpoint format of --load (default: detected)")(
        "use-checkpoint-args", po::bool_switch(),
        "accepted: the model and the tokenizer always come from the checkpoint's args where no "
        "flag gives them")("temperature", po::value(&f.sampling.temperature)->default_value(1.0),
                           "sampling temperature")(
        "top_k", po::value(&f.sampling.top_k)->default_value(0), "top-k sampling (1: greedy)")(
        "top_p", po::value(&f.sampling.top_p)->default_value(0.0), "top-p (nucleus) sampling")(
        "greedy", po::bool_switch(&f.greedy), "greedy decoding (top_k 1)")(
        "out-seq-length", po::value(&f.out_seq_length)->default_value(1024),
        "tokens to generate at most (fewer when the prompt fills the model's positions)")(
        "seed", po::value(&f.seed)->default_value(1234), "seed of the sampling stream")(
        "return-log-probs", po::bool_switch(&f.return_log_probs),
        "print each token's log-probability (with --prompts; --out-seq-length 0 scores the "
        "prompt alone)")("prompts", po::value(&f.prompts)->multitoken(),
                         "generate from these prompts and print the texts")(
        "sample-input-file", po::value(&f.sample_input_file),
        "one prompt per line; generations go to --sample-output-file (with --num-samples: "
        "JSON lines {\"prompt\": {\"text\": ...}} as Megatron's detoxify example reads them, "
        "sampled at temperature 1.0 as it does)")(
        "sample-output-file", po::value(&f.sample_output_file),
        "output of --sample-input-file (default: the input's name + .out)")(
        "num-samples", po::value(&f.num_samples)->default_value(0),
        "unconditional samples to write to --genfile (with --sample-input-file: that many "
        "prompts)")("genfile", po::value(&f.genfile), "jsonl output of --num-samples")(
        "interactive", po::bool_switch(&f.interactive),
        "prompt for contexts on the terminal (generate_samples_gpt.py's loop; ours)")(
        "port", po::value<int>()->default_value(5000),
        "serve Megatron's REST API (PUT /api) on this port (0: any); the mode when no other is "
        "asked for, as run_text_generation_server.py")(
        "host", po::value(&f.host)->default_value("0.0.0.0"), "address the server listens on")(
        "inference-max-requests", po::value(&f.inference_max_requests)->default_value(8),
        "the server's requests (prompts) decoded together in its continuous batch; more wait "
        "for a place")(
        "inference-dynamic-batching-buffer-size-gb",
        po::value(&f.inference_buffer_size_gb)->default_value(40.0),
        "GiB the continuous batch's KV caches hold together (each request reserves its prompt + "
        "max_tokens positions when admitted; more wait); 0: no bound")(
        "tensor-model-parallel-size", po::value(&f.tensor_parallel)->default_value(1),
        "ranks each layer's weights are split over (under mpirun; rank 0 serves or prints)")(
        "pipeline-model-parallel-size", po::value(&f.pipeline_parallel)->default_value(1),
        "pipeline stages the layers are split over (under mpirun)")(
        "expert-model-parallel-size", po::value(&f.expert_parallel)->default_value(1),
        "ranks a MoE model's experts are spread over (under mpirun)")(
        "num-tokens-to-generate", po::value<int64_t>(),
        "the name Megatron's generation scripts give --out-seq-length")(
        "max-batch-size", po::value<int64_t>(),
        "accepted: prompts are generated one request at a time (Megatron: deprecated in favour "
        "of --inference-max-batch-size)")(
        "num-tokens-to-prompt", po::value<std::vector<int64_t>>()->multitoken(),
        "MIN MAX: without --prompts or --prompt-file, Megatron's dynamic-inference example's "
        "synthetic requests: prompts of \"hi \" of random lengths in [MIN, MAX] (default 64 "
        "1024), as many as arrive in the simulated time, drawn as the Megatron version of the "
        "flags draws them from --seed (mt/infer/synthetic_requests.h); with prompts, accepted "
        "(a request's tokens do not depend on when it arrives)")(
        "incoming-requests-per-sec", po::value<double>(),
        "the synthetic requests' arrival rate (default 100)")(
        "incoming-requests-duration", po::value<double>(),
        "the synthetic requests' simulated time, seconds (default 10)");
    // The flags of Megatron core_v0.19's inference examples (megatron/inference/utils.py's
    // add_inference_args: examples/inference/advanced/gpt_static_inference.py, ...).
    g.add_options()(
        "output-path", po::value(&f.output_path),
        "with --prompts: also write the results as JSON, as Megatron's "
        "gpt_static_inference.py and gpt_dynamic_inference.py do (ids, text, latency, log-probs: "
        "all, the prompt's, the generated ones')")(
        "model-provider", po::value<std::string>(),
        "Megatron's examples' model family (gpt, or hybrid / mamba): must agree with --model")(
        "inference-ckpt-non-strict", po::bool_switch(),
        "accepted: lets Megatron load a checkpoint missing some keys; megatron-generate loads "
        "every key the model has, and a checkpoint without one is an error")(
        "inference-repeat-n", po::value<int64_t>(),
        "accepted: repeats the generation N times to time it; megatron-generate runs it once, "
        "the same results")("use-flashinfer-fused-rope", po::bool_switch(),
                            "accepted: a fused rotary-embedding GPU kernel; the same rotation")(
        "no-record-throughput", po::bool_switch(),
        "accepted: leaves Megatron's throughput out of --output-path's file, which holds none "
        "here");
    // core_v0.19's tokenizer option, which its chat endpoint renders messages with.
    g.add_options()("chat-template", po::value<std::string>(),
                    "the chat template (Jinja text) POST /v1/chat/completions renders messages "
                    "with, instead of the tokenizer folder's");
    g.add_options()("incoming-requests-per-step", po::value<int64_t>(),
                    "accepted: Megatron's dynamic-inference example adds N requests to its engine "
                    "a step (a fixed schedule, for debugging); a request's results here do not "
                    "depend on when it joins (its tokens are those it gets alone), so "
                    "--prompt-file's prompts run as --prompts do");
    g.add_options()("prompt-file", po::value(&f.prompt_file),
                    "JSON lines of prompts, each {\"text\": ...} (other fields ignored), "
                    "generated as --prompts are (Megatron's inference examples)")(
        "prompt-file-num-truncate", po::value<int64_t>(),
        "only the first N prompts of --prompt-file")(
        "num-tokens-from-file", po::bool_switch(&f.num_tokens_from_file),
        "each --prompt-file line's \"chatgpt_output_token_length\" is its number of tokens to "
        "generate")("top-n-logprobs", po::value(&f.top_n_logprobs)->default_value(0),
                    "with --output-path: the N most likely tokens and their log-probs at each "
                    "generated position (\"generated_top_n_logprobs\")")(
        "termination-id", po::value<int32_t>(),
        "the token id that ends a generation instead of the tokenizer's EOD (-1: none does)")(
        "skip-prompt-log-probs", po::bool_switch(&f.skip_prompt_log_probs),
        "--return-log-probs gives the generated tokens' log-probs only")(
        "stop-words", po::value(&f.stop_words)->multitoken(),
        "generation ends when the generated tokens end with one of these words' tokens, which "
        "are dropped from the result (Megatron's dynamic engine)")(
        "output-every-n-results", po::value(&f.output_every_n_results)->default_value(1),
        "--output-path holds every Nth result and the last");
    for (const char* flag : kEngineOptionsWithoutEffect)
        g.add_options()(flag, po::value<std::vector<std::string>>()->multitoken()->zero_tokens(),
                        "accepted: tests or times Megatron's dynamic engine; the same results");
    for (const char* flag : kExampleOptionsNotSupported)
        g.add_options()(flag, po::value<std::vector<std::string>>()->multitoken()->zero_tokens(),
                        "Megatron's inference examples: not supported yet");
    return g;
}

void finish_generation_flags(const po::variables_map& vm, GenerationFlags& f) {
    if (vm.count("chat-template")) f.chat_template = vm["chat-template"].as<std::string>();
    f.params_dtype = cli::params_dtype_from(vm);
    if (vm.count("num-tokens-to-generate"))
        f.out_seq_length = vm["num-tokens-to-generate"].as<int64_t>();
    // Without prompts, the synthetic-request flags ask for Megatron's synthetic requests (with
    // prompts they only time the arrivals, which change no request's tokens).
    const bool synthetic = vm.count("num-tokens-to-prompt") ||
                           vm.count("incoming-requests-per-sec") ||
                           vm.count("incoming-requests-duration");
    if (synthetic && f.prompts.empty() && f.prompt_file.empty()) {
        infer::SyntheticRequestFlags s;
        if (vm.count("num-tokens-to-prompt")) {
            const auto& range = vm["num-tokens-to-prompt"].as<std::vector<int64_t>>();
            MT_CHECK(range.size() == 2, "--num-tokens-to-prompt takes MIN MAX (Megatron's "
                     "random.randint(*num_tokens_to_prompt)), got ", range.size(), " values");
            s.min_prompt = range[0];
            s.max_prompt = range[1];
        }
        if (vm.count("incoming-requests-per-sec"))
            s.per_sec = vm["incoming-requests-per-sec"].as<double>();
        if (vm.count("incoming-requests-duration"))
            s.duration = vm["incoming-requests-duration"].as<double>();
        s.seed = f.seed;
        // core_v0.19 draws them otherwise; a flag only it has says the script is its.
        s.core_v0_19 = !cli::newer_megatron_flags_given(vm).empty();
        f.synthetic = s;
    }
    if (vm.count("incoming-requests-per-step"))
        MT_CHECK(vm["incoming-requests-per-step"].as<int64_t>() > 0,
                 "--incoming-requests-per-step must be > 0, got ",
                 vm["incoming-requests-per-step"].as<int64_t>());
    for (const char* flag : kExampleOptionsNotSupported)
        MT_CHECK(!vm.count(flag), "--", flag,
                 ": not supported yet: this option of Megatron's inference examples "
                 "(megatron/inference/utils.py)");
    if (vm.count("model-provider")) {
        const std::string provider = vm["model-provider"].as<std::string>();
        const std::string model = vm["model"].as<std::string>();
        MT_CHECK(provider == "gpt" || provider == "hybrid" || provider == "mamba",
                 "--model-provider ", provider, ": Megatron's choices are gpt, hybrid and mamba");
        MT_CHECK((provider == "gpt") == (model == "gpt"), "--model-provider ", provider,
                 " names another model family than --model ", model, ": give --model ",
                 provider == "gpt" ? "gpt" : "mamba");
    }
    MT_CHECK(f.prompts.empty() || f.prompt_file.empty(),
             "Cannot use both --prompts and --prompt-file");
    if (vm.count("prompt-file-num-truncate")) {
        f.prompt_file_num_truncate = vm["prompt-file-num-truncate"].as<int64_t>();
        MT_CHECK(*f.prompt_file_num_truncate > 0, "--prompt-file-num-truncate must be > 0, got ",
                 *f.prompt_file_num_truncate);
    }
    MT_CHECK(!f.num_tokens_from_file || !f.prompt_file.empty(),
             "--num-tokens-from-file reads --prompt-file: give --prompt-file");
    if (vm.count("termination-id")) f.termination_id = vm["termination-id"].as<int32_t>();
    MT_CHECK(f.top_n_logprobs >= 0 && f.top_n_logprobs <= 1000,
             "--top-n-logprobs must be in [0, 1000], got ", f.top_n_logprobs);
    MT_CHECK(f.output_every_n_results > 0, "--output-every-n-results must be > 0, got ",
             f.output_every_n_results);
    for (const auto& word : f.stop_words)
        MT_CHECK(!word.empty(), "--stop-words: a stop word is empty");
    MT_CHECK(f.output_path.empty() || !f.prompts.empty() || !f.prompt_file.empty(),
             "--output-path writes the results of --prompts or --prompt-file: give one");
    f.port = vm["port"].as<int>();
    MT_CHECK(f.port >= 0 && f.port < 65536, "--port must be in [0, 65535], got ", f.port);
    // --sample-input-file with --num-samples is one mode: the detoxify example's prompt records.
    const int modes = int(!f.prompts.empty() || !f.prompt_file.empty()) +
                      int(!f.sample_input_file.empty() || f.num_samples > 0) + int(f.interactive);
    MT_CHECK(modes <= 1,
             "--prompts (--prompt-file), --sample-input-file / --num-samples and --interactive are "
             "separate modes: give one (or none, to serve on --port)");
    if (f.greedy) {
        MT_CHECK(f.sampling.top_p == 0.0, "--greedy and --top_p cannot be used together");
        f.sampling.top_k = 1;
    }
    MT_CHECK(f.inference_max_requests > 0 && f.inference_max_requests <= 4096,
             "--inference-max-requests must be in [1, 4096], got ", f.inference_max_requests);
    MT_CHECK(f.inference_buffer_size_gb >= 0 && f.inference_buffer_size_gb <= 1e9,
             "--inference-dynamic-batching-buffer-size-gb must be in [0, 1e9], got ",
             f.inference_buffer_size_gb);
    MT_CHECK(f.num_samples >= 0, "--num-samples must be >= 0, got ", f.num_samples);
    MT_CHECK(f.num_samples == 0 || !f.sample_input_file.empty() || !f.genfile.empty(),
             "--num-samples needs --genfile (or --sample-input-file)");
    // 0 scores the prompt, as the REST API's tokens_to_generate 0 (which implies logprobs).
    MT_CHECK(f.out_seq_length > 0 || (f.out_seq_length == 0 && f.return_log_probs),
             "--out-seq-length must be > 0 (or 0 with --return-log-probs: the prompt's "
             "log-probabilities only), got ",
             f.out_seq_length);
}

}  // namespace mt::generate_tool
