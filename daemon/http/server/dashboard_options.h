// Options and dependencies of the dashboard HTTP server, shared by the socket layer and the
// handlers. Plain values; the pointed-to dependencies are owned by farmd and outlive the
// server, and each of them is thread-safe.
#ifndef FARM_DAEMON_HTTP_SERVER_DASHBOARD_OPTIONS_H_
#define FARM_DAEMON_HTTP_SERVER_DASHBOARD_OPTIONS_H_

#include <cstdint>
#include <string>

#include "common/clock.h"
#include "common/net/tls.h"
#include "daemon/audit/audit_log.h"
#include "daemon/auth/token_authority.h"
#include "daemon/builds/front_end_deps.h"

namespace farm::http {

struct DashboardOptions {
  std::string listen = "127.0.0.1:0";
  // Serve web assets from this directory when set (development), else the embedded copies.
  std::string web_root;
  // Read-only pages, JSON API, metrics and the package index without a token.
  bool public_read = true;
  // Let wheels whose validation waits for hardware into the package index.
  bool index_include_pending = false;
  // The dashboard's address for people (--public-url), for the feed's links; "": links
  // relative to the feed.
  std::string public_url;
  // The largest wheel the package index lists (--index-max-wheel-bytes); 0: any. A larger
  // one stays on its job's page, which says why the index leaves it out.
  int64_t index_max_wheel_bytes = 0;
  // Where the PEP 825 variants path keeps the variant wheels it makes (farmd: under its
  // data directory); "": the variants path lists nothing it cannot make.
  std::string variant_wheels_dir;
  // Answer index file downloads with a redirect to a presigned URL of the blob store,
  // valid this many seconds; 0 serves the bytes through farmd.
  int64_t index_redirect_ttl_s = 0;
  // HTTPS with this certificate when tls.enabled() (the client CA is not asked of browsers);
  // plaintext is refused on non-loopback addresses unless tls.insecure.
  net::ServerTls tls;
  // Simultaneous connections in all, and per client address (an IPv4 address or an IPv6
  // /64): past the first the next get 503, past the second the client's next; both are
  // refused without being read from (connection_limits.h, listener.cc).
  int max_connections = 512;
  int max_connections_per_address = 32;
  // Deadlines (session.h): the TLS handshake and each request's head, its body, and
  // the wait for the next request on a kept-alive connection. Whole deadlines, not per
  // byte: a client trickling bytes is closed when they pass.
  int header_timeout_ms = 10'000;
  int body_timeout_ms = 30'000;
  int idle_timeout_ms = 30'000;
  // Request body bytes, worker threads.
  int max_body_bytes = 64 * 1024;
  int threads = 2;
};

// The stores, services and use cases the handlers read and call (shared with the gRPC
// API, builds/front_end_deps.h).
using DashboardDeps = builds::FrontEndDeps;

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_SERVER_DASHBOARD_OPTIONS_H_
