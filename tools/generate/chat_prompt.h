// A chat request's prompt as token ids, as Megatron core_v0.19's chat endpoint builds it: the
// messages rendered by the model's Jinja chat template the way transformers' apply_chat_template
// renders them (its variables: messages without their null fields, tools, documents,
// add_generation_prompt, the special tokens' texts, chat_template_kwargs), tokenized, leading BOS
// ids dropped and one put back with add_BOS. Without a template the messages' contents joined by
// newlines are the prompt, as Megatron falls back to.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chat_request.h"
#include "mt/text/jinja.h"
#include "mt/tokenizer.h"

namespace mt::generate_tool {

class ChatPrompt {
  public:
    // `given` (--chat-template's text, or --tokenizer-metadata's: `given_where` names it) with
    // the special tokens of the first of `folders` that has a tokenizer_config.json; without it,
    // the first of `folders` that has a chat template (chat_template.jinja, or
    // tokenizer_config.json's chat_template: a string, or the one named "default" of a list)
    // with that folder's special tokens; none: Megatron's fallback. mt::Error naming the file
    // (or the flag) for a template that does not parse.
    static ChatPrompt find(const std::vector<std::filesystem::path>& folders,
                           const std::optional<std::string>& given = std::nullopt,
                           const std::string& given_where = "--chat-template");

    // The server's: --tokenizer-metadata's chat template, else `given` (--chat-template;
    // core_v0.19's order), else find()'s over the tokenizer's folder (a Hugging Face tokenizer's,
    // or a tokenizer.model's) and the --load folder.
    static ChatPrompt of_tokenizer(const TokenizerOptions& tokenizer, const std::string& load,
                                   const std::optional<std::string>& given);

    // What the server's start line says: the template's file, or the fallback.
    const std::string& source() const { return source_; }

    // The text the template makes of the request (mt::Error with the template's message when it
    // raises or uses what we cannot render).
    std::string render(const ChatRequest& request) const;
    // render(), tokenized with Megatron's BOS handling.
    std::vector<int32_t> prompt_ids(const ChatRequest& request, const Tokenizer& tokenizer) const;

  private:
    void use(const std::string& source, const std::string& where);  // parses it

    std::shared_ptr<const text::jinja::Template> template_;            // null: the fallback
    std::vector<std::pair<std::string, std::string>> special_tokens_;  // ("bos_token", "<s>")
    std::string source_ = "no chat template: messages joined by newlines";
};

}  // namespace mt::generate_tool
