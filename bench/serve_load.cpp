// Load on an OpenAI-style completions server (megatron-generate's POST /v1/completions, or a
// peer's such as llama.cpp's llama-server): C clients, each sending R requests one after another
// on its own keep-alive connection, every request a prompt of P random token ids and max_tokens T
// at temperature 0. Prints the served throughput (generated tokens, from each response's
// usage.completion_tokens, over the wall time from the first request to the last answer) and
// the request latencies' p50 and p99.
//   mt_bench_serve_load --port 5000 [--host 127.0.0.1] [--clients 4] [--requests 4]
//                       [--prompt 128] [--max-tokens 64] [--vocab 50257] [--path /v1/completions]
#include <simdjson.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using Clock = std::chrono::steady_clock;

struct Options {
    std::string host = "127.0.0.1", path = "/v1/completions";
    int port = 0, clients = 4, requests = 4, prompt = 128, max_tokens = 64, vocab = 50257;
};

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i], value = argv[i + 1];
        if (flag == "--host") o.host = value;
        else if (flag == "--path") o.path = value;
        else if (flag == "--port") o.port = std::atoi(value.c_str());
        else if (flag == "--clients") o.clients = std::atoi(value.c_str());
        else if (flag == "--requests") o.requests = std::atoi(value.c_str());
        else if (flag == "--prompt") o.prompt = std::atoi(value.c_str());
        else if (flag == "--max-tokens") o.max_tokens = std::atoi(value.c_str());
        else if (flag == "--vocab") o.vocab = std::atoi(value.c_str());
        else {
            std::fprintf(stderr, "mt_bench_serve_load: unknown flag %s\n", flag.c_str());
            std::exit(2);
        }
    }
    if (o.port <= 0 || o.clients <= 0 || o.requests <= 0 || o.prompt <= 0 || o.max_tokens <= 0) {
        std::fprintf(stderr, "mt_bench_serve_load: --port and positive sizes are needed\n");
        std::exit(2);
    }
    if (o.clients >= 1000 || o.requests >= 1000) {  // each prompt's seed (body) stays its own
        std::fprintf(stderr, "mt_bench_serve_load: --clients and --requests must be below 1000\n");
        std::exit(2);
    }
    return o;
}

// A body of random ids, seeded per level (the number of clients), client and request: every run
// sends the same prompts, and no level repeats an earlier level's prompt (a server that keeps
// its slots' prompts, as llama-server does, would otherwise skip reading some of them).
std::string body(const Options& o, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> id(0, o.vocab - 1);
    std::string prompt;
    for (int i = 0; i < o.prompt; ++i) prompt += (i ? "," : "") + std::to_string(id(rng));
    return "{\"prompt\": [" + prompt + "], \"max_tokens\": " + std::to_string(o.max_tokens) +
           ", \"temperature\": 0}";
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    std::mutex mu;
    std::vector<double> latencies;
    long long generated = 0;
    int failures = 0;
    const Clock::time_point start = Clock::now();
    std::vector<std::thread> clients;
    for (int c = 0; c < o.clients; ++c)
        clients.emplace_back([&, c] {
            boost::asio::io_context io;
            boost::beast::tcp_stream stream(io);
            tcp::resolver resolver(io);
            boost::beast::error_code ec;
            stream.connect(resolver.resolve(o.host, std::to_string(o.port)), ec);
            if (ec) {
                std::lock_guard lock(mu);
                failures += o.requests;
                return;
            }
            boost::beast::flat_buffer buffer;
            simdjson::dom::parser parser;
            for (int r = 0; r < o.requests; ++r) {
                http::request<http::string_body> req(http::verb::post, o.path, 11);
                req.set(http::field::host, o.host);
                req.set(http::field::content_type, "application/json");
                req.keep_alive(true);
                req.body() = body(o, unsigned(o.clients * 1000000 + c * 1000 + r));
                req.prepare_payload();
                const Clock::time_point sent = Clock::now();
                http::response<http::string_body> res;
                http::write(stream, req, ec);
                if (!ec) http::read(stream, buffer, res, ec);
                const double seconds = std::chrono::duration<double>(Clock::now() - sent).count();
                int64_t tokens = 0;
                simdjson::dom::element doc;
                const bool ok = !ec && res.result_int() == 200 &&
                                !parser.parse(res.body()).get(doc) &&
                                !doc["usage"]["completion_tokens"].get(tokens);
                std::lock_guard lock(mu);
                if (!ok) {
                    ++failures;
                    if (failures == 1)
                        std::fprintf(stderr, "mt_bench_serve_load: a request failed: %s %s\n",
                                     ec ? ec.message().c_str() : "",
                                     res.body().substr(0, 300).c_str());
                    continue;
                }
                latencies.push_back(seconds);
                generated += tokens;
            }
        });
    for (auto& t : clients) t.join();
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();
    std::sort(latencies.begin(), latencies.end());
    const auto percentile = [&](double p) {
        if (latencies.empty()) return 0.0;
        return latencies[std::min(latencies.size() - 1, size_t(p * double(latencies.size())))];
    };
    std::printf("clients %d requests %zu failed %d generated %lld wall_s %.2f tokens_per_s %.2f "
                "p50_s %.3f p99_s %.3f\n",
                o.clients, latencies.size(), failures, generated, wall, double(generated) / wall,
                percentile(0.5), percentile(0.99));
    return failures ? 1 : 0;
}
