// The plugin entry of libmt_tokenizer_tiktoken.so: registers TikTokenizer.
#include "mt/plugin.h"
#include "register.h"

MT_PLUGIN("tokenizer", "tiktoken", "0.1.0", mt::plugins::tiktoken::register_tiktoken)
