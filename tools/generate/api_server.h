// The REST server of megatron-generate: Megatron's `PUT /api` on cpp-httplib. Requests are
// validated on the connection's thread and then run one at a time (Megatron's LOCK), so
// concurrent clients queue; a bad request gets HTTP 400 with Megatron's message and the server
// carries on.
#pragma once

#include <string>

#include "text_generation.h"

namespace mt::generate_tool {

// Serves until the process is stopped (SIGINT / SIGTERM end it cleanly). port 0 picks a free
// port; the chosen one is printed ("Serving on http://HOST:PORT").
void serve_api(TextGenerator& generator, const std::string& host, int port);

}  // namespace mt::generate_tool
