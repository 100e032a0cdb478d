// Plugin entry of libmt_tokenizer_sentencepiece.so: Megatron's SentencePiece tokenizers.
#include "mt/plugin.h"
#include "register.h"

MT_PLUGIN("tokenizer", "sentencepiece", "0.1.0", mt::plugins::sentencepiece::register_sentencepiece)
