// Single-thread tokenizer throughput: encodes the "text" field of every line of a JSON-lines
// file with a tokenizer plugin and prints MB/s of text (UTF-8 bytes), the number to put
// beside tiktoken's encode_ordinary on the same texts.
//   mt_bench_tokenize FILE.jsonl TOKENIZER-TYPE [VOCAB [MERGES]] [--repeat N]
#include <simdjson.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mt/error.h"
#include "mt/registry.h"
#include "mt/tokenizer.h"

int main(int argc, char** argv) {
    try {
        std::vector<std::string> args(argv + 1, argv + argc);
        int repeat = 1;
        for (size_t i = 0; i + 1 < args.size(); ++i)
            if (args[i] == "--repeat") {
                repeat = std::stoi(args[i + 1]);
                args.erase(args.begin() + i, args.begin() + i + 2);
                break;
            }
        MT_CHECK(
            args.size() >= 2,
            "usage: mt_bench_tokenize FILE.jsonl TOKENIZER-TYPE [VOCAB [MERGES]] [--repeat N]");
        mt::TokenizerOptions options;
        if (args.size() > 2) options.vocab_file = args[2];
        if (args.size() > 3) options.merge_file = args[3];
        auto tokenizer = mt::Registry::global().create_tokenizer(args[1], options);

        simdjson::dom::parser parser;
        simdjson::dom::document_stream docs;
        simdjson::padded_string json;
        MT_CHECK(!simdjson::padded_string::load(args[0]).get(json), "cannot read ", args[0]);
        MT_CHECK(!parser.parse_many(json).get(docs), "cannot parse ", args[0]);
        std::vector<std::string> texts;
        size_t bytes = 0;
        for (auto doc : docs) {
            std::string_view text;
            MT_CHECK(!doc["text"].get(text), args[0], ": a line without a string \"text\"");
            texts.emplace_back(text);
            bytes += text.size();
        }

        std::vector<int32_t> ids;
        size_t tokens = 0;
        double best = 1e30;
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
            best = std::min(best, s);
        }
        std::printf("%s: %zu docs, %.2f MB, %zu tokens, %.3f s, %.2f MB/s (best of %d)\n",
                    args[1].c_str(), texts.size(), bytes / 1048576.0, tokens, best,
                    bytes / 1048576.0 / best, repeat);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
