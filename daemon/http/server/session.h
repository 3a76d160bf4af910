// HttpSession: one connection of the dashboard, over plain TCP or TLS (an ErasedStream over
// a Transport, transport.h), shaped like the Beast CppCon2018 example's http_session
// (enable_shared_from_this, one Fail()). Its reading side is session_read.cc, its writing
// side session_write.cc, each compiled once for both kinds of connection.
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
// holds a connection slot (ConnectionLimits) but never a thread. No handler waits on an
// upstream either: a request the router defers (the pull-through routes) is answered from
// another thread, posted back through the server's ReplyGate, while the session's thread
// serves other connections.
#ifndef FARM_DAEMON_HTTP_SERVER_SESSION_H_
#define FARM_DAEMON_HTTP_SERVER_SESSION_H_

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "daemon/http/server/server_state.h"
#include "daemon/http/server/transport.h"

namespace farm::http {

inline constexpr std::chrono::seconds kWriteTimeout{300};
inline constexpr std::chrono::milliseconds kSsePoll{250};
inline constexpr std::chrono::seconds kSseKeepAlive{15};
inline constexpr std::chrono::seconds kSseMaxLife{3600};
inline constexpr uint32_t kHeaderLimit = 16 * 1024;
inline constexpr size_t kFirstRead = 4096;

// One connection. Run() starts it; it lives as long as an operation of it is pending.
class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(ErasedStream&& stream, std::shared_ptr<ServerState> state,
              ConnectionLimits::Slot slot)
      : stream_(std::move(stream)),
        timer_(stream_.get_executor()),
        state_(std::move(state)),
        slot_(std::move(slot)) {}

  void Run();

 private:
  boost::beast::tcp_stream& Lowest() { return stream_.transport().tcp(); }
  bool Tls() { return stream_.transport().tls(); }

  // Reading requests (session_read.cc).
  void Begin();
  void ReadHead();
  void WaitForNextRequest();
  void OnHead(boost::beast::error_code ec, std::size_t);
  void OnRequest(boost::beast::error_code ec, std::size_t);
  void Defer(const Request& req, unsigned version, bool keep_alive);
  void TooLarge();

  // Writing answers and event streams (session_write.cc).
  void Send(Response&& r, unsigned version, bool keep_alive);
  template <class Body>
  void Write(std::shared_ptr<boost::beast::http::response<Body>> res);  // session_write.cc only
  void SendString(Response&& r, unsigned version, bool keep_alive);
  void SendFile(Response&& r, unsigned version, bool keep_alive);
  void OnWrite(boost::beast::error_code ec, bool close);
  void Close();
  void StartEvents(Response&& r);
  void WriteEvents(std::string chunk, bool last);
  void WaitEvents();
  void OnEventsTimer(boost::beast::error_code ec);

  ErasedStream stream_;
  boost::asio::steady_timer timer_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::shared_ptr<ServerState> state_;
  ConnectionLimits::Slot slot_;
  std::shared_ptr<const void> hold_;  // the answer being written's (Response::hold)
  bool head_only_ = false;
  int64_t sse_job_ = 0;
  int sse_attempt_ = 0;
  int64_t sse_after_ = 0;
  int64_t sse_generation_ = 0;
  std::chrono::steady_clock::time_point sse_deadline_;
  std::chrono::steady_clock::time_point last_write_;
};

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_SERVER_SESSION_H_
