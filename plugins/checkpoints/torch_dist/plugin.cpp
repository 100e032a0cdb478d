// Plugin entry of libmt_checkpoint_torch_dist.so: Megatron-core's `torch_dist` format.
#include "mt/plugin.h"
#include "register.h"

MT_PLUGIN("checkpoint", "torch_dist", "0.1.0", mt::plugins::torch_dist::register_torch_dist)
