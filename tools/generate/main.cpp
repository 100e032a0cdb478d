// megatron-generate: text generation from a Megatron checkpoint or a Hugging Face model folder,
// as Megatron-LM's tools/run_text_generation_server.py (REST: PUT /api, POST /completions,
// core_v0.19's POST /v1/chat/completions) and its older generate_samples_gpt.py (prompts, sample
// files, unconditional samples, interactive) do.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "api_server.h"
#include "cli_modes.h"
#include "generation_flags.h"
#include "mt/cli/flags.h"
#include "mt/cli/openmp_waiting.h"
#include "mt/cli/tool.h"
#include "mt/infer/model_loader.h"
#include "mt/infer/model_parallel_inference.h"
#include "mt/parallel/parallel_state.h"
#include "mt/parallel/world.h"
#include "mt/registry.h"

namespace {

using namespace mt::generate_tool;

std::vector<CliPrompt> prompts_of(const std::vector<std::string>& texts) {
    std::vector<CliPrompt> out;
    for (const auto& text : texts) out.push_back({text, std::nullopt});
    return out;
}

// Rank 0's part of the work: the tokenizer and the chosen mode over `model`.
void lead(const GenerationFlags& flags, const mt::cli::TokenizerFlags& tf,
          const mt::ModelFamily& family, const mt::infer::LoadedModel& loaded, mt::Model& model) {
    mt::Registry& registry = mt::Registry::global();
    // --use-checkpoint-args: the checkpoint's tokenizer when the flags name none.
    const mt::infer::TokenizerChoice choice =
        mt::infer::tokenizer_choice(tf.type, tf.options, flags.load, loaded.checkpoint_args,
                                    family.default_tokenizer_type(), tf.model_from_checkpoint_args);
    auto tokenizer = registry.create_tokenizer(choice.type, choice.options);
    std::printf(" loaded %s checkpoint from %s at iteration %lld\n", loaded.format.c_str(),
                flags.load.c_str(), static_cast<long long>(loaded.iteration));
    std::fflush(stdout);
    TextGenerator generator(model, *tokenizer, flags.seed);
    CliSettings s;
    s.base.sampling = flags.sampling;
    s.base.logprobs = flags.return_log_probs;
    s.base.prompt_logprobs = !flags.skip_prompt_log_probs;
    s.base.top_n_logprobs = flags.top_n_logprobs;
    s.base.termination_id = flags.termination_id;
    s.base.stop_words = flags.stop_words;
    s.out_seq_length = flags.out_seq_length;
    s.max_positions = model.max_positions();
    s.output_every_n = flags.output_every_n_results;
    if (!flags.prompt_file.empty())
        run_prompts(generator, s,
                    read_prompt_file(flags.prompt_file, flags.prompt_file_num_truncate,
                                     flags.num_tokens_from_file),
                    std::cout, flags.output_path);
    else if (!flags.prompts.empty())
        run_prompts(generator, s, prompts_of(flags.prompts), std::cout, flags.output_path);
    else if (flags.synthetic) {  // Megatron's dynamic-inference example without prompts
        const auto requests = mt::infer::synthetic_requests(*flags.synthetic);
        std::printf(" %zu synthetic requests (%s's), prompts of %lld to %lld tokens\n",
                    requests.size(), flags.synthetic->core_v0_19 ? "core_v0.19" : "core_v0.13",
                    static_cast<long long>(flags.synthetic->min_prompt),
                    static_cast<long long>(flags.synthetic->max_prompt));
        run_prompts(generator, s,
                    prompts_of(mt::infer::synthetic_prompt_texts(requests, *flags.synthetic,
                                                                 *tokenizer)),
                    std::cout, flags.output_path);
    }
    else if (!flags.sample_input_file.empty() && flags.num_samples > 0)
        run_prompt_records(generator, s, flags.sample_input_file,
                           flags.sample_output_file.empty() ? flags.sample_input_file + ".out"
                                                            : flags.sample_output_file,
                           flags.num_samples);
    else if (!flags.sample_input_file.empty())
        run_sample_file(generator, s, flags.sample_input_file,
                        flags.sample_output_file.empty() ? flags.sample_input_file + ".out"
                                                         : flags.sample_output_file);
    else if (flags.num_samples > 0)
        run_unconditional(generator, s, flags.num_samples, flags.genfile);
    else if (flags.interactive)
        run_interactive(generator, s, std::cin, std::cout);
    else {  // run_text_generation_server.py
        ChatPrompt chat = ChatPrompt::of_tokenizer(choice.options, flags.load, flags.chat_template);
        std::printf(" chat template: %s\n", chat.source().c_str());
        serve_api(generator, flags.load, std::move(chat), flags.host, flags.port,
                  BatchLimits{size_t(flags.inference_max_requests),
                              int64_t(flags.inference_buffer_size_gb * double(int64_t(1) << 30))});
    }
}

int generate(const GenerationFlags& flags, const mt::cli::TokenizerFlags& tf,
             const mt::ModelFamily& family, const mt::ModelArgs& overrides) {
    // Under mpirun each rank loads its part of the model; rank 0 leads, the others follow.
    auto ranks = mt::infer::inference_ranks(flags.tensor_parallel, flags.pipeline_parallel,
                                            flags.expert_parallel);
    mt::parallel::run_on_ranks(ranks->world(), [&] {
        mt::infer::LoadedModel loaded =
            mt::infer::load_for_inference(mt::Registry::global(), family, flags.load, overrides,
                                          flags.ckpt_format, flags.params_dtype, ranks.get());
        mt::infer::lead_or_follow(ranks->world(), *loaded.model, [&](mt::Model& model) {
            lead(flags, tf, family, loaded, model);
        });
    });
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    mt::cli::spin_briefly_unless_chosen(argv);  // serving shares machines: docs/benchmarks.md
    GenerationFlags flags;
    mt::cli::TokenizerFlags tokenizer;
    return mt::cli::run_model_tool(
        argc, argv, "gpt", [&](const mt::ModelFamily& family, mt::cli::ToolSpec& spec) {
            spec.name = "megatron-generate";
            spec.megatron_args = mt::cli::MegatronTool::inference;  // docs/flags.md
            spec.description =
                "Generates text from a Megatron checkpoint (megatron-train's, Megatron-LM's) or a\n"
                "Hugging Face model folder: Megatron's REST server (PUT /api, POST\n"
                "/v1/completions and /v1/chat/completions, streamed or not, on --port, 5000,\n"
                "unless another mode is asked for), --prompts, a file of prompts, unconditional\n"
                "samples, or --interactive. Model flags given here override the checkpoint's own.";
            spec.options.add(generation_flags(flags));
            spec.options.add(mt::cli::tokenizer_flags(tokenizer, false));
            spec.options.add(mt::cli::checkpoint_tokenizer_flags(tokenizer));
            spec.options.add(mt::cli::precision_flags());
            spec.options.add(mt::cli::model_flags(family));
            spec.run = [&](const boost::program_options::variables_map& vm) {
                finish_generation_flags(vm, flags);
                mt::cli::finish_tokenizer_flags(vm, tokenizer);
                return generate(flags, tokenizer, family,
                                mt::cli::collect_model_args(vm, family.flags(), false));
            };
        });
}
