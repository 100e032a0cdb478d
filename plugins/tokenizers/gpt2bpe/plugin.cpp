// The plugin entry of libmt_tokenizer_gpt2bpe.so: registers GPT2BPETokenizer.
#include "mt/plugin.h"
#include "register.h"

MT_PLUGIN("tokenizer", "gpt2bpe", "0.1.0", mt::plugins::gpt2bpe::register_gpt2bpe)
