// Registers the `torch_dist` checkpoint format into a Registry; the plugin entry and the tests
// that link the _impl library both call it.
#pragma once

namespace mt {
class Registry;
}

namespace mt::plugins::torch_dist {

void register_torch_dist(Registry& registry);

}  // namespace mt::plugins::torch_dist
