// Plugin entry of libmt_tokenizer_byte.so: kind and name must match the file name that
// mt_add_plugin(tokenizer byte ...) gives it.
#include <mt/plugin.h>

#include "byte_tokenizer.h"

MT_PLUGIN("tokenizer", "byte", "1.0.0", mt_example::register_byte_tokenizer)
