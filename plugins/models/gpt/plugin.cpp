#include "mt/plugin.h"
#include "register.h"

MT_PLUGIN("model", "gpt", "0.1.0", mt::plugins::gpt::register_gpt)
