// Router: maps a Request to the handler that answers it, after checking the bearer token
// the route needs. Pure apart from the store reads and the cancel write the handlers make;
// unit-tested without sockets. Handle() never throws. Thread-safe (the index catalog has
// its own lock; everything else is immutable after construction).
#ifndef FARM_DAEMON_HTTP_ROUTER_H_
#define FARM_DAEMON_HTTP_ROUTER_H_

#include "daemon/http/index/index_catalog.h"
#include "daemon/http/index/variant_index.h"
#include "daemon/http/rest/log_stream.h"
#include "daemon/http/server/dashboard_options.h"
#include "daemon/http/server/http_message.h"

namespace farm::http {

class Router {
 public:
  Router(DashboardOptions options, DashboardDeps deps)
      : options_(std::move(options)),
        deps_(deps),
        catalog_(deps_, options_.index_include_pending, options_.index_redirect_ttl_s,
                 options_.index_max_wheel_bytes),
        variant_wheels_(options_.variant_wheels_dir) {}

  // Answers one request. Routes: / and the assets; /healthz, /readyz, /metrics; /api/v1/...;
  // the package index (/simple/, /<variant>/simple/, /files/, /variants/). Reads need a viewer
  // token unless public_read (the audit log always an admin's); a mutation needs a submitter token
  // whose principal owns what it changes, or an admin token (api.h, Actor), and is recorded in the
  // audit log. Any exception becomes a 500.
  Response Handle(const Request& req) noexcept;

  // Whether `req` is answered later, through HandleDeferred: the pull-through routes,
  // whose answers may wait on an upstream (index/upstream_routes.h). The server's threads
  // hand those over and serve others meanwhile; Handle answers them too, waiting.
  bool Defers(const Request& req) const;
  // Answers a request Defers names through `reply`, exactly once, on this thread or
  // another. Never throws.
  void HandleDeferred(const Request& req, Reply reply) noexcept;

  // Next events of a log stream started by Handle (see log_stream.h). Never throws.
  LogPoll PollLog(int64_t job_id, int attempt, int64_t after_seq) noexcept;

  const DashboardDeps& deps() const { return deps_; }

 private:
  Response Dispatch(const Request& req);
  Response DispatchApi(const Request& req, std::string_view rest);
  Response DispatchJob(const Request& req, int64_t job_id, std::string_view tail);
  // Whether `req` may do what needs `need`: reads (kViewer) are free while reads are
  // public, else the request's token must have the role (rest/api.h Actor, the one check).
  Status Authorize(const Request& req, auth::Need need);

  DashboardOptions options_;
  DashboardDeps deps_;
  IndexCatalog catalog_;
  VariantWheels variant_wheels_;  // the PEP 825 variants path's wheels
};

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_ROUTER_H_
