// Plugin entry of libmt_checkpoint_torch.so: Megatron's `torch` checkpoint format and Meta's
// Llama consolidated.NN.pth (`llama_meta`) and Megatron-DeepSpeed's DeepSpeed checkpoints
// (`deepspeed`, read only).
#include "mt/plugin.h"
#include "register.h"

MT_PLUGIN("checkpoint", "torch", "0.1.0", mt::plugins::torch_ckpt::register_torch)
