// HttpSession's reading side (session.h): the TLS handshake, request heads and bodies under
// their deadlines, and the hand-off to the router.
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/http/read.hpp>

#include "daemon/http/server/session.h"

namespace farm::http {

namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace net = boost::asio;
using namespace std::chrono_literals;

namespace {
Request ToRequest(const bhttp::request<bhttp::string_body>& msg, bool secure) {
  Request req = MakeRequest(std::string(msg.method_string()), msg.target());
  req.accept = std::string(msg[bhttp::field::accept]);
  req.cache_control = std::string(msg[bhttp::field::cache_control]).substr(0, 256);
  req.user_agent = std::string(msg[bhttp::field::user_agent]).substr(0, 256);
  req.authorization = std::string(msg[bhttp::field::authorization]);
  req.host = std::string(msg[bhttp::field::host]);
  req.last_event_id = std::string(msg["Last-Event-ID"]);
  req.secure = secure;
  req.body = msg.body();
  return req;
}

}  // namespace

void HttpSession::Run() {
  net::dispatch(stream_.get_executor(),
                beast::bind_front_handler(&HttpSession::Begin, shared_from_this()));
}

void HttpSession::Begin() {
  if (!Tls()) return ReadHead();
  // A client that opens TCP and never sends a ClientHello is held no longer than one that
  // never finishes its request head.
  Lowest().expires_after(state_->header_timeout());
  stream_.transport().Handshake([self = shared_from_this()](beast::error_code ec) {
    if (ec) return Fail(ec, "TLS handshake");
    self->ReadHead();
  });
}

// The first request's head is due header_timeout after the connection starts.
void HttpSession::ReadHead() {
  parser_.emplace();
  parser_->header_limit(kHeaderLimit);
  parser_->body_limit(static_cast<uint64_t>(state_->options.max_body_bytes));
  Lowest().expires_after(state_->header_timeout());
  bhttp::async_read_header(stream_, buffer_, *parser_,
                           beast::bind_front_handler(&HttpSession::OnHead, shared_from_this()));
}

// A keep-alive connection waits idle_timeout for the next request's first byte, then
// gives its head header_timeout.
void HttpSession::WaitForNextRequest() {
  if (buffer_.size() > 0) return ReadHead();  // pipelined: it has started already
  Lowest().expires_after(state_->idle_timeout());
  stream_.async_read_some(buffer_.prepare(kFirstRead),
                          [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                            if (ec == net::error::eof || ec == net::ssl::error::stream_truncated)
                              return;
                            if (ec) return Fail(ec, "idle read");
                            self->buffer_.commit(n);
                            self->ReadHead();
                          });
}

void HttpSession::OnHead(beast::error_code ec, std::size_t) {
  if (ec == bhttp::error::end_of_stream) return Close();
  if (ec == bhttp::error::header_limit) return TooLarge();
  if (ec) return Fail(ec, "read head");
  if (parser_->is_done()) return OnRequest({}, 0);
  Lowest().expires_after(state_->body_timeout());
  bhttp::async_read(stream_, buffer_, *parser_,
                    beast::bind_front_handler(&HttpSession::OnRequest, shared_from_this()));
}

void HttpSession::OnRequest(beast::error_code ec, std::size_t) {
  if (ec == bhttp::error::body_limit) return TooLarge();
  if (ec) return Fail(ec, "read body");
  const auto& msg = parser_->get();
  Request req = ToRequest(msg, Tls());
  beast::error_code peer_ec;
  auto peer = Lowest().socket().remote_endpoint(peer_ec);
  if (!peer_ec) req.peer = peer.address().to_string();
  head_only_ = req.method == "HEAD";
  if (state_->router.Defers(req)) return Defer(req, msg.version(), msg.keep_alive());
  Response res = state_->router.Handle(req);
  Send(std::move(res), msg.version(), msg.keep_alive());
}

void HttpSession::Defer(const Request& req, unsigned version, bool keep_alive) {
  // The timer's pending wait keeps the session alive while its answer is made elsewhere
  // (and goes with the io_context if the server stops first); the answer cancels it.
  timer_.expires_after(std::chrono::hours(24));
  timer_.async_wait([self = shared_from_this()](beast::error_code) {});
  std::weak_ptr<HttpSession> weak = shared_from_this();
  std::shared_ptr<ReplyGate> gate = state_->gate;
  state_->router.HandleDeferred(req, [weak, gate, version, keep_alive](Response r) {
    gate->Run([&] {
      std::shared_ptr<HttpSession> self = weak.lock();
      if (!self) return;
      net::post(self->stream_.get_executor(),
                [self, r = std::move(r), version, keep_alive]() mutable {
                  self->timer_.cancel();
                  self->Send(std::move(r), version, keep_alive);
                });
    });
  });
}

void HttpSession::TooLarge() {
  SendString(TextResponse(413, "request too large: farmd accepts headers of at most " +
                                   std::to_string(kHeaderLimit) + " bytes and bodies of at most " +
                                   std::to_string(state_->options.max_body_bytes) + " bytes\n"),
             11, false);
}
}  // namespace farm::http
