// Registers the `torch`, `llama_meta` and `deepspeed` (Megatron-DeepSpeed's, read only)
// checkpoint formats into a Registry; the plugin entry and the tests that link the _impl library
// both call it.
#pragma once

namespace mt {
class Registry;
}

namespace mt::plugins::torch_ckpt {

void register_torch(Registry& registry);

}  // namespace mt::plugins::torch_ckpt
