#include "mt/plugin.h"
#include "register.h"

MT_PLUGIN("model", "t5", "0.1.0", mt::plugins::t5::register_t5)
