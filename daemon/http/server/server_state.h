// What the dashboard's listener and its connections share (dashboard.cc starts them): the
// options, the router, the connection limits, and the few socket-layer helpers both need.
// Internal to daemon/http; included by listener.cc and the session files only.
//
// Thread-safety: ServerState is immutable after construction apart from `limits`,
// `refusals_lingering` and `gate`, which are thread-safe.
#ifndef FARM_DAEMON_HTTP_SERVER_SERVER_STATE_H_
#define FARM_DAEMON_HTTP_SERVER_SERVER_STATE_H_

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "daemon/http/router.h"
#include "daemon/http/server/connection_limits.h"
#include "daemon/http/server/dashboard_options.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace farm::http {

// Lets answers made on other threads (Router::HandleDeferred) reach their sessions only
// while the server runs: Dashboard::Shutdown closes it before the io_context goes, and a
// late answer is dropped instead of posted to an io_context that is gone. Thread-safe.
class ReplyGate {
 public:
  // Runs `post` unless closed, under the gate's lock (Close waits for it).
  void Run(const std::function<void()>& post) {
    std::lock_guard lock(mu_);
    if (open_) post();
  }
  void Close() {
    std::lock_guard lock(mu_);
    open_ = false;
  }

 private:
  std::mutex mu_;
  bool open_ = true;
};

struct ServerState {
  ServerState(const DashboardOptions& o, const DashboardDeps& d)
      : options(o), router(o, d), limits(o.max_connections, o.max_connections_per_address) {}

  std::chrono::milliseconds header_timeout() const {
    return std::chrono::milliseconds(options.header_timeout_ms);
  }
  std::chrono::milliseconds body_timeout() const {
    return std::chrono::milliseconds(options.body_timeout_ms);
  }
  std::chrono::milliseconds idle_timeout() const {
    return std::chrono::milliseconds(options.idle_timeout_ms);
  }

  DashboardOptions options;
  Router router;
  ConnectionLimits limits;
  // Refused connections whose 503 is still being delivered (see listener.cc).
  std::atomic<int> refusals_lingering{0};
  std::shared_ptr<ReplyGate> gate = std::make_shared<ReplyGate>();
};

// The one place socket errors are reported; cancelled operations are part of shutting
// down and say nothing.
void Fail(const boost::system::error_code& ec, const char* what);

// Accepts connections on `acceptor` until the io_context stops: each one is admitted by
// state->limits and served (StartPlainSession, or StartTlsSession when `tls` is set), or
// refused at once without reading from it (a 503 on plain HTTP, a close on TLS).
void StartListener(boost::asio::io_context& ioc, boost::asio::ip::tcp::acceptor acceptor,
                   std::shared_ptr<ServerState> state,
                   std::shared_ptr<boost::asio::ssl::context> tls);

// Serves one admitted connection until it closes; the slot is released with it. The TLS
// form completes the handshake first, within the header deadline. Never throws.
void StartPlainSession(boost::asio::ip::tcp::socket socket, std::shared_ptr<ServerState> state,
                       ConnectionLimits::Slot slot);
void StartTlsSession(boost::asio::ip::tcp::socket socket, boost::asio::ssl::context& tls,
                     std::shared_ptr<ServerState> state, ConnectionLimits::Slot slot);

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_SERVER_SERVER_STATE_H_
