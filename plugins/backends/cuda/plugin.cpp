#include "mt/plugin.h"
#include "register.h"

MT_PLUGIN("backend", "cuda", "0.1.0", mt::plugins::cuda::register_cuda)
