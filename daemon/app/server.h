// FarmServer: farmd's composition root. Opens the store under the data directory,
// bootstraps the first tokens, serves the gRPC API, and sweeps expired leases.
//
//   auto server = FarmServer::Start(options);   // binds, writes the ready file
//   ... wait for SIGTERM ...
//   server->Shutdown();                          // stops accepting, drains, closes the store
#ifndef FARM_DAEMON_APP_SERVER_H_
#define FARM_DAEMON_APP_SERVER_H_

#include <memory>
#include <string>

#include "common/net/tls.h"
#include "common/status.h"
#include "common/wheel/upload_limits.h"
#include "daemon/api/service_context.h"
#include "daemon/auth/secrets_file.h"
#include "daemon/http/server/dashboard_options.h"
#include "daemon/mirror/pull_through.h"
#include "daemon/notify/webhooks.h"
#include "daemon/quota/quota.h"
#include "daemon/requests/requests.h"
#include "daemon/store/blob/blob_store_flags.h"

namespace farm::app {

struct ServerOptions {
  std::string data_dir = "data";  // farm.db, blobs/, admin.token, enroll.token
  // The state: empty for <data_dir>/farm.db, a postgres:// URL for PostgreSQL
  // (docs/postgresql.md), else the path of a SQLite file.
  std::string store;
  std::string listen = "127.0.0.1:7070";  // port 0 picks a free port
  std::string ready_file;                 // receives "host:port" once serving
  // TLS of the gRPC API and the dashboard; client_ca_file makes workers present
  // certificates (mTLS). Without a certificate both listen in plaintext, which is refused
  // on non-loopback addresses unless tls.insecure.
  net::ServerTls tls;
  api::Tunables tunables;
  // Per-principal limits by role (docs/limits.md, "Quotas").
  quota::Policy quotas = quota::Policy::Defaults();
  // Wheel requests: their quotas and whether requests without a token are taken.
  requests::Settings requests;
  // The web dashboard, JSON API, metrics and package index; empty listen: not served.
  http::DashboardOptions http;
  std::string http_ready_file;  // receives the dashboard's "host:port"
  // Tokens for publishing (GITHUB_TOKEN, HF_TOKEN); farmd's alone, never sent to workers.
  auth::Secrets secrets;
  // Where blobs live (docs/blob-storage.md): <data_dir>/blobs, or an S3 bucket.
  s3::BlobStoreSettings blob_store;
  // Publishing (docs/publishing.md): remote endpoints (tests point them at local fakes)
  // and whether wheels still waiting for hardware validation are published.
  std::string github_api = "https://api.github.com";
  std::string hf_endpoint = "https://huggingface.co";
  bool publish_pending_hardware = false;
  bool publish_provenance = true;  // .intoto.jsonl and a signed SHA256SUMS beside the wheels
  int64_t publish_interval_ms = 1000;
  // The largest file each destination takes (docs/publishing.md, "Size limits").
  int64_t github_max_asset_bytes = wheel::kGitHubMaxAssetBytes;
  int64_t hf_max_file_bytes = wheel::kHubMaxFileBytes;
  // Webhooks (docs/coverage.md): --webhook values ("NAME[:KINDS]", each URL read from
  // `secrets`), and how they are delivered; notify.public_url makes their links absolute.
  std::vector<std::string> webhooks;
  notify::NotifierOptions notify;
  // Host provisioning (docs/provisioning.md): the playbooks farmd runs, and the group_vars
  // of the host kinds; an empty playbooks_dir leaves provisioning off.
  std::string playbooks_dir;
  std::string hosts_group_vars_dir;
  // Git sources (common/git_policy.h): which URLs are allowed and how farmd runs
  // `git ls-remote` on them; git_resolve false (--no-git-resolve): farmd runs no git and a
  // git source must name its full commit.
  git::GitPolicy git = {.timeout_ms = 30'000};
  bool git_resolve = true;
  // farmd's pull-through cache of the upstreams workers provision from
  // (docs/environments.md): indexes and trees by name; none: not served. upstream_url is
  // the base workers are told to fetch through; empty: the dashboard's own address.
  mirror::MirrorOptions upstream;
  std::string upstream_url;
  // The shortest poll interval a schedule's upstream watch may ask for.
  int watch_min_poll_seconds = 60;
  // How provisioned cells' locks are resolved at submit (docs/environments.md, "Locks"):
  // the farm's pip (a wheel file, Debian's by default, checked against resolver_pip_sha256
  // when set) on resolver_python, confined as resolver_user (auto: farm-build or nobody
  // under root), for wheels that run with lock_glibc.
  std::string resolver_pip;
  std::string resolver_pip_sha256;
  std::string resolver_python = "/usr/bin/python3";
  std::string resolver_user = "auto";
  std::string lock_glibc = "2.28";
};

class FarmServer {
 public:
  // Starts serving. On first start (no token in the store) writes an admin token and an
  // enrollment token to <data_dir>/admin.token and enroll.token with mode 0600.
  static Result<std::unique_ptr<FarmServer>> Start(const ServerOptions& options);
  ~FarmServer();

  // "127.0.0.1:43121": the address actually bound.
  const std::string& address() const;
  // The dashboard's bound address, "" when it is not served.
  std::string http_address() const;
  api::ServiceContext* context();
  // Stops accepting calls, lets running calls finish for up to 5 s, stops the sweeper.
  void Shutdown();

 private:
  struct Impl;
  explicit FarmServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace farm::app

#endif  // FARM_DAEMON_APP_SERVER_H_
