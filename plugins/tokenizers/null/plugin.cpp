// Plugin entry of libmt_tokenizer_null.so: Megatron's NullTokenizer.
#include "mt/plugin.h"
#include "register.h"

MT_PLUGIN("tokenizer", "null", "0.1.0", mt::plugins::null::register_null)
