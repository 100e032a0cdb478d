// megatron-generate's REST server against slow and greedy clients, on the tiny Hugging Face
// Llama of tests/fixtures/hf: 64 connections trickling their requests a byte at a time neither
// delay a normal request nor outstay the request deadline; connections beyond the bound are
// answered 503 at once and service resumes when they go; keep-alive, "Expect: 100-continue",
// oversized bodies, unknown paths and methods get HTTP's answers; SIGTERM ends it cleanly.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <netinet/in.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api_test_support.h"
#include "test_support.h"

namespace mt::test {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::string model_flags() {
    return "--load " + shell_quote(fixtures_dir() / "hf" / "llama") +
           " --tokenizer-type NullTokenizer --vocab-size 127";
}

const std::string kGood =
    R"({"prompts": ["5 17 99"], "tokens_to_generate": 2, "top_k": 1, "no_log": true})";

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

// A plain TCP connection to the server (-1 on failure).
int connect_raw(int port) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(uint16_t(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

bool send_all(int fd, const std::string& data) {
    size_t sent = 0;
    while (sent < data.size()) {
        const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) return false;
        sent += size_t(n);
    }
    return true;
}

// Whether the server has closed the connection (it sends nothing to a client it drops).
bool closed_by_peer(int fd) {
    char buf[256];
    const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0) return true;
    return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK;
}

// What the server sends until it closes the connection, `until` is found, or `timeout` passes.
std::string read_from(int fd, std::chrono::milliseconds timeout, const std::string& until = "") {
    std::string got;
    const auto end = Clock::now() + timeout;
    while (Clock::now() < end) {
        if (!until.empty() && got.find(until) != std::string::npos) break;
        pollfd p{fd, POLLIN, 0};
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
        if (poll(&p, 1, int(std::max<int64_t>(1, left.count()))) <= 0) continue;
        char buf[4096];
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        got.append(buf, size_t(n));
    }
    return got;
}

TEST(ApiServer, SlowClientsNeitherBlockRequestsNorOutstayTheDeadline) {
    ApiServerProcess server(model_flags(), "MT_API_REQUEST_TIMEOUT=3 MT_API_MAX_CONNECTIONS=100");
    ASSERT_GT(server.port(), 0);
    const std::string request =
        "PUT /api HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Content-Length: " +
        std::to_string(kGood.size()) + "\r\n\r\n" + kGood;
    struct Slow {
        int fd;
        Clock::time_point opened;
        std::optional<double> closed_after;  // seconds
        size_t sent = 0;
    };
    std::vector<Slow> slow;
    for (int i = 0; i < 64; ++i) {
        const int fd = connect_raw(server.port());
        ASSERT_GE(fd, 0);
        slow.push_back({fd, Clock::now(), std::nullopt, 0});
    }
    // Every 250 ms each slow client sends the next byte of its request: far faster than any
    // per-read timeout, far slower than the 3 s deadline for the whole request allows.
    const auto start = Clock::now();
    std::thread trickle([&] {
        while (seconds_since(start) < 15) {
            bool open = false;
            for (Slow& s : slow) {
                if (s.closed_after) continue;
                if (closed_by_peer(s.fd) ||
                    send(s.fd, &request[s.sent], 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1) {
                    s.closed_after = seconds_since(s.opened);
                    continue;
                }
                s.sent = std::min(s.sent + 1, request.size() - 1);  // never the last byte
                open = true;
            }
            if (!open) break;
            std::this_thread::sleep_for(250ms);
        }
    });

    std::this_thread::sleep_for(1s);  // all 64 accepted and trickling
    const auto asked = Clock::now();
    auto reply = put_api(server.port(), kGood, 20s);
    const double took = seconds_since(asked);
    trickle.join();

    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 200) << reply->body;
    EXPECT_EQ(reply->body.rfind(R"({"text": ["5 17 99 )", 0), 0u) << reply->body;
    EXPECT_LT(took, 5.0) << "a normal request waited behind the slow clients";
    for (const Slow& s : slow) {
        ASSERT_TRUE(s.closed_after) << "a slow client was never disconnected";
        EXPECT_GE(*s.closed_after, 2.5) << "disconnected before the deadline";
        EXPECT_LE(*s.closed_after, 6.0) << "disconnected long after the deadline";
        close(s.fd);
    }
    reply = put_api(server.port(), kGood, 20s);
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 200);
    EXPECT_TRUE(server.alive());
}

TEST(ApiServer, ConnectionsBeyondTheBoundAreAnswered503AndServiceResumes) {
    ApiServerProcess server(model_flags(), "MT_API_MAX_CONNECTIONS=4 MT_API_REQUEST_TIMEOUT=20");
    ASSERT_GT(server.port(), 0);
    std::vector<int> idle;
    for (int i = 0; i < 4; ++i) {
        idle.push_back(connect_raw(server.port()));
        ASSERT_GE(idle.back(), 0);
        ASSERT_TRUE(send_all(idle.back(), "PUT /api HTTP/1.1\r\n"));
    }
    std::this_thread::sleep_for(500ms);  // all four accepted

    const auto asked = Clock::now();
    auto busy = put_api(server.port(), kGood, 10s);
    ASSERT_TRUE(busy) << "the fifth connection got no answer";
    EXPECT_EQ(busy->status, 503);
    EXPECT_NE(busy->body.find("server busy"), std::string::npos) << busy->body;
    EXPECT_LT(seconds_since(asked), 2.0);

    for (int fd : idle) close(fd);
    std::this_thread::sleep_for(500ms);  // the server sees them go
    auto reply = put_api(server.port(), kGood, 20s);
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 200) << reply->body;
}

TEST(ApiServer, SpeaksHttpKeepAliveContinueLimitsAndRoutes) {
    ApiServerProcess server(model_flags());
    ASSERT_GT(server.port(), 0);

    // Two requests on one keep-alive connection.
    HttpClient client(server.port(), 20s);
    auto first = client.put(kGood, true);
    ASSERT_TRUE(first);
    EXPECT_EQ(first->status, 200);
    EXPECT_TRUE(first->keep_alive);
    auto second = client.put(kGood, true);
    ASSERT_TRUE(second) << "the keep-alive connection was not served again";
    EXPECT_EQ(second->status, 200);
    EXPECT_EQ(second->body, first->body);

    auto wrong_method =
        HttpClient(server.port(), 20s).request(boost::beast::http::verb::get, "/api", "");
    ASSERT_TRUE(wrong_method);
    EXPECT_EQ(wrong_method->status, 405);
    auto wrong_path =
        HttpClient(server.port(), 20s).request(boost::beast::http::verb::put, "/generate", kGood);
    ASSERT_TRUE(wrong_path);
    EXPECT_EQ(wrong_path->status, 404);
    auto malformed = HttpClient(server.port(), 20s).put(R"({"prompts": []})");
    ASSERT_TRUE(malformed);
    EXPECT_EQ(malformed->status, 400);
    EXPECT_EQ(malformed->body, "\"prompts is empty\"\n");

    // curl's way with larger bodies: the headers, "100 Continue", then the body.
    int fd = connect_raw(server.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_all(fd, "PUT /api HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " +
                                 std::to_string(kGood.size()) +
                                 "\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"));
    EXPECT_EQ(read_from(fd, 5s, "\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
    ASSERT_TRUE(send_all(fd, kGood));
    const std::string answer = read_from(fd, 20s);
    EXPECT_EQ(answer.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << answer;
    EXPECT_NE(answer.find(first->body), std::string::npos) << answer;
    close(fd);

    // A body over the 16 MiB limit is refused from its Content-Length, and the answer arrives
    // although the client is still sending.
    fd = connect_raw(server.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_all(
        fd, "PUT /api HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + std::to_string(17 << 20) +
                "\r\n\r\n" + std::string(64 << 10, ' ')));
    const std::string refused = read_from(fd, 5s);
    EXPECT_EQ(refused.rfind("HTTP/1.1 413 Payload Too Large\r\n", 0), 0u) << refused;
    close(fd);

    EXPECT_TRUE(server.alive());
    const int status = server.stop();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace mt::test
