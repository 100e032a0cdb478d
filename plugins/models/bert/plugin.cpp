#include "mt/plugin.h"
#include "register.h"

MT_PLUGIN("model", "bert", "0.1.0", mt::plugins::bert::register_bert)
