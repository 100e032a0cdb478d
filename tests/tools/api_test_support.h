// Helpers of the REST server tests: megatron-generate serving as a child process on a free port,
// and a small HTTP client (Boost.Beast) with a deadline on every exchange.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>

#include "test_support.h"

namespace mt::test {

// megatron-generate with no mode flag (the REST server, Megatron's default) on --port 0, its
// port read from "Serving on http://127.0.0.1:PORT". `env` ("NAME=value ...") is set for it only;
// `launcher` (an mpiexec command line) starts it as a job of several ranks.
class ApiServerProcess {
  public:
    explicit ApiServerProcess(const std::string& model_flags, const std::string& env = "",
                              const std::string& launcher = "") {
        int out[2];
        if (pipe(out) != 0) return;
        pid_ = fork();
        if (pid_ == 0) {
            dup2(out[1], STDOUT_FILENO);
            close(out[0]);
            const std::string cmd = "exec env " + env + " " + launcher + " " +
                                    shell_quote(tool_path("megatron-generate")) + " " +
                                    model_flags + " --port 0 --host 127.0.0.1";
            execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
            _exit(127);
        }
        close(out[1]);
        FILE* f = fdopen(out[0], "r");
        char line[512];
        while (port_ == 0 && std::fgets(line, sizeof line, f)) {
            const std::string s = line;
            const size_t at = s.find("Serving on http://127.0.0.1:");
            if (at != std::string::npos) port_ = std::stoi(s.substr(at + 28));
        }
        // Keep draining the log so the server never blocks on a full pipe.
        drain_ = std::thread([f] {
            char buf[4096];
            while (std::fgets(buf, sizeof buf, f)) {
            }
            std::fclose(f);
        });
    }
    ~ApiServerProcess() { stop(); }
    ApiServerProcess(const ApiServerProcess&) = delete;
    ApiServerProcess& operator=(const ApiServerProcess&) = delete;

    int port() const { return port_; }
    bool alive() {
        if (pid_ > 0 && waitpid(pid_, &status_, WNOHANG) == pid_) pid_ = -1;  // it has exited
        return pid_ > 0;
    }

    // SIGTERM, then the wait status (as waitpid gives it).
    int stop() {
        if (pid_ > 0) {
            kill(pid_, SIGTERM);
            waitpid(pid_, &status_, 0);
            pid_ = -1;
        }
        if (drain_.joinable()) drain_.join();
        return status_;
    }

  private:
    pid_t pid_ = -1;
    int port_ = 0;
    int status_ = -1;
    std::thread drain_;
};

struct HttpReply {
    int status = 0;
    std::string body;
    bool keep_alive = false;
};

// One connection to 127.0.0.1:port; every exchange must finish within `timeout`.
class HttpClient {
  public:
    explicit HttpClient(int port, std::chrono::seconds timeout = std::chrono::seconds(60))
        : stream_(io_), timeout_(timeout) {
        boost::system::error_code ec;
        stream_.expires_after(timeout_);
        stream_.connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"),
                                                       uint16_t(port)),
                        ec);
        connected_ = !ec;
    }

    // The answer, or nullopt when the connection fails, closes or times out.
    std::optional<HttpReply> request(boost::beast::http::verb method, const std::string& target,
                                     const std::string& body, bool keep_alive = false) {
        namespace http = boost::beast::http;
        if (!connected_) return std::nullopt;
        http::request<http::string_body> req(method, target, 11);
        req.set(http::field::host, "127.0.0.1");
        req.set(http::field::content_type, "application/json");
        req.keep_alive(keep_alive);
        req.body() = body;
        req.prepare_payload();
        boost::system::error_code ec;
        stream_.expires_after(timeout_);
        http::write(stream_.socket(), req, ec);
        if (ec) return std::nullopt;
        // tcp_stream's deadline covers asynchronous operations only: read through the
        // io_context so that a server that never answers fails the exchange in time.
        http::response<http::string_body> res;
        bool done = false;
        http::async_read(stream_, buffer_, res, [&](boost::system::error_code e, size_t) {
            ec = e;
            done = true;
        });
        io_.restart();
        io_.run();
        if (!done || ec) return std::nullopt;
        return HttpReply{int(res.result_int()), res.body(), res.keep_alive()};
    }

    std::optional<HttpReply> put(const std::string& body, bool keep_alive = false) {
        return request(boost::beast::http::verb::put, "/api", body, keep_alive);
    }

  private:
    boost::asio::io_context io_;
    boost::beast::tcp_stream stream_;
    boost::beast::flat_buffer buffer_;
    std::chrono::seconds timeout_;
    bool connected_ = false;
};

// PUT /api on a fresh connection (closed after the answer).
inline std::optional<HttpReply> put_api(int port, const std::string& body,
                                        std::chrono::seconds timeout = std::chrono::seconds(60)) {
    return HttpClient(port, timeout).put(body);
}

}  // namespace mt::test
