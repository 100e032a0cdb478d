// Plugin entry of libmt_checkpoint_hf.so: Hugging Face model folders (safetensors).
#include "mt/plugin.h"
#include "register.h"

MT_PLUGIN("checkpoint", "hf", "0.1.0", mt::plugins::hf::register_hf)
