// serve_api: cpp-httplib's thread pool accepts connections; one mutex serialises generation.
#include "api_server.h"

#include <httplib.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "api_request.h"
#include "mt/error.h"
#include "mt/io/json_writer.h"

namespace mt::generate_tool {

namespace {

httplib::Server* g_server = nullptr;

void on_signal(int) {
    if (g_server) g_server->stop();
}

// Megatron's server answers with the message as a JSON string.
void reply(httplib::Response& res, int status, const std::string& json) {
    res.status = status;
    res.set_content(json + "\n", "application/json");
}

void log_request(const httplib::Request& req) {
    const std::time_t now = std::time(nullptr);
    char when[64];
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
    std::printf("request IP: %s\n%s\nstart time:  %s\n", req.remote_addr.c_str(), req.body.c_str(),
                when);
    std::fflush(stdout);
}

}  // namespace

void serve_api(TextGenerator& generator, const std::string& host, int port) {
    httplib::Server server;
    std::mutex lock;
    server.set_payload_max_length(16u << 20);
    server.Put("/api", [&](const httplib::Request& req, httplib::Response& res) {
        auto parsed = parse_api_request(req.body);
        if (auto* message = std::get_if<std::string>(&parsed)) {
            reply(res, 400, io::json_quote(*message));
            return;
        }
        const ApiRequest& api = std::get<ApiRequest>(parsed);
        std::lock_guard<std::mutex> guard(lock);
        if (!api.no_log) log_request(req);
        try {
            const TextResult result = generator.run(api.request);
            reply(res, 200, api_response(result, api.request.logprobs));
        } catch (const mt::Error& e) {  // a request this model cannot run (too long, ...)
            reply(res, 400, io::json_quote(e.what()));
        } catch (const std::exception& e) {
            reply(res, 500, io::json_quote(std::string("internal error: ") + e.what()));
        }
    });
    g_server = &server;
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    if (port == 0) {
        port = server.bind_to_any_port(host);
        MT_CHECK(port > 0, "cannot listen on ", host);
    } else {
        MT_CHECK(server.bind_to_port(host, port), "cannot listen on ", host, ":", port,
                 " (in use?)");
    }
    std::printf("Serving on http://%s:%d (PUT /api)\n", host.c_str(), port);
    std::fflush(stdout);
    server.listen_after_bind();
    g_server = nullptr;
}

}  // namespace mt::generate_tool
