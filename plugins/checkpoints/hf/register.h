// Registers the `hf` checkpoint format into a Registry; the plugin entry and the tests that
// link the _impl library both call it.
#pragma once

namespace mt {
class Registry;
}

namespace mt::plugins::hf {

void register_hf(Registry& registry);

}  // namespace mt::plugins::hf
