// Dashboard: farmd's HTTP server (web dashboard, JSON API, metrics, package index) on its
// own io_context and threads, independent of the gRPC server; HTTPS with farmd's
// certificate when options.tls is enabled. Shaped like the Beast CppCon2018 example: a
// listener accepting connections (listener.cc) and one session per connection (session.h,
// over plain TCP or TLS behind one Transport, transport.h), with a single Fail() point that
// ignores operation_aborted. Requests go
// to Router (pure handlers); server-sent events poll the store's generation. Every answer
// carries the headers of security_headers.h.
//
// Limits: max_connections simultaneous connections and max_connections_per_address per
// client (the excess refused at accept, unread); request headers 16 KiB, bodies
// max_body_bytes; whole deadlines for the TLS handshake and a request's head
// (header_timeout_ms), its body (body_timeout_ms) and a kept-alive connection's wait for
// the next request (idle_timeout_ms); log streams end after an hour.
//
// Ownership: the deps are owned by the caller and must outlive the Dashboard.
// Thread-safety: Start, address and Shutdown may be called from any thread; Shutdown is
// idempotent and also runs on destruction. No exception leaves a callback or thread.
#ifndef FARM_DAEMON_HTTP_SERVER_DASHBOARD_H_
#define FARM_DAEMON_HTTP_SERVER_DASHBOARD_H_

#include <memory>
#include <string>

#include "common/status.h"
#include "daemon/http/server/dashboard_options.h"

namespace farm::http {

class Dashboard {
 public:
  ~Dashboard();
  Dashboard(const Dashboard&) = delete;
  Dashboard& operator=(const Dashboard&) = delete;

  // Binds options.listen ("HOST:PORT", port 0 picks one) and starts serving. On success the
  // server is accepting when this returns; InvalidArgument for a bad address or an
  // unreadable certificate, FailedPrecondition for plaintext on a non-loopback address
  // without tls.insecure, Unavailable when binding fails.
  static Result<std::unique_ptr<Dashboard>> Start(const DashboardOptions& options,
                                                  const DashboardDeps& deps);

  // The bound address, "127.0.0.1:PORT".
  const std::string& address() const { return address_; }

  // Stops accepting, closes every connection and joins the threads.
  void Shutdown();

  struct Impl;

 private:
  explicit Dashboard(std::unique_ptr<Impl> impl, std::string address);
  std::unique_ptr<Impl> impl_;
  std::string address_;
};

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_SERVER_DASHBOARD_H_
