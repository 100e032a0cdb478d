// serve_api: one I/O thread runs every connection asynchronously (Boost.Beast over asio), each
// with a deadline for its whole request, so a client trickling bytes costs a socket and a few
// KiB, never a thread; one worker thread runs the generations in arrival order (Megatron's LOCK).
#include "api_server.h"

// Asio's parts, not <boost/asio.hpp>: Boost 1.74's awaitable.hpp does not compile as C++20.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <memory>
#include <optional>
#include <string_view>

#include "api_routes.h"
#include "mt/error.h"
#include "mt/io/json_writer.h"

namespace mt::generate_tool {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

// How long a connection that is being closed may still send: its unread request is drained so
// that the answer (413, 503, ...) reaches the client instead of being lost to a TCP reset.
constexpr std::chrono::seconds kLinger{2};

struct ServerState {
    ApiRoutes routes;
    ApiServerLimits limits;
    asio::thread_pool* worker = nullptr;  // one thread: generations one at a time
    std::atomic<size_t> connections{0};   // admitted, open
    std::atomic<size_t> rejecting{0};     // being answered 503
};

bool is_parse_error(const error_code& ec) {
    static const auto& http_category = http::make_error_code(http::error::bad_method).category();
    return ec.category() == http_category && ec != http::error::end_of_stream &&
           ec != http::error::partial_message;
}

// One client connection: read a request (whole, before the deadline), answer it, and on
// keep-alive read the next. Lives as long as an operation of it is pending.
class Connection : public std::enable_shared_from_this<Connection> {
  public:
    Connection(tcp::socket socket, ServerState& state, bool admitted)
        : stream_(std::move(socket)), state_(state), admitted_(admitted) {
        ++(admitted_ ? state_.connections : state_.rejecting);
        error_code ec;
        const auto remote = stream_.socket().remote_endpoint(ec);
        if (!ec) remote_ = remote.address().to_string();
        stream_.socket().set_option(tcp::no_delay(true), ec);
    }
    ~Connection() { --(admitted_ ? state_.connections : state_.rejecting); }

    void start() {
        if (admitted_)
            read_request();
        else  // answered before its request is read; the request is drained while closing
            respond(http::status::service_unavailable,
                    io::json_quote("server busy: " + std::to_string(state_.limits.max_connections) +
                                   " connections open, try again later") +
                        "\n",
                    "application/json", true);
    }

  private:
    void read_request() {
        parser_.emplace();
        parser_->body_limit(state_.limits.body_limit);
        stream_.expires_after(state_.limits.request_timeout);  // for the whole request
        http::async_read_header(
            stream_, buffer_, *parser_,
            [self = shared_from_this()](error_code ec, size_t) { self->on_header(ec); });
    }

    void on_header(error_code ec) {
        if (ec) return on_read_error(ec);
        // curl sends larger bodies only after "100 Continue" (or after waiting a second).
        if (beast::iequals(parser_->get()[http::field::expect], "100-continue")) {
            static const std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
            asio::async_write(stream_, asio::buffer(kContinue.data(), kContinue.size()),
                              [self = shared_from_this()](error_code ec, size_t) {
                                  if (ec) return self->close();
                                  self->read_body();
                              });
            return;
        }
        read_body();
    }

    void read_body() {
        http::async_read(
            stream_, buffer_, *parser_,
            [self = shared_from_this()](error_code ec, size_t) { self->on_request(ec); });
    }

    void on_read_error(error_code ec) {
        if (ec == http::error::body_limit)
            return respond(http::status::payload_too_large, "Payload Too Large\n", "text/plain",
                           true);
        if (ec == http::error::header_limit)
            return respond(http::status::request_header_fields_too_large,
                           "Request Header Fields Too Large\n", "text/plain", true);
        if (is_parse_error(ec))
            return respond(http::status::bad_request, "Bad Request\n", "text/plain", true);
        close();  // the client left, or missed the deadline (the stream has closed the socket)
    }

    void on_request(error_code ec) {
        if (ec) return on_read_error(ec);
        stream_.expires_never();  // waiting for the generator is not the client's fault
        http::request<http::string_body> req = parser_->release();
        version_ = req.version();
        keep_alive_ = req.keep_alive();
        std::string_view target(req.target().data(), req.target().size());
        target = target.substr(0, target.find('?'));
        const beast::string_view method = req.method_string();
        auto routed = state_.routes.route(std::string_view(method.data(), method.size()), target,
                                          std::move(req.body()), remote_);
        if (auto* answer = std::get_if<ApiAnswer>(&routed)) return respond(std::move(*answer));
        if (auto* streamed = std::get_if<ApiStreamJob>(&routed))
            return stream(std::move(*streamed));
        if (auto* batched = std::get_if<ApiBatchedJob>(&routed)) {
            if (WorkerJob step = (*batched)(event_sink(), answer_sink()))
                asio::post(*state_.worker, std::move(step));
            return;
        }
        asio::post(*state_.worker,
                   state_.routes.outside_batch([run = std::get<ApiJob>(std::move(routed)),
                                                done = answer_sink()] { done(run()); }));
    }

    // A streamed answer: the job's events are written as they come, in HTTP/1.1's chunked
    // encoding (an HTTP/1.0 client gets them unframed, the end of the stream closing it).
    void stream(ApiStreamJob run) {
        asio::post(*state_.worker,
                   state_.routes.outside_batch([run = std::move(run), send = event_sink(),
                                                done = answer_sink()] { done(run(send)); }));
    }

    // Where a job on the worker sends a streamed answer's events: written in order on the I/O
    // thread. Called only before answer_sink's, which keeps the connection alive until then.
    ChunkSink event_sink() {
        return [self = this, ex = stream_.get_executor()](std::string chunk) {
            if (self->client_gone_) return false;
            asio::post(ex, [self, chunk = std::move(chunk)]() mutable {
                self->write_event(std::move(chunk));
            });
            return true;
        };
    }

    // Where a job on the worker hands over its answer (nullopt: the streamed events were it).
    // The connection's last reference moves back to the I/O thread with it.
    AnswerSink answer_sink() {
        auto keep = std::make_shared<std::shared_ptr<Connection>>(shared_from_this());
        return [keep, ex = stream_.get_executor()](std::optional<ApiAnswer> answer) {
            asio::post(ex, [self = std::move(*keep), answer = std::move(answer)]() mutable {
                if (answer && !self->streaming_) return self->respond(std::move(*answer));
                self->end_stream();
            });
        };
    }

    void start_stream() {
        if (!streaming_) {
            streaming_ = true;
            const bool chunked = version_ >= 11;
            stream_keep_alive_ = chunked && keep_alive_;
            pending_.push_back(std::string(version_ >= 11 ? "HTTP/1.1" : "HTTP/1.0") +
                               " 200 OK\r\nContent-Type: text/event-stream\r\n"
                               "Cache-Control: no-cache\r\n" +
                               (chunked ? "Transfer-Encoding: chunked\r\n" : "") +
                               (stream_keep_alive_ ? "" : "Connection: close\r\n") + "\r\n");
        }
    }

    void write_event(std::string event) {
        if (client_gone_) return;
        start_stream();
        if (version_ >= 11) {
            char size[24];
            std::snprintf(size, sizeof size, "%zx\r\n", event.size());
            event = size + event + "\r\n";
        }
        pending_.push_back(std::move(event));
        if (!writing_) write_next();
    }

    void end_stream() {
        if (client_gone_) return;
        start_stream();  // a job that sent nothing: the headers alone
        if (version_ >= 11) pending_.emplace_back("0\r\n\r\n");
        stream_ended_ = true;
        if (!writing_) write_next();
    }

    void write_next() {
        if (pending_.empty()) {
            if (!stream_ended_) return;
            streaming_ = stream_ended_ = false;
            return stream_keep_alive_ ? read_request() : linger_close();
        }
        writing_ = true;
        writing_now_ = std::move(pending_.front());
        pending_.pop_front();
        stream_.expires_after(state_.limits.write_timeout);
        asio::async_write(stream_, asio::buffer(writing_now_),
                          [self = shared_from_this()](error_code ec, size_t) {
                              self->writing_ = false;
                              if (ec) {
                                  self->client_gone_ = true;
                                  self->pending_.clear();
                                  return self->close();
                              }
                              self->write_next();
                          });
    }

    void respond(ApiAnswer answer) {
        respond(http::status(answer.status), std::move(answer.body), answer.content_type, false,
                answer.allow);
    }

    void respond(http::status status, std::string body, const char* content_type, bool close,
                 const char* allow = nullptr) {
        res_ = {};
        res_.version(version_);
        res_.result(status);
        res_.set(http::field::content_type, content_type);
        if (allow) res_.set(http::field::allow, allow);
        if (status == http::status::service_unavailable) res_.set(http::field::retry_after, "1");
        res_.keep_alive(keep_alive_ && !close);
        res_.body() = std::move(body);
        res_.prepare_payload();
        stream_.expires_after(admitted_ ? state_.limits.write_timeout
                                        : std::chrono::milliseconds(kLinger));
        http::async_write(stream_, res_, [self = shared_from_this()](error_code ec, size_t) {
            if (ec) return self->close();
            if (self->res_.keep_alive()) return self->read_request();
            self->linger_close();
        });
    }

    // Half-close, then read and drop what the client still sends until it closes or kLinger
    // passes.
    void linger_close() {
        error_code ec;
        stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
        if (ec) return close();
        stream_.expires_after(kLinger);
        buffer_.clear();
        drain();
    }
    void drain() {
        stream_.async_read_some(buffer_.prepare(4096),
                                [self = shared_from_this()](error_code ec, size_t) {
                                    if (ec) return self->close();
                                    self->drain();
                                });
    }

    void close() {
        error_code ec;
        stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
        stream_.socket().close(ec);
    }

    beast::tcp_stream stream_;
    ServerState& state_;
    const bool admitted_;
    std::string remote_;
    beast::flat_buffer buffer_;
    std::optional<http::request_parser<http::string_body>> parser_;
    http::response<http::string_body> res_;
    unsigned version_ = 11;
    bool keep_alive_ = false;
    // A streamed answer's state (on the I/O thread, but client_gone_, which the worker reads).
    std::atomic<bool> client_gone_{false};
    bool streaming_ = false, stream_ended_ = false, stream_keep_alive_ = false, writing_ = false;
    std::deque<std::string> pending_;
    std::string writing_now_;
};

class Listener {
  public:
    Listener(asio::io_context& io, ServerState& state) : acceptor_(io), retry_(io), state_(state) {}

    // The bound port.
    int bind(const std::string& host, int port) {
        error_code ec;
        tcp::resolver resolver(acceptor_.get_executor());
        const auto endpoints =
            resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
        MT_CHECK(!ec, "cannot listen on ", host, ": ", ec.message());
        std::string why = "no address";
        for (const auto& entry : endpoints) {
            const tcp::endpoint endpoint = entry.endpoint();
            acceptor_.open(endpoint.protocol(), ec);
            if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
            if (!ec) acceptor_.bind(endpoint, ec);
            if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
            if (!ec) return acceptor_.local_endpoint().port();
            why = ec.message();
            error_code ignored;
            acceptor_.close(ignored);
        }
        if (port == 0) MT_CHECK(false, "cannot listen on ", host, " (", why, ")");
        MT_CHECK(false, "cannot listen on ", host, ":", port, " (", why, "; in use?)");
        return 0;
    }

    void accept() {
        acceptor_.async_accept([this](error_code ec, tcp::socket socket) {
            if (ec == asio::error::operation_aborted) return;
            if (ec) {  // out of descriptors, ...: try again shortly rather than spin or stop
                retry_.expires_after(std::chrono::milliseconds(100));
                retry_.async_wait([this](error_code e) {
                    if (!e) accept();
                });
                return;
            }
            const size_t bound = state_.limits.max_connections;
            const bool admitted = state_.connections < bound;
            // Past the bound a connection is told 503; past twice the bound it is just closed.
            if (admitted || state_.rejecting < bound)
                std::make_shared<Connection>(std::move(socket), state_, admitted)->start();
            accept();
        });
    }

    void stop() {
        error_code ignored;
        acceptor_.close(ignored);
        retry_.cancel();
    }

  private:
    tcp::acceptor acceptor_;
    asio::steady_timer retry_;
    ServerState& state_;
};

std::optional<double> env_number(const char* name) {
    const char* text = std::getenv(name);
    if (!text || !*text) return std::nullopt;
    char* end = nullptr;
    errno = 0;
    const double value = std::strtod(text, &end);
    MT_CHECK(errno == 0 && *end == '\0' && value > 0, name, " must be a positive number, got '",
             text, "'");
    return value;
}

}  // namespace

ApiServerLimits ApiServerLimits::from_environment() {
    ApiServerLimits limits;
    if (auto n = env_number("MT_API_MAX_CONNECTIONS"))
        limits.max_connections = std::max<size_t>(1, size_t(*n));
    if (auto seconds = env_number("MT_API_REQUEST_TIMEOUT"))
        limits.request_timeout = std::chrono::milliseconds(int64_t(*seconds * 1000 + 0.5));
    if (auto seconds = env_number("MT_API_QUEUE_TIMEOUT"))
        limits.queue_timeout = std::chrono::milliseconds(int64_t(*seconds * 1000 + 0.5));
    return limits;
}

void serve_api(TextGenerator& generator, const std::string& model_id, ChatPrompt chat,
               const std::string& host, int port, const BatchLimits& batch,
               const ApiServerLimits& limits) {
    MT_CHECK(limits.max_connections > 0, "the server needs room for one connection");
    // Declared so that they are destroyed worker first (its dropped jobs hold connections of
    // the io_context), then the io_context (its pending handlers too), then the state they count.
    ServerState state{ApiRoutes(generator, model_id, std::move(chat), batch, limits.queue_timeout),
                      limits};
    asio::io_context io;
    asio::thread_pool worker(1);
    state.worker = &worker;
    Listener listener(io, state);
    port = listener.bind(host, port);
    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](error_code, int) {
        listener.stop();
        io.stop();
    });
    std::printf("Serving on http://%s:%d (%s)\n", host.c_str(), port, ApiRoutes::kSummary);
    std::fflush(stdout);
    listener.accept();
    io.run();
    // Queued generations are dropped, the running step finishes.
    state.routes.stop();
    worker.stop();
    worker.join();
    // The batch's requests hold connections, which must go while the io_context is there.
    state.routes.drop_requests();
}

}  // namespace mt::generate_tool
