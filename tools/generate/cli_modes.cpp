// The command-line modes: each prompt becomes one TextRequest sized to fit the model.
#include "cli_modes.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>

#include <simdjson.h>

#include "mt/data/dataset_description.h"
#include "mt/error.h"
#include "mt/io/atomic_file.h"
#include "mt/io/json_writer.h"
#include "mt/progress.h"

namespace mt::generate_tool {

namespace {

// One prompt's request: --out-seq-length new tokens, fewer when the prompt leaves less room.
TextRequest request_for(const TextGenerator& g, const CliSettings& s, const std::string& prompt,
                        bool add_bos, std::optional<int64_t> tokens_to_generate = std::nullopt) {
    TextRequest r = s.base;
    r.prompts = {prompt};
    r.add_bos = add_bos;
    r.tokens_to_generate = tokens_to_generate.value_or(s.out_seq_length);
    if (s.max_positions > 0) {
        const int64_t prompt_tokens =
            (prompt.empty() ? 0 : int64_t(g.tokenizer().encode(prompt).size())) + (add_bos ? 1 : 0);
        // A prompt that fills the positions can still be scored (--out-seq-length 0).
        const int64_t room = s.max_positions - prompt_tokens;
        MT_CHECK(room > 0 || (room == 0 && r.tokens_to_generate == 0), "the prompt has ",
                 prompt_tokens, " tokens: no room left in the model's ", s.max_positions,
                 " positions");
        r.tokens_to_generate = std::min(r.tokens_to_generate, room);
    }
    return r;
}

// Calls `each(record, line_number, line)` for the lines of the JSON-lines file `path` (the
// record is an error where a line is not JSON) until it returns false.
void for_each_json_line(const std::string& path,
                        const std::function<bool(simdjson::simdjson_result<simdjson::dom::element>,
                                                 int64_t, const std::string&)>& each) {
    std::ifstream in(path);
    MT_CHECK(in.good(), path, ": cannot open");
    simdjson::dom::parser parser;
    int64_t line_number = 0;
    for (std::string line; std::getline(in, line);)
        if (!each(parser.parse(line), ++line_number, line)) return;
}

// The generated text after the prompt (Megatron: detokenize(all)[len(prompt):]).
std::string continuation(const TextResult& result, const std::string& prompt) {
    const std::string& text = result.text.at(0);
    return text.size() >= prompt.size() ? text.substr(prompt.size()) : text;
}

}  // namespace

std::vector<CliPrompt> read_prompt_file(const std::string& path, std::optional<int64_t> truncate,
                                        bool tokens_from_file) {
    std::vector<CliPrompt> prompts;
    for_each_json_line(path, [&](auto parsed, int64_t line_number, const std::string& line) {
        if (truncate && int64_t(prompts.size()) >= *truncate) return false;
        simdjson::dom::element record;
        std::string_view text;
        MT_CHECK(!parsed.get(record) && !record["text"].get(text), path, ":", line_number,
                 ": not a JSON line with a \"text\" string: ", line.substr(0, 200));
        CliPrompt prompt{std::string(text), std::nullopt};
        if (tokens_from_file) {
            int64_t tokens = 0;
            MT_CHECK(
                !record["chatgpt_output_token_length"].get(tokens) && tokens >= 0, path, ":",
                line_number,
                ": --num-tokens-from-file needs a \"chatgpt_output_token_length\" integer >= 0");
            prompt.tokens_to_generate = tokens;
        }
        prompts.push_back(std::move(prompt));
        return true;
    });
    MT_CHECK(!prompts.empty(), path, ": no prompts");
    return prompts;
}

void run_prompts(TextGenerator& g, const CliSettings& s, const std::vector<CliPrompt>& prompts,
                 std::ostream& out, const std::string& output_path) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<TextResult> results;
    for (const auto& prompt : prompts) {
        const TextResult r =
            g.run(request_for(g, s, prompt.text, prompt.text.empty(), prompt.tokens_to_generate));
        out << r.text[0] << "\n";
        if (s.base.logprobs) {
            // The log-probs follow the tokens they score: the prompt's after its first token
            // (none with prompt_logprobs false), then the generated ones.
            const std::vector<float>& lps = r.logprobs[0];
            const size_t first = r.tokens[0].size() - lps.size();
            for (size_t i = 0; i < lps.size(); ++i)
                out << "  " << io::json_quote(r.segments[0][first + i]) << " "
                    << data::python_float_repr(lps[i]) << "\n";
        }
        out.flush();
        if (!output_path.empty()) results.push_back(r);
    }
    if (output_path.empty()) return;
    const double latency =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    io::JsonWriter w;
    w.begin_object();
    for (size_t i = 0; i < results.size(); ++i) {
        if (i % size_t(s.output_every_n) != 0 && i + 1 != results.size()) continue;
        const TextResult& r = results[i];
        const size_t prompt_length = r.prompt_lengths[0];
        const std::vector<int32_t> generated(r.tokens[0].begin() + int64_t(prompt_length),
                                             r.tokens[0].end());
        w.key(std::to_string(i)).begin_object();
        w.key("input_prompt").value(prompts[i].text);
        w.key("generated_text").value(g.tokenizer().decode(generated));
        w.key("generated_tokens").begin_array();
        for (int32_t id : generated) w.value(int64_t(id));
        w.end_array().key("latency").value(latency);
        if (s.base.top_n_logprobs > 0) {
            // A dict per generated token, {token text: log-prob} most likely first; ids whose
            // texts are equal share one key, holding the later one's value (Python's dict).
            w.key("generated_top_n_logprobs").begin_array();
            const auto& tops = r.top_logprobs[0];  // tops[j] scores token (first_top + j)
            const size_t first_top = r.tokens[0].size() - tops.size();
            for (size_t token = prompt_length; token < r.tokens[0].size(); ++token) {
                std::vector<std::pair<std::string, double>> entries;
                for (const infer::TopLogProb& top : tops[token - first_top]) {
                    std::string key = g.tokenizer().decode(std::span(&top.id, 1));
                    auto same = std::find_if(entries.begin(), entries.end(),
                                             [&](const auto& e) { return e.first == key; });
                    if (same != entries.end())
                        same->second = top.log_prob;
                    else
                        entries.emplace_back(std::move(key), top.log_prob);
                }
                w.begin_object();
                for (const auto& [key, value] : entries) w.key(key).value(value);
                w.end_object();
            }
            w.end_array();
        }
        if (s.base.logprobs) {
            // Those of the prompt's tokens after its first, then the generated ones'; Megatron's
            // dynamic example also writes the two apart.
            const std::vector<float>& lps = r.logprobs[0];
            const size_t first = r.tokens[0].size() - lps.size();
            const size_t prompt = prompt_length > first ? prompt_length - first : 0;
            auto values = [&](const char* key, size_t begin, size_t end) {
                w.key(key).begin_array();
                for (size_t k = begin; k < end; ++k) w.value(double(lps[k]));
                w.end_array();
            };
            values("logprobs", 0, lps.size());
            values("prompt_logprobs", 0, prompt);
            values("generated_logprobs", prompt, lps.size());
        }
        w.end_object();
    }
    io::AtomicFile file(output_path);
    file.stream() << w.end_object().str();
    file.commit();
}

void run_sample_file(TextGenerator& g, const CliSettings& s, const std::string& input,
                     const std::string& output) {
    std::ifstream in(input);
    MT_CHECK(in.good(), input, ": cannot open");
    std::vector<std::string> prompts;
    for (std::string line; std::getline(in, line);) prompts.push_back(line);
    io::AtomicFile file(output);
    Progress progress("generating", int64_t(prompts.size()), "prompts");
    for (size_t i = 0; i < prompts.size(); ++i) {
        const std::string& prompt = prompts[i];
        MT_CHECK(!prompt.empty(), input, ":", i + 1, ": empty prompt");
        const TextResult r = g.run(request_for(g, s, prompt, false));
        file.stream() << "\nContext:" << prompt << "\n\nMegatron-LM:" << continuation(r, prompt)
                      << "\n";
        progress.add(1);
    }
    progress.finish();
    file.commit();
    std::printf("wrote %zu generations to %s\n", prompts.size(), output.c_str());
}

void run_prompt_records(TextGenerator& g, const CliSettings& s, const std::string& input,
                        const std::string& output, int64_t count) {
    std::vector<std::string> prompts;
    for_each_json_line(input, [&](auto parsed, int64_t line_number, const std::string& line) {
        std::string_view text;
        simdjson::dom::element record;
        const bool ok = !parsed.get(record) && !record["prompt"]["text"].get(text);
        MT_CHECK(ok, input, ":", line_number,
                 ": not a JSON line with a \"prompt\": {\"text\": ...} (as RealToxicityPrompts "
                 "holds them): ",
                 line.substr(0, 200));
        prompts.emplace_back(text);
        return true;
    });
    // generate_samples_gpt.py samples at temperature 1.0 whatever --temperature says, with no
    // bos, and pads the input with "EMPTY TEXT" when it holds fewer than --num-samples prompts.
    CliSettings fixed = s;
    fixed.base.sampling.temperature = 1.0;
    io::AtomicFile file(output);
    Progress progress("generating", count, "samples");
    for (int64_t id = 0; id < count; ++id) {
        const std::string prompt =
            id < int64_t(prompts.size()) ? prompts[size_t(id)] : std::string("EMPTY TEXT");
        const TextResult r = g.run(request_for(g, fixed, prompt, false));
        io::JsonWriter w;
        w.begin_object().key("text").value(continuation(r, prompt));
        w.key("all_text").value(r.text[0]).key("prompt").value(prompt).key("id").value(id);
        file.stream() << w.end_object().str() << "\n";
        progress.add(1);
    }
    progress.finish();
    file.commit();
    std::printf("wrote %lld samples to %s\n", static_cast<long long>(count), output.c_str());
}

void run_unconditional(TextGenerator& g, const CliSettings& s, int64_t count,
                       const std::string& genfile) {
    io::AtomicFile file(genfile);
    Progress progress("sampling", count, "samples");
    const int32_t eod = g.tokenizer().eod();
    for (int64_t i = 0; i < count; ++i) {
        const TextResult r = g.run(request_for(g, s, "", true));
        // The sample without its EOD prompt; finished when it ended on an EOD.
        std::vector<int32_t> tokens(r.tokens[0].begin() + int64_t(r.prompt_lengths[0]),
                                    r.tokens[0].end());
        const bool finished = !tokens.empty() && tokens.back() == eod;
        io::JsonWriter w;
        w.begin_object().key("text").value(g.tokenizer().decode(tokens));
        w.key("length").value(int64_t(tokens.size())).key("finished").value(finished);
        file.stream() << w.end_object().str() << "\n";
        progress.add(1);
    }
    progress.finish();
    file.commit();
    std::printf("wrote %lld samples to %s\n", static_cast<long long>(count), genfile.c_str());
}

void run_interactive(TextGenerator& g, const CliSettings& s, std::istream& in, std::ostream& out) {
    for (;;) {
        out << "\nContext prompt (stop to exit) >>> " << std::flush;
        std::string prompt;
        if (!std::getline(in, prompt) || prompt == "stop") break;
        if (prompt.empty()) {
            out << "Prompt should not be empty!\n";
            continue;
        }
        try {
            const TextResult r = g.run(request_for(g, s, prompt, false));
            out << "\nMegatron-LM: " << continuation(r, prompt) << "\n";
        } catch (const mt::Error& e) {
            out << "error: " << e.what() << "\n";
        }
    }
}

}  // namespace mt::generate_tool
