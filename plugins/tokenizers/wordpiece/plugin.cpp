// Plugin entry of libmt_tokenizer_wordpiece.so: BertWordPieceLowerCase and BertWordPieceCase.
#include "mt/plugin.h"
#include "register.h"

MT_PLUGIN("tokenizer", "wordpiece", "0.1.0", mt::plugins::wordpiece::register_wordpiece)
