// megatron-preprocess: Megatron-LM's tools/preprocess_data.py in C++ (same flags, same outputs).
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>

#include "mt/cli/flags.h"
#include "mt/cli/tool.h"
#include "mt/registry.h"
#include "pipeline.h"

namespace po = boost::program_options;

int main(int argc, char** argv) {
    mt::cli::ToolSpec spec;
    spec.name = "megatron-preprocess";
    spec.allow_abbreviations = true;  // preprocess_data.py keeps argparse's abbreviations
    spec.description =
        "Tokenizes a JSON-lines corpus (.jsonl, .json, .jsonl.zst) into Megatron's indexed "
        "dataset\n<output-prefix>_<key>_<document|sentence>.{bin,idx}, byte-identical to "
        "Megatron-LM's tools/preprocess_data.py.";

    mt::preprocess::PreprocessConfig config;
    mt::cli::TokenizerFlags tokenizer;
    std::string dataset_impl;
    po::options_description input("Input data", 100);
    input.add_options()("input", po::value(&config.input)->required(),
                        "input JSON-lines file (a glob when --partitions > 1)")(
        "json-keys",
        po::value(&config.encoder.json_keys)->multitoken()->default_value({"text"}, "text"),
        "keys to extract from each JSON object (one dataset per key)")(
        "split-sentences", po::bool_switch(&config.encoder.split_sentences),
        "split documents into sentences (ICU sentence boundaries)")(
        "keep-newlines", po::bool_switch(&config.encoder.keep_newlines),
        "keep newlines between sentences when splitting")(
        "lang", po::value(&config.encoder.lang)->default_value("english"),
        "language for sentence splitting (NLTK punkt name or ICU locale)")(
        "skip-bad-lines", po::bool_switch(&config.skip_bad_lines),
        "skip (and count) lines that are not valid JSON, lack a key or are not UTF-8, "
        "instead of stopping");
    po::options_description process("Tokenization process", 100);
    process.add_options()("append-eod", po::bool_switch(&config.encoder.append_eod),
                          "append an <eod> token to the end of each document");
    po::options_description output("Output data", 100);
    output.add_options()("output-prefix", po::value(&config.output_prefix)->required(),
                         "path of the outputs without suffix")(
        "dataset-impl", po::value(&dataset_impl)->default_value("mmap"),
        "accepted for old scripts; only mmap exists");
    po::options_description runtime("Runtime", 100);
    runtime.add_options()("workers", po::value(&config.workers)->default_value(1),
                          "number of worker threads")(
        "partitions", po::value(&config.partitions)->default_value(1), "number of file partitions")(
        "log-interval", po::value(&config.log_interval)->default_value(1000),
        "interval between progress updates")(
        "keep-sequential-samples", po::bool_switch(&config.keep_sequential_samples),
        "partition the input in contiguous blocks instead of round-robin");
    spec.options.add(input)
        .add(mt::cli::tokenizer_flags(tokenizer))
        .add(process)
        .add(output)
        .add(runtime);

    spec.run = [&](const po::variables_map& vm) {
        mt::cli::finish_tokenizer_flags(vm, tokenizer);
        MT_CHECK(dataset_impl == "mmap", "--dataset-impl ", dataset_impl,
                 ": only mmap is supported (the format current Megatron reads)");
        auto tok = mt::Registry::global().create_tokenizer(tokenizer.type, tokenizer.options);
        auto result = mt::preprocess::run_preprocess(config, *tok);
        for (const auto& out : result.outputs)
            std::printf("%s.{bin,idx}: %lld documents, %lld sequences, %lld tokens (%s)\n",
                        out.prefix.c_str(), static_cast<long long>(out.documents),
                        static_cast<long long>(out.sequences), static_cast<long long>(out.tokens),
                        mt::data::index_dtype_name(out.dtype));
        double s = result.seconds > 0 ? result.seconds : 1e-9;
        std::printf("Processed %lld documents in %.2f s (%.2f docs/s, %.2f MB/s)",
                    static_cast<long long>(result.documents), result.seconds, result.documents / s,
                    result.bytes / s / 1048576.0);
        if (result.bad_lines)
            std::printf("; skipped %lld bad lines", static_cast<long long>(result.bad_lines));
        std::printf("\n");
        return 0;
    };
    return mt::cli::run_tool(argc, argv, spec);
}
