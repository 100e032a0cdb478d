// BertWordPieceLowerCase / BertWordPieceCase as core_v0.19 builds them (transformers'
// BertTokenizer behind Megatron's MegatronHFTokenizer) against that class's answers: [CLS] ...
// [SEP], special tokens found in the text, added tokens, transformers' clean-up and word limit,
// its decoder, the corpora.
#include <gtest/gtest.h>

#include "core_bert_wordpiece_tokenizer.h"
#include "core_v0_19_tokenizers.h"

namespace mt::plugins::wordpiece {
namespace {

TEST(CoreV019BertWordPiece, EveryConfigurationAsMegatron) {
    if (!mt::test::test_data("bert/bert-large-uncased-vocab.txt"))
        GTEST_SKIP() << "MEGATRON_TEST_DATA not set: skipping core_v0.19's BERT ids";
    mt::test::CoreV019Reference ref;
    size_t n = 0;
    for (const bool lower_case : {true, false})
        n += mt::test::for_each_core_v0_19_config(
            ref, lower_case ? "BertWordPieceLowerCase" : "BertWordPieceCase",
            [lower_case](simdjson::dom::element config, const TokenizerOptions& o) {
                CoreBertWordPieceTokenizer tok(o, lower_case);
                mt::test::expect_core_v0_19_config(tok, config, o);
            });
    EXPECT_EQ(n, 5u);
}

}  // namespace
}  // namespace mt::plugins::wordpiece
