// Single-thread tokenizer throughput: encodes the "text" field of every line of a JSON-lines
// file with a tokenizer plugin and prints MB/s of text (UTF-8 bytes), the number to put
// beside tiktoken's encode_ordinary or tokenizers' encode on the same texts.
//   mt_bench_tokenize FILE.jsonl --tokenizer-type TYPE [Megatron's tokenizer flags] [--repeat N]
// The first pass starts with empty word caches; --repeat N reports the best of N passes.
#include <simdjson.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "mt/cli/flags.h"
#include "mt/error.h"
#include "mt/registry.h"
#include "mt/tokenizer.h"

namespace po = boost::program_options;

int main(int argc, char** argv) {
    try {
        std::string file;
        int repeat = 1;
        mt::cli::TokenizerFlags tf;
        po::options_description options("mt_bench_tokenize FILE.jsonl --tokenizer-type TYPE ...");
        options.add_options()("file", po::value(&file)->required(), "JSON lines with \"text\"")(
            "repeat", po::value(&repeat)->default_value(1), "passes over the texts (best kept)");
        options.add(mt::cli::tokenizer_flags(tf));
        po::positional_options_description positional;
        positional.add("file", 1);
        po::variables_map vm;
        po::store(po::command_line_parser(argc, argv).options(options).positional(positional).run(),
                  vm);
        po::notify(vm);
        mt::cli::finish_tokenizer_flags(vm, tf);
        auto tokenizer = mt::Registry::global().create_tokenizer(tf.type, tf.options);

        simdjson::dom::parser parser;
        simdjson::dom::document_stream docs;
        simdjson::padded_string json;
        MT_CHECK(!simdjson::padded_string::load(file).get(json), "cannot read ", file);
        MT_CHECK(!parser.parse_many(json).get(docs), "cannot parse ", file);
        std::vector<std::string> texts;
        size_t bytes = 0;
        for (auto doc : docs) {
            std::string_view text;
            MT_CHECK(!doc["text"].get(text), file, ": a line without a string \"text\"");
            texts.emplace_back(text);
            bytes += text.size();
        }

        std::vector<int32_t> ids;
        size_t tokens = 0;
        double best = 1e30, first = 0;
        for (int r = 0; r < repeat; ++r) {
            auto start = std::chrono::steady_clock::now();
            tokens = 0;
            for (const auto& t : texts) {
                ids.clear();
                tokenizer->encode_append(t, ids);
                tokens += ids.size();
            }
            double s =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (r == 0) first = s;
            best = std::min(best, s);
        }
        const double mb = bytes / 1048576.0;
        std::printf(
            "%s: %zu docs, %.2f MB, %zu tokens, first pass %.3f s (%.2f MB/s), best of %d "
            "%.3f s (%.2f MB/s)\n",
            tf.type.c_str(), texts.size(), mb, tokens, first, mb / first, repeat, best, mb / best);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
