// The plugin entry of libmt_tokenizer_hf_tokenizer.so: registers HuggingFaceTokenizer.
#include "mt/plugin.h"
#include "register.h"

MT_PLUGIN("tokenizer", "hf_tokenizer", "0.1.0", mt::plugins::hf_tokenizer::register_hf_tokenizer)
