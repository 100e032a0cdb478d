// TextGenerator: Megatron's tokenize_prompts / detokenize_generations around infer::generate.
#include "text_generation.h"

#include <algorithm>

#include "mt/error.h"

namespace mt::generate_tool {

namespace {

// tokenize(text), or nothing for a tokenizer that cannot read it (NullTokenizer reads only
// numbers): the rules that need the id then never fire.
std::vector<int32_t> ids_of(const Tokenizer& t, const char* text) {
    try {
        return t.encode(text);
    } catch (const mt::Error&) {
        return {};
    }
}

// The first id of tokenize(text), as Megatron's rules pick them ("\n", ":").
std::optional<int32_t> first_id(const Tokenizer& t, const char* text) {
    std::vector<int32_t> ids = ids_of(t, text);
    if (ids.empty()) return std::nullopt;
    return ids.front();
}

// "\n\n" as one token (GPT-2: 628), the double end-of-line stop_on_double_eol looks for.
std::optional<int32_t> single_id(const Tokenizer& t, const char* text) {
    std::vector<int32_t> ids = ids_of(t, text);
    if (ids.size() != 1) return std::nullopt;
    return ids.front();
}

int32_t eod_of(const Tokenizer& t) {
    const SpecialIds& s = t.special_ids();
    MT_CHECK(s.eod || s.eos, "generation needs an end-of-document token; tokenizer ", t.name(),
             " has none");
    return s.eod ? *s.eod : *s.eos;
}

}  // namespace

TextGenerator::TextGenerator(Model& model, const Tokenizer& tokenizer, uint64_t seed)
    : model_(model), tokenizer_(tokenizer), rng_(seed), seed_(seed) {
    ids_.eod = eod_of(tokenizer);
    ids_.vocab_size = tokenizer.vocab_size();
    ids_.newline = first_id(tokenizer, "\n");
    ids_.double_newline = single_id(tokenizer, "\n\n");
    ids_.colon = first_id(tokenizer, ":");
    if (model.has_encoder()) {
        const SpecialIds& s = tokenizer.special_ids();
        MT_CHECK(s.bos, "an encoder-decoder model's decoder starts from [BOS]; tokenizer ",
                 tokenizer.name(), " has none");
        decoder_start_ = *s.bos;
        sentinels_ = sentinel_ids(tokenizer);
    }
}

TextResult TextGenerator::run(const TextRequest& r) {
    infer::GenerationRequest g;
    for (const auto& prompt : r.prompts) {
        std::vector<int32_t> ids;
        if (model_.has_encoder()) {
            // tokenize_encoder_prompt: the text between "<mask>"s, a sentinel for each.
            size_t begin = 0, masks = 0;
            for (size_t at; (at = prompt.find("<mask>", begin)) != std::string::npos;
                 begin = at + 6) {
                tokenizer_.encode_append(prompt.substr(begin, at - begin), ids);
                MT_CHECK(masks < sentinels_.size(),
                         "the prompt has more <mask>s than the "
                         "tokenizer has sentinels (--vocab-extra-ids ",
                         sentinels_.size(), ")");
                ids.push_back(sentinels_[masks++]);
            }
            tokenizer_.encode_append(prompt.substr(begin), ids);
            g.encoder_prompts.push_back(std::move(ids));
            g.prompts.push_back({decoder_start_});
            continue;
        }
        if (r.add_bos) ids.push_back(ids_.eod);
        if (!prompt.empty()) tokenizer_.encode_append(prompt, ids);
        g.prompts.push_back(std::move(ids));
    }
    g.tokens_to_generate = r.tokens_to_generate;
    g.sampling = r.sampling;
    g.top_p_decay = r.top_p_decay;
    g.top_p_bound = r.top_p_bound;
    g.return_log_probs = r.logprobs || r.top_n_logprobs > 0;
    g.prompt_log_probs = r.prompt_logprobs;
    g.top_n_log_probs = r.top_n_logprobs;
    g.termination_id = r.termination_id;
    g.stop_on_eol = r.stop_on_eol;
    g.stop_on_double_eol = r.stop_on_double_eol;
    g.prevent_newline_after_colon = r.prevent_newline_after_colon;
    const std::vector<std::vector<int32_t>> stop_words = stop_word_ids(r);
    std::vector<int32_t> generated;
    size_t stop_length = 0;  // the stop word's ids that ended the generation
    if (!stop_words.empty())
        g.on_step = [&](std::span<const int32_t> step) {
            generated.push_back(step[0]);
            for (const auto& word : stop_words)
                if (generated.size() >= word.size() &&
                    std::equal(word.begin(), word.end(), generated.end() - int64_t(word.size()))) {
                    stop_length = word.size();
                    return false;
                }
            return true;
        };
    infer::GenerationResult out = run_ids(g, r.random_seed);
    if (stop_length > 0) {  // the stop word's tokens leave the result
        out.tokens[0].resize(out.tokens[0].size() - stop_length);
        if (!out.log_probs.empty()) out.log_probs[0].resize(out.tokens[0].size() - 1);
        if (!out.top_log_probs.empty()) out.top_log_probs[0].resize(out.tokens[0].size() - 1);
    }

    TextResult result;
    for (const auto& prompt : g.prompts) result.prompt_lengths.push_back(prompt.size());
    result.tokens = std::move(out.tokens);
    if (!r.prompt_logprobs)  // only the generated tokens' (generate() leaves the rest at 0)
        for (size_t b = 0; b < result.prompt_lengths.size(); ++b) {
            const auto prompt_part = int64_t(result.prompt_lengths[b]) - 1;
            if (!out.log_probs.empty())
                out.log_probs[b].erase(out.log_probs[b].begin(),
                                       out.log_probs[b].begin() + prompt_part);
            if (!out.top_log_probs.empty())
                out.top_log_probs[b].erase(out.top_log_probs[b].begin(),
                                           out.top_log_probs[b].begin() + prompt_part);
        }
    if (r.logprobs) result.logprobs = std::move(out.log_probs);
    result.top_logprobs = std::move(out.top_log_probs);
    for (const auto& row : result.tokens) {
        result.text.push_back(tokenizer_.decode(row));
        std::vector<std::string> segments;
        for (int32_t id : row) segments.push_back(tokenizer_.decode(std::span(&id, 1)));
        result.segments.push_back(std::move(segments));
    }
    return result;
}

std::vector<std::vector<int32_t>> TextGenerator::stop_word_ids(const TextRequest& r) const {
    if (r.stop_words.empty()) return {};
    MT_CHECK(r.prompts.size() == 1 && !model_.has_encoder(),
             "stop words are supported for one prompt of a decoder-only model at a time");
    std::vector<std::vector<int32_t>> out;
    for (const auto& word : r.stop_words) {
        std::vector<int32_t> ids = tokenizer_.encode(word);
        MT_CHECK(!ids.empty(), "stop word '", word.substr(0, 200), "' has no tokens");
        out.push_back(std::move(ids));
    }
    return out;
}

infer::GenerationResult TextGenerator::run_ids(const infer::GenerationRequest& request,
                                               std::optional<uint64_t> seed) {
    if (seed) rng_.reseed(*seed);
    return infer::generate(model_, request, ids_, rng_);
}

}  // namespace mt::generate_tool
