// farmd: the coordinator daemon. Parses flags, starts FarmServer, waits for SIGTERM/SIGINT.
#include <csignal>
#include <filesystem>
#include <iostream>

#include "common/flags.h"
#include "common/log.h"
#include "common/net/grpc_runtime.h"
#include "common/net/tls.h"
#include "common/version.h"
#include "daemon/api/server.h"
#include "daemon/hosts/host_manager.h"
#include "daemon/store/postgres_store.h"

namespace {

// --quota-ROLE and --quota-window-seconds over the defaults (docs/limits.md, "Quotas").
farm::Status QuotaPolicyFromFlags(const farm::Flags& flags, farm::quota::Policy* policy) {
  for (const char* role : {"submitter", "admin"}) {
    const std::string flag = std::string("quota-") + role;
    if (!flags.Has(flag)) continue;
    farm::Status parsed = farm::quota::ParseLimits(flags.Get(flag), &policy->by_role[role]);
    if (!parsed.ok()) return parsed.WithContext("--" + flag);
  }
  auto window = flags.GetInt("quota-window-seconds", policy->window_ms / 1000);
  if (!window.ok() || *window < 1 || *window > 366 * 24 * 3600) {
    return farm::Status::InvalidArgument(
        "--quota-window-seconds must be a number of seconds from 1 to a year");
  }
  policy->window_ms = *window * 1000;
  return farm::Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  farm::net::DisableMutexOrderGraph();
  // Block the stop signals in every thread; the main thread waits for them below.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  std::vector<farm::FlagSpec> specs = {
      {"config", "FILE", "YAML file of settings named like these flags; flags win"},
      {"data-dir", "DIR", "state directory (farm.db, blobs/, tokens); default ./data"},
      {"store", "URL",
       "postgres://... keeps the state in PostgreSQL, one active farmd per database and the "
       "others standby (docs/postgresql.md); default the SQLite file <data-dir>/farm.db"},
      {"listen", "HOST:PORT", "gRPC address; port 0 picks one (default 127.0.0.1:7070)"},
      {"ready-file", "FILE", "write the bound gRPC address here once serving"},
      {"lease-ms", "MS", "lease of a running job, renewed by heartbeats (default 30000)"},
      {"heartbeat-ms", "MS", "heartbeat interval told to workers (default 2000)"},
      {"max-log-bytes", "N",
       "log text stored per job attempt; the rest is dropped (default 64 MiB)"},
      {"max-wheel-bytes", "N", "largest wheel a worker may upload (default 4 GiB)"},
      {"max-source-bytes", "N", "largest source archive a client may upload (default 8 GiB)"},
      {"source-retention-days", "N",
       "remove source archives unused this long that no schedule "
       "or unfinished build names; 0 keeps them (default 30)"},
      {"quota-submitter", "SPEC",
       "limits of each submitter principal (token name): submissions=N (per window), "
       "queued-jobs=N, stored-bytes=N, each a number or unlimited, comma-separated "
       "(default submissions=120,queued-jobs=2000,stored-bytes=107374182400)"},
      {"quota-admin", "SPEC", "the same for admins (default: unlimited)"},
      {"quota-window-seconds", "N", "the window submissions are counted over (default 3600)"},
      {"http-listen", "HOST:PORT", "serve the dashboard, /api/v1, /metrics and /simple/ here"},
      {"http-ready-file", "FILE", "write the dashboard's bound address here once serving"},
      {"http-max-connections", "N", "simultaneous HTTP connections; more get 503 (default 512)"},
      {"http-max-connections-per-address", "N",
       "simultaneous HTTP connections of one client address (IPv6: one /64); more get 503 "
       "(default 32)"},
      {"http-header-timeout-ms", "MS",
       "whole time for a TLS handshake, and for a request's head (default 10000)"},
      {"http-body-timeout-ms", "MS", "whole time for a request's body (default 30000)"},
      {"http-idle-timeout-ms", "MS",
       "how long a kept-alive HTTP connection waits for its next request (default 30000)"},
      {"web-root", "DIR", "serve dashboard assets from DIR instead of the embedded copies"},
      {"private-read", "", "require a viewer token for read-only pages and the index"},
      {"index-include-pending", "", "list wheels still waiting for hardware validation"},
      {"secrets-file", "FILE", "KEY=VALUE tokens for publishing (mode 0600); else $FARM_<KEY>"},
      {"github-api", "URL", "GitHub REST API base for publishing (default https://api.github.com)"},
      {"hf-endpoint", "URL", "Hugging Face Hub endpoint (default https://huggingface.co)"},
      {"publish-pending-hardware", "", "also publish wheels whose validation waits for a GPU"},
      {"publish-interval-ms", "MS", "pause between passes of the publisher (default 1000)"},
      {"publish-without-provenance", "",
       "publish wheels without their .intoto.jsonl and the signed SHA256SUMS"},
      {"playbooks-dir", "DIR", "playbooks farmctl hosts provision runs (default: the checkout's)"},
      {"hosts-group-vars", "DIR",
       "group_vars of the host kinds (default: the example inventory's)"},
      {"git-ssh", "", "also allow git sources over ssh (default: https only)"},
      {"git-ca-file", "PEM",
       "certificate authorities for https git servers (default: the system's)"},
      {"git-timeout-s", "N", "longest a `git ls-remote` of a recipe's ref may take (default 30)"},
      {"no-git-resolve", "", "run no git at all: git sources must name their full commit"},
      {"upstream-index", "NAME=URL",
       "serve a package index workers provision from at /upstream/pypi/NAME/simple/, pulled "
       "through from URL (repeatable; e.g. cu128=https://download.pytorch.org/whl/cu128/)"},
      {"upstream-tree", "NAME=URL",
       "serve an archive folder at /upstream/tree/NAME/ (redist: NVIDIA's CUDA redist, python: "
       "relocatable CPython archives), pulled through from URL (repeatable)"},
      {"upstream-url", "URL",
       "the base workers fetch the upstreams through (default: the dashboard's address)"},
      {"public-url", "URL",
       "the dashboard's address for people (https://farm.example.org): the links of the feed "
       "and of webhooks (default: links relative to the dashboard)"},
      {"webhook", "NAME[:KINDS]",
       "POST coverage events to the URL the secrets file holds as WEBHOOK_URL_<NAME> "
       "(repeatable); KINDS: wheel_validated,build_failed (default both)"},
      {"webhook-interval-ms", "MS", "pause between passes of the webhook sender (default 1000)"},
      {"webhook-backoff-ms", "MS",
       "wait after a failed delivery, doubling per attempt up to 10 min (default 2000)"},
      {"webhook-max-attempts", "N", "deliveries tried before an event is given up (default 10)"},
      {"watch-min-poll-s", "N",
       "shortest poll interval a schedule's upstream watch may ask for (default 60)"},
      {"log-json", "", "log one JSON object per line"},
      {"help", "", "show this help"},
      {"version", "", "print the version and exit"},
  };
  for (const farm::FlagSpec& f : farm::net::ServerTlsFlags()) specs.push_back(f);
  for (const farm::FlagSpec& f : farm::s3::BlobStoreFlags()) specs.push_back(f);
  farm::Flags flags(std::move(specs));
  farm::Status parsed = flags.Parse(argc, argv);
  if (parsed.ok() && flags.Has("config")) parsed = flags.MergeConfigFile(flags.Get("config"));
  if (parsed.ok() && flags.Has("version")) {
    std::cout << "farmd " << farm::FarmVersion() << "\n";
    return 0;
  }
  if (!parsed.ok() || flags.Has("help")) {
    std::cerr << (parsed.ok() ? "" : parsed.message() + "\n") << "usage: farmd [flags]\n"
              << flags.Usage();
    return parsed.ok() ? 0 : 2;
  }
  farm::log::InitLogging({.json = flags.Has("log-json"), .component = "farmd"});
  farm::api::ServerOptions options;
  options.data_dir = flags.Get("data-dir", "data");
  options.store = flags.Get("store");
  options.listen = flags.Get("listen", "127.0.0.1:7070");
  options.ready_file = flags.Get("ready-file");
  auto tls = farm::net::ServerTlsFromFlags(flags);
  if (!tls.ok()) {
    std::cerr << tls.status().message() << "\n";
    return 2;
  }
  options.tls = std::move(tls).value();
  farm::api::Tunables& t = options.tunables;
  for (auto [name, value] : {std::pair{"lease-ms", &t.lease_ms},
                             {"heartbeat-ms", &t.heartbeat_ms},
                             {"max-log-bytes", &t.max_log_bytes},
                             {"max-wheel-bytes", &t.max_artifact_bytes},
                             {"max-source-bytes", &t.max_source_bytes}}) {
    auto parsed_value = flags.GetInt(name, *value);
    if (!parsed_value.ok() || parsed_value.value() < 1) {
      std::cerr << "--" << name << ": "
                << (parsed_value.ok() ? "must be at least 1" : parsed_value.status().message())
                << "\n";
      return 2;
    }
    *value = parsed_value.value();
  }
  auto retention_days = flags.GetInt("source-retention-days", 30);
  if (!retention_days.ok() || *retention_days < 0 || *retention_days > 36500) {
    std::cerr << "--source-retention-days must be a number of days from 0 to 36500\n";
    return 2;
  }
  t.source_retention_ms = *retention_days * 24 * 3600 * 1000;
  if (farm::Status quotas = QuotaPolicyFromFlags(flags, &options.quotas); !quotas.ok()) {
    std::cerr << quotas.message() << "\n";
    return 2;
  }
  options.http.listen = flags.Get("http-listen");
  options.http.web_root = flags.Get("web-root");
  options.http.public_read = !flags.Has("private-read");
  options.http.index_include_pending = flags.Has("index-include-pending");
  options.http_ready_file = flags.Get("http-ready-file");
  farm::http::DashboardOptions& h = options.http;
  for (auto [name, value] : {std::pair{"http-max-connections", &h.max_connections},
                             {"http-max-connections-per-address", &h.max_connections_per_address},
                             {"http-header-timeout-ms", &h.header_timeout_ms},
                             {"http-body-timeout-ms", &h.body_timeout_ms},
                             {"http-idle-timeout-ms", &h.idle_timeout_ms}}) {
    auto parsed_value = flags.GetInt(name, *value);
    if (!parsed_value.ok() || *parsed_value < 1 || *parsed_value > 1'000'000) {
      std::cerr << "--" << name << " must be a number from 1 to 1000000\n";
      return 2;
    }
    *value = static_cast<int>(*parsed_value);
  }
  if (flags.Has("secrets-file")) {
    auto secrets = farm::auth::LoadSecretsFile(flags.Get("secrets-file"));
    if (!secrets.ok()) {
      farm::log::Error("cannot read secrets: " + secrets.status().ToString());
      return 2;
    }
    options.secrets = std::move(secrets).value();
  }
  farm::auth::AddSecretsFromEnvironment(&options.secrets);
  if (auto blobs = farm::s3::BlobStoreSettingsFromFlags(flags, &options.blob_store,
                                                        &options.http.index_redirect_ttl_s);
      !blobs.ok()) {
    std::cerr << blobs.message() << "\n";
    return 2;
  }
  options.github_api = flags.Get("github-api", options.github_api);
  options.hf_endpoint = flags.Get("hf-endpoint", options.hf_endpoint);
  options.publish_pending_hardware = flags.Has("publish-pending-hardware");
  options.publish_provenance = !flags.Has("publish-without-provenance");
  auto publish_interval = flags.GetInt("publish-interval-ms", 1000);
  if (!publish_interval.ok()) {
    std::cerr << publish_interval.status().message() << "\n";
    return 2;
  }
  options.publish_interval_ms = publish_interval.value();

  options.playbooks_dir =
      flags.Get("playbooks-dir", farm::hosts::HostManager::FindPlaybooksDir("/proc/self/exe"));
  std::string example_vars = options.playbooks_dir + "/inventories/example/group_vars";
  if (options.playbooks_dir.empty() || !std::filesystem::is_directory(example_vars)) {
    example_vars = "";
  }
  options.hosts_group_vars_dir = flags.Get("hosts-group-vars", example_vars);
  options.git.allow_ssh = flags.Has("git-ssh");
  if (flags.Has("git-ca-file")) {
    options.git.ca_file = std::filesystem::absolute(flags.Get("git-ca-file")).string();
  }
  auto git_timeout = flags.GetInt("git-timeout-s", 30);
  if (!git_timeout.ok() || *git_timeout < 1 || *git_timeout > 3600) {
    std::cerr << "--git-timeout-s must be a number of seconds from 1 to 3600\n";
    return 2;
  }
  options.git.timeout_ms = *git_timeout * 1000;
  options.git_resolve = !flags.Has("no-git-resolve");
  auto min_poll = flags.GetInt("watch-min-poll-s", 60);
  if (!min_poll.ok() || *min_poll < 1 || *min_poll > 86400) {
    std::cerr << "--watch-min-poll-s must be a number of seconds from 1 to 86400\n";
    return 2;
  }
  options.watch_min_poll_seconds = static_cast<int>(*min_poll);
  for (auto [flag, into] : {std::pair{"upstream-index", &options.upstream.indexes},
                            {"upstream-tree", &options.upstream.trees}}) {
    for (const std::string& item : flags.GetAll(flag)) {
      size_t eq = item.find('=');
      std::string url = eq == std::string::npos ? "" : item.substr(eq + 1);
      if (eq == 0 || (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)) {
        std::cerr << "--" << flag << " wants NAME=http(s)://..., got " << item << "\n";
        return 2;
      }
      (*into)[item.substr(0, eq)] = url;
    }
  }
  options.upstream_url = flags.Get("upstream-url");
  options.webhooks = flags.GetAll("webhook");
  options.notify.public_url = flags.Get("public-url");
  if (const std::string& url = options.notify.public_url;
      !url.empty() && !url.starts_with("https://") && !url.starts_with("http://")) {
    std::cerr << "--public-url wants an http(s) URL, got " << url << "\n";
    return 2;
  }
  options.http.public_url = options.notify.public_url;
  for (auto [name, into] : {std::pair{"webhook-interval-ms", &options.notify.interval_ms},
                            {"webhook-backoff-ms", &options.notify.backoff_base_ms}}) {
    auto value = flags.GetInt(name, *into);
    if (!value.ok() || *value < 1) {
      std::cerr << "--" << name << " must be a positive number of milliseconds\n";
      return 2;
    }
    *into = *value;
  }
  auto webhook_attempts = flags.GetInt("webhook-max-attempts", options.notify.max_attempts);
  if (!webhook_attempts.ok() || *webhook_attempts < 1 || *webhook_attempts > 100) {
    std::cerr << "--webhook-max-attempts must be a number from 1 to 100\n";
    return 2;
  }
  options.notify.max_attempts = static_cast<int>(*webhook_attempts);
  std::unique_ptr<farm::store::ActiveFarmdLock> active;
  if (farm::store::IsPostgresUrl(options.store)) {
    // A standby waits here, before any thread exists, with the stop signals unblocked so
    // that SIGTERM simply ends it; the lock is held until this process ends.
    pthread_sigmask(SIG_UNBLOCK, &stop, nullptr);
    auto lock = farm::store::ActiveFarmdLock::Acquire(options.store, [] {
      farm::log::Info("standby: another farmd is active on this database; waiting for it to end");
    });
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    if (!lock.ok()) {
      farm::log::Error("cannot start: " + lock.status().ToString());
      return 1;
    }
    farm::log::Info("active: holding the farmd lock of the database");
    active = std::move(lock).value();
  }
  auto server = farm::api::FarmServer::Start(options);
  if (!server.ok()) {
    farm::log::Error("cannot start: " + server.status().ToString());
    return 1;
  }
  // Wait for a stop signal; on PostgreSQL also look every 2 s that the lock's session
  // lives: once it is gone a standby may be active, so this farmd stops.
  int sig = -1;
  while (sig <= 0) {
    timespec every{.tv_sec = 2, .tv_nsec = 0};
    sig = sigtimedwait(&stop, nullptr, &every);
    if (sig <= 0 && active) {
      if (farm::Status held = active->Check(); !held.ok()) {
        farm::log::Error("lost the farmd lock of the database (" + held.ToString() +
                         "); stopping, as another farmd may be active now");
        server.value()->Shutdown();
        return 1;
      }
    }
  }
  farm::log::Info(std::string("received ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") +
                  ", shutting down");
  server.value()->Shutdown();
  return 0;
}
