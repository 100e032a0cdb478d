// Registers the BERT WordPiece tokenizers (BertWordPieceLowerCase, BertWordPieceCase) into a
// Registry; the plugin entry and the tests that link the _impl library both call it.
#pragma once

namespace mt {
class Registry;
}

namespace mt::plugins::wordpiece {

void register_wordpiece(Registry& registry);

}  // namespace mt::plugins::wordpiece
