// Registers Megatron's SentencePieceTokenizer, GPTSentencePieceTokenizer and Llama2Tokenizer
// into a Registry; the plugin entry and the tests that link the _impl library both call it.
#pragma once

namespace mt {
class Registry;
}

namespace mt::plugins::sentencepiece {

void register_sentencepiece(Registry& registry);

}  // namespace mt::plugins::sentencepiece
