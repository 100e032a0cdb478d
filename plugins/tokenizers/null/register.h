// Registers Megatron's NullTokenizer into a Registry; the plugin entry and the tests that link
// the _impl library both call it.
#pragma once

namespace mt {
class Registry;
}

namespace mt::plugins::null {

void register_null(Registry& registry);

}  // namespace mt::plugins::null
