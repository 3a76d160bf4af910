// HttpSession: one connection of the dashboard, over plain TCP or TLS, shaped like the
// Beast CppCon2018 example's http_session (enable_shared_from_this, one Fail()). The
// template is instantiated once per stream type, each in its own file (session_plain.cc,
// session_tls.cc), so that no translation unit compiles Beast's HTTP and TLS templates
// for both.
//
// Deadlines, none per byte (a client sending one byte every few seconds gains nothing):
//   TLS handshake                         header_timeout from the accept
//   a request's head (line and headers)   header_timeout from its first byte (the accept,
//                                         or the handshake's end, for the first request)
//   its body                              body_timeout from the end of the head
//   between keep-alive requests           idle_timeout until the next request's first byte
//   a response                            kWriteTimeout
// A deadline that passes closes the connection (Beast's tcp_stream closes the socket).
// No handler waits on a client: every read and write is asynchronous, so a slow client
// holds a connection slot (ConnectionLimits) but never a thread.
#ifndef FARM_DAEMON_HTTP_SESSION_IMPL_H_
#define FARM_DAEMON_HTTP_SESSION_IMPL_H_

#include <boost/asio.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include "daemon/http/security_headers.h"
#include "daemon/http/server_state.h"

namespace farm::http {

namespace session {

namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace net = boost::asio;
using namespace std::chrono_literals;

inline constexpr auto kWriteTimeout = 300s;
inline constexpr auto kSsePoll = 250ms;
inline constexpr auto kSseKeepAlive = 15s;
inline constexpr auto kSseMaxLife = 3600s;
inline constexpr uint32_t kHeaderLimit = 16 * 1024;
inline constexpr size_t kFirstRead = 4096;

inline Request ToRequest(const bhttp::request<bhttp::string_body>& msg, bool secure) {
  Request req = MakeRequest(std::string(msg.method_string()), msg.target());
  req.accept = std::string(msg[bhttp::field::accept]);
  req.authorization = std::string(msg[bhttp::field::authorization]);
  req.host = std::string(msg[bhttp::field::host]);
  req.last_event_id = std::string(msg["Last-Event-ID"]);
  req.secure = secure;
  req.body = msg.body();
  return req;
}

template <class Body>
void SetHead(bhttp::response<Body>& res, const Response& r, bool keep_alive) {
  res.set(bhttp::field::server, "farmd");
  res.set(bhttp::field::content_type, r.content_type);
  for (const auto& [k, v] : SecurityHeaders()) res.set(k, v);
  for (const auto& [k, v] : r.headers) res.set(k, v);
  res.keep_alive(keep_alive);
}

inline std::string SseHead(const Response& r) {
  std::string head = "HTTP/1.1 200 OK\r\nServer: farmd\r\nContent-Type: " + r.content_type +
                     "\r\nConnection: close\r\nX-Accel-Buffering: no\r\n";
  for (const auto& [k, v] : SecurityHeaders()) head += k + ": " + v + "\r\n";
  for (const auto& [k, v] : r.headers) head += k + ": " + v + "\r\n";
  return head + "\r\n";
}

// One connection (Stream: beast::tcp_stream or beast::ssl_stream<beast::tcp_stream>).
template <class Stream>
class HttpSession : public std::enable_shared_from_this<HttpSession<Stream>> {
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

 public:
  HttpSession(Stream&& stream, std::shared_ptr<ServerState> state, ConnectionLimits::Slot slot)
      : stream_(std::move(stream)),
        timer_(stream_.get_executor()),
        state_(std::move(state)),
        slot_(std::move(slot)) {}

  void Run() {
    net::dispatch(stream_.get_executor(),
                  beast::bind_front_handler(&HttpSession::Begin, this->shared_from_this()));
  }

 private:
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  void Begin() {
    if constexpr (kTls) {
      // A client that opens TCP and never sends a ClientHello is held no longer than one
      // that never finishes its request head.
      Lowest().expires_after(state_->header_timeout());
      stream_.async_handshake(net::ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (ec) return Fail(ec, "TLS handshake");
                                self->ReadHead();
                              });
    } else {
      ReadHead();
    }
  }

  // The first request's head is due header_timeout after the connection starts.
  void ReadHead() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(static_cast<uint64_t>(state_->options.max_body_bytes));
    Lowest().expires_after(state_->header_timeout());
    bhttp::async_read_header(
        stream_, buffer_, *parser_,
        beast::bind_front_handler(&HttpSession::OnHead, this->shared_from_this()));
  }

  // A keep-alive connection waits idle_timeout for the next request's first byte, then
  // gives its head header_timeout.
  void WaitForNextRequest() {
    if (buffer_.size() > 0) return ReadHead();  // pipelined: it has started already
    Lowest().expires_after(state_->idle_timeout());
    stream_.async_read_some(buffer_.prepare(kFirstRead),
                            [self = this->shared_from_this()](beast::error_code ec, std::size_t n) {
                              if (ec == net::error::eof || ec == net::ssl::error::stream_truncated)
                                return;
                              if (ec) return Fail(ec, "idle read");
                              self->buffer_.commit(n);
                              self->ReadHead();
                            });
  }

  void OnHead(beast::error_code ec, std::size_t) {
    if (ec == bhttp::error::end_of_stream) return Close();
    if (ec == bhttp::error::header_limit) return TooLarge();
    if (ec) return Fail(ec, "read head");
    if (parser_->is_done()) return OnRequest({}, 0);
    Lowest().expires_after(state_->body_timeout());
    bhttp::async_read(stream_, buffer_, *parser_,
                      beast::bind_front_handler(&HttpSession::OnRequest, this->shared_from_this()));
  }

  void OnRequest(beast::error_code ec, std::size_t) {
    if (ec == bhttp::error::body_limit) return TooLarge();
    if (ec) return Fail(ec, "read body");
    const auto& msg = parser_->get();
    Request req = ToRequest(msg, kTls);
    head_only_ = req.method == "HEAD";
    Response res = state_->router.Handle(req);
    Send(std::move(res), msg.version(), msg.keep_alive());
  }

  void TooLarge() {
    SendString(
        TextResponse(413, "request too large: farmd accepts headers of at most " +
                              std::to_string(kHeaderLimit) + " bytes and bodies of at most " +
                              std::to_string(state_->options.max_body_bytes) + " bytes\n"),
        11, false);
  }

  void Send(Response&& r, unsigned version, bool keep_alive) {
    switch (r.kind) {
      case BodyKind::kString:
        return SendString(std::move(r), version, keep_alive);
      case BodyKind::kFile:
        return SendFile(std::move(r), version, keep_alive);
      case BodyKind::kEvents:
        return StartEvents(std::move(r));
    }
  }

  template <class Body>
  void Write(std::shared_ptr<bhttp::response<Body>> res) {
    Lowest().expires_after(kWriteTimeout);
    bhttp::async_write(stream_, *res,
                       [self = this->shared_from_this(), res](beast::error_code ec, std::size_t) {
                         self->OnWrite(ec, res->need_eof());
                       });
  }

  void SendString(Response&& r, unsigned version, bool keep_alive) {
    auto res = std::make_shared<bhttp::response<bhttp::string_body>>(
        static_cast<bhttp::status>(r.status), version);
    SetHead(*res, r, keep_alive);
    res->content_length(r.body.size());
    if (!head_only_) res->body() = std::move(r.body);
    Write(std::move(res));
  }

  void SendFile(Response&& r, unsigned version, bool keep_alive) {
    bhttp::file_body::value_type body;
    beast::error_code ec;
    body.open(r.file_path.c_str(), beast::file_mode::scan, ec);
    if (ec) return SendString(ErrorResponse(Status::NotFound("file missing")), version, keep_alive);
    auto res = std::make_shared<bhttp::response<bhttp::file_body>>(
        std::piecewise_construct, std::make_tuple(std::move(body)),
        std::make_tuple(bhttp::status::ok, version));
    SetHead(*res, r, keep_alive);
    res->content_length(res->body().size());
    if (head_only_) {
      auto empty = std::make_shared<bhttp::response<bhttp::empty_body>>(bhttp::status::ok, version);
      SetHead(*empty, r, keep_alive);
      empty->content_length(res->body().size());
      return Write(std::move(empty));
    }
    Write(std::move(res));
  }

  void OnWrite(beast::error_code ec, bool close) {
    if (ec) return Fail(ec, "write");
    if (close) return Close();
    WaitForNextRequest();
  }

  void Close() {
    if constexpr (kTls) {
      Lowest().expires_after(std::chrono::seconds(5));
      stream_.async_shutdown([self = this->shared_from_this()](beast::error_code ec) {
        if (ec && ec != net::ssl::error::stream_truncated) Fail(ec, "TLS shutdown");
      });
    } else {
      beast::error_code ec;
      stream_.socket().shutdown(net::ip::tcp::socket::shutdown_send, ec);
    }
  }

  // --- server-sent events: the head and first chunk, then polls until the attempt ends ---
  void StartEvents(Response&& r) {
    sse_job_ = r.sse_job_id;
    sse_attempt_ = r.sse_attempt;
    sse_after_ = r.sse_after_seq;
    sse_generation_ = state_->router.deps().store->Generation();
    sse_deadline_ = std::chrono::steady_clock::now() + kSseMaxLife;
    WriteEvents(SseHead(r) + r.body, false);
  }

  void WriteEvents(std::string chunk, bool last) {
    auto data = std::make_shared<std::string>(std::move(chunk));
    Lowest().expires_after(kWriteTimeout);
    last_write_ = std::chrono::steady_clock::now();
    net::async_write(
        stream_, net::buffer(*data),
        [self = this->shared_from_this(), data, last](beast::error_code ec, std::size_t) {
          if (ec) return Fail(ec, "event write");
          if (last) return self->Close();
          self->Lowest().expires_never();
          self->WaitEvents();
        });
  }

  void WaitEvents() {
    timer_.expires_after(kSsePoll);
    timer_.async_wait(
        beast::bind_front_handler(&HttpSession::OnEventsTimer, this->shared_from_this()));
  }

  void OnEventsTimer(beast::error_code ec) {
    if (ec) return Fail(ec, "event timer");
    auto now = std::chrono::steady_clock::now();
    if (now > sse_deadline_) return Close();  // the browser reconnects with Last-Event-ID
    int64_t generation = state_->router.deps().store->Generation();
    if (generation != sse_generation_) {
      LogPoll p = state_->router.PollLog(sse_job_, sse_attempt_, sse_after_);
      // A chunk may stop at a page boundary: poll again on the next tick regardless.
      sse_generation_ = p.chunk.empty() ? generation : -1;
      sse_after_ = p.after_seq;
      if (!p.chunk.empty() || p.done) return WriteEvents(std::move(p.chunk), p.done);
    }
    if (now - last_write_ > kSseKeepAlive) return WriteEvents(": keep-alive\n\n", false);
    WaitEvents();
  }

  Stream stream_;
  net::steady_timer timer_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::shared_ptr<ServerState> state_;
  ConnectionLimits::Slot slot_;
  bool head_only_ = false;
  int64_t sse_job_ = 0;
  int sse_attempt_ = 0;
  int64_t sse_after_ = 0;
  int64_t sse_generation_ = 0;
  std::chrono::steady_clock::time_point sse_deadline_;
  std::chrono::steady_clock::time_point last_write_;
};

}  // namespace session
}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_SESSION_IMPL_H_
