// Megatron core_v0.19's classes for GPT2BPETokenizer, BertWordPiece*, HuggingFaceTokenizer and
// NullTokenizer (tests/fixtures/core_v0_19_tokenizers/make_fixtures.py): each configuration's
// options parsed by our flag parser from the same argv, and a tokenizer checked against everything
// Megatron's class answered (vocabulary size, special ids, dataset identity, ids, detokenize,
// corpora).
#pragma once

#include <gtest/gtest.h>
#include <simdjson.h>

#include <boost/program_options/parsers.hpp>
#include <boost/program_options/variables_map.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "corpus_reference.h"
#include "mt/cli/flags.h"
#include "mt/tokenizer.h"
#include "test_support.h"
#include "zstd_file.h"

namespace mt::test {

struct CoreV019Reference {
    simdjson::dom::parser parser;
    simdjson::padded_string text;
    simdjson::dom::element root;
    CoreV019Reference()
        : text(read_maybe_zstd(fixtures_dir() / "core_v0_19_tokenizers" / "cases.json.zst")),
          root(parser.parse(text)) {}
};

// The options our flags give for a configuration: its argv and the shared data's files for
// its type, with --tokenizer-classes core_v0.19.
inline TokenizerOptions core_v0_19_options(simdjson::dom::element config) {
    const std::string type{std::string_view(config["type"])};
    std::vector<std::string> argv{"test", "--tokenizer-type", type, "--tokenizer-classes",
                                  "core_v0.19"};
    const auto data = [](const char* rel) { return test_data(rel)->string(); };
    if (type == "GPT2BPETokenizer")
        argv.insert(argv.end(), {"--vocab-file", data("gpt2/gpt2-vocab.json"), "--merge-file",
                                 data("gpt2/gpt2-merges.txt")});
    else if (type == "BertWordPieceLowerCase")
        argv.insert(argv.end(), {"--vocab-file", data("bert/bert-large-uncased-vocab.txt")});
    else if (type == "BertWordPieceCase")
        argv.insert(argv.end(), {"--vocab-file", data("bert/bert-large-cased-vocab.txt")});
    else if (type == "HuggingFaceTokenizer") {  // the name starts with the folder's
        const std::string name{std::string_view(config["name"])};
        argv.insert(argv.end(),
                    {"--tokenizer-model",
                     data(("tokenizers/hf/" + name.substr(0, name.find(':'))).c_str())});
    }
    for (auto a : config["argv"].get_array()) {  // <fixtures>/...: tests/fixtures/...
        std::string arg{std::string_view(a)};
        if (arg.rfind("<fixtures>", 0) == 0) arg = fixtures_dir().string() + arg.substr(10);
        argv.push_back(arg);
    }
    cli::TokenizerFlags flags;
    boost::program_options::variables_map vm;
    std::vector<const char*> args;
    for (const std::string& a : argv) args.push_back(a.c_str());
    boost::program_options::store(boost::program_options::parse_command_line(
                                      int(args.size()), args.data(), cli::tokenizer_flags(flags)),
                                  vm);
    boost::program_options::notify(vm);
    cli::finish_tokenizer_flags(vm, flags);
    return flags.options;
}

// core_v0.19's --tokenizer-metadata configurations (make_metadata_fixture.py): make_fixtures.py's
// fields, with the identity and chat template Megatron's tokenizer took, or the error it raised.
struct CoreV019MetadataReference {
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    CoreV019MetadataReference()
        : root(parser.load(
              (fixtures_dir() / "core_v0_19_tokenizers" / "metadata_cases.json").string())) {}
};

inline std::vector<int32_t> core_v0_19_ids(simdjson::dom::element array) {
    std::vector<int32_t> ids;
    for (auto v : array.get_array()) ids.push_back(int32_t(int64_t(v)));
    return ids;
}

// Calls check(config, options) for every configuration of `type`; their number.
inline size_t for_each_core_v0_19_config(
    const CoreV019Reference& ref, std::string_view type,
    const std::function<void(simdjson::dom::element, const TokenizerOptions&)>& check) {
    size_t n = 0;
    for (auto config : ref.root["configs"].get_array()) {
        if (std::string_view(config["type"]) != type) continue;
        SCOPED_TRACE(std::string(type) + " " + std::string(std::string_view(config["name"])));
        check(config, core_v0_19_options(config));
        ++n;
    }
    return n;
}

// A dataset identity against Megatron's unique_identifiers (the fixture's placeholders for
// paths).
inline void expect_core_v0_19_identity(const TokenizerIdentity& id, simdjson::dom::element identity,
                                       const TokenizerOptions& options) {
    EXPECT_TRUE(id.single_path);
    EXPECT_EQ(id.class_name, std::string_view(identity["class"]));
    size_t k = 0;
    for (auto field : identity.get_object()) {
        if (field.key == "class") continue;
        if (field.key == "tokenizer_path") {
            ASSERT_EQ(id.paths.size(), 1u);
            EXPECT_EQ(id.paths[0].has_value(), !field.value.is_null());
            if (!field.value.is_null() && std::string_view(field.value) == "<model>")
                EXPECT_EQ(*id.paths[0], options.tokenizer_model);
            else if (!field.value.is_null())
                EXPECT_EQ(*id.paths[0], std::string_view(field.value));
            continue;
        }
        ASSERT_LT(k, id.options.size());
        EXPECT_EQ(id.options[k].first, field.key);
        std::string want{std::string_view(field.value)};
        if (want == "<vocab>") want = options.vocab_file;
        if (want == "<merges>") want = options.merge_file;
        if (want == "<model>") want = options.tokenizer_model;
        EXPECT_EQ(id.options[k].second, want) << field.key;
        ++k;
    }
    EXPECT_EQ(k, id.options.size());
}

// `tok` against one configuration. Paths in the identity are the fixture's placeholders.
inline void expect_core_v0_19_config(const Tokenizer& tok, simdjson::dom::element config,
                                     const TokenizerOptions& options) {
    EXPECT_EQ(tok.vocab_size(), int64_t(config["vocab_size"]));
    const SpecialIds& s = tok.special_ids();
    const auto id_or_none = [](std::optional<int32_t> id) {
        return id && *id >= 0 ? id : std::nullopt;  // Megatron's -1 is "none" here
    };
    for (auto [field, got] : {std::pair{"bos", s.bos},
                              {"eos", s.eos},
                              {"eod", s.eod},
                              {"mask", s.mask},
                              {"pad", s.pad},
                              {"cls", s.cls},
                              {"sep", s.sep}}) {
        const auto want = config["specials"][field];
        EXPECT_EQ(id_or_none(got),
                  want.is_null() ? std::nullopt : std::optional<int32_t>(int64_t(want)))
            << field;
    }
    expect_core_v0_19_identity(tok.dataset_identity(), config["identity"], options);
    size_t failures = 0;
    for (auto c : config["cases"].get_array()) {
        const std::string_view text = c["text"];
        const std::vector<int32_t> want = core_v0_19_ids(c["ids"]);
        const std::vector<int32_t> got = tok.encode(text);
        EXPECT_EQ(got, want) << "text '" << text.substr(0, 200) << "'";
        EXPECT_EQ(tok.decode(want), std::string_view(c["decoded"]))
            << "text '" << text.substr(0, 200) << "'";
        if ((got != want || tok.decode(want) != std::string_view(c["decoded"])) && ++failures > 8)
            break;
    }
    for (auto d : config["decodes"].get_array())
        EXPECT_EQ(tok.decode(core_v0_19_ids(d["ids"])), std::string_view(d["text"]));
    simdjson::dom::array corpora;
    if (config["corpora"].get(corpora) == simdjson::SUCCESS)
        expect_corpus_digests(
            corpora, [&](const std::string& doc) { return tok.encode(doc); },
            "Megatron core_v0.19's class");
}

}  // namespace mt::test
