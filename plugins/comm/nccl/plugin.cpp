// Plugin entry of libmt_comm_nccl.so: the "nccl" communicator of GPU ranks.
#include "mt/plugin.h"
#include "register.h"

MT_PLUGIN("comm", "nccl", "0.1.0", mt::plugins::nccl::register_nccl)
